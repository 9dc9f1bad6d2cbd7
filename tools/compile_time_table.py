#!/usr/bin/env python3
"""CPU seconds to compile one translation unit that uses the layer
(bench/compile_time_tu.cpp: a float and a double SyntaxBiasedAttention,
constructed, run forward, backward and in inference), header-only and in
compiled mode (SYNATTN_COMPILED: the layer's code comes from synattn::compiled),
at the compiler's default -march (what a consumer gets) and with -march=native.

Each compile runs ROUNDS times, the modes interleaved; the table gives the
median of user + system CPU time of the compiler (the compiler's own clock,
less disturbed by other work on a shared machine than wall time, which is
given too), as Markdown.

With --baseline REV the same file is compiled against the headers of the
commit REV too (taken with `git archive`, the file itself from REV as well),
interleaved with the working tree's, so a change is measured before and after
in one run on the same machine. --cxx takes a comma-separated list.

  /usr/bin/python3 tools/compile_time_table.py [--cxx g++,clang++] [--rounds 3] [--baseline REV]
"""
import argparse
import io
import os
import resource
import shutil
import statistics
import subprocess
import tarfile
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TU = os.path.join(ROOT, "bench", "compile_time_tu.cpp")
MODES = [("header-only", []), ("compiled (`SYNATTN_COMPILED`)", ["-DSYNATTN_COMPILED"])]
ARCHES = [("default", []), ("-march=native", ["-march=native"])]


def compile_once(cxx, tree, flags, out):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    subprocess.run([cxx, "-std=c++17", "-O2", "-fopenmp", "-I" + os.path.join(tree, "include"),
                    "-I/usr/include/eigen3", *flags, "-c", os.path.join(tree, "bench", "compile_time_tu.cpp"),
                    "-o", out], check=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def extract(rev, into):
    """The headers and the timed file of commit `rev`, under `into`."""
    archive = subprocess.run(["git", "-C", ROOT, "archive", rev, "include", "bench/compile_time_tu.cpp"],
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into)
    return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", rev], capture_output=True, text=True,
                          check=True).stdout.strip()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cxx", default="g++")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", metavar="REV", help="also compile against the headers of commit REV")
    args = parser.parse_args()
    compilers = args.cxx.split(",")
    for cxx in compilers:
        if shutil.which(cxx) is None:
            raise SystemExit(f"compile_time_table: no compiler '{cxx}' on PATH")
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        trees = [("working tree", ROOT)]
        if args.baseline:
            base = os.path.join(scratch, "baseline")
            os.makedirs(base)
            trees.insert(0, (extract(args.baseline, base), base))
        out = os.path.join(scratch, "tu.o")
        for _ in range(args.rounds):
            for cxx in compilers:
                for arch, arch_flags in ARCHES:
                    for mode, mode_flags in MODES:
                        for tree_name, tree in trees:
                            key = (cxx, arch, mode, tree_name)
                            results.setdefault(key, []).append(compile_once(cxx, tree, arch_flags + mode_flags, out))
    for cxx in compilers:
        version = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
        print(f"{cxx}: {version}")
    print(f"{args.rounds} rounds, medians; load average at the end {os.getloadavg()[0]:.1f}\n")
    print("| compiler | -march | mode | headers | CPU s | wall s |")
    print("| --- | --- | --- | --- | ---: | ---: |")
    for (cxx, arch, mode, tree_name), runs in results.items():
        cpu = statistics.median(r[0] for r in runs)
        wall = statistics.median(r[1] for r in runs)
        print(f"| {cxx} | {arch} | {mode} | {tree_name} | {cpu:.1f} | {wall:.1f} |")

if __name__ == "__main__":
    main()
