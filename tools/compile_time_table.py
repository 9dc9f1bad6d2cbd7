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

  /usr/bin/python3 tools/compile_time_table.py [--cxx g++] [--rounds 3]
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TU = os.path.join(ROOT, "bench", "compile_time_tu.cpp")
MODES = [("header-only", []), ("compiled (`SYNATTN_COMPILED`)", ["-DSYNATTN_COMPILED"])]
ARCHES = [("default", []), ("-march=native", ["-march=native"])]


def compile_once(cxx, flags, out):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    subprocess.run([cxx, "-std=c++17", "-O2", "-fopenmp", "-I" + os.path.join(ROOT, "include"),
                    "-I/usr/include/eigen3", *flags, "-c", TU, "-o", out], check=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cxx", default="g++")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if shutil.which(args.cxx) is None:
        raise SystemExit(f"compile_time_table: no compiler '{args.cxx}' on PATH")
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "tu.o")
        for _ in range(args.rounds):
            for arch, arch_flags in ARCHES:
                for mode, mode_flags in MODES:
                    results.setdefault((arch, mode), []).append(compile_once(args.cxx, arch_flags + mode_flags, out))
    version = subprocess.run([args.cxx, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    print(f"{version}; {args.rounds} rounds, medians; load average before the last round "
          f"{os.getloadavg()[0]:.1f}\n")
    print("| -march | mode | CPU s | wall s |")
    print("| --- | --- | ---: | ---: |")
    for (arch, mode), runs in results.items():
        cpu = statistics.median(r[0] for r in runs)
        wall = statistics.median(r[1] for r in runs)
        print(f"| {arch} | {mode} | {cpu:.1f} | {wall:.1f} |")


if __name__ == "__main__":
    main()
