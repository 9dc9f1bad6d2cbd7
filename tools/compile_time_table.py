#!/usr/bin/env python3
"""CPU seconds to compile the translation units a user of the library writes,
header-only and in compiled mode (the code comes from synattn::compiled), at
the compiler's default -march (what a consumer gets) and with -march=native:

  layer          bench/compile_time_tu.cpp: a float and a double
                 SyntaxBiasedAttention, constructed, run forward, backward
                 and in inference (compiled mode: -DSYNATTN_COMPILED)
  layer+parser   bench/compile_time_parser_tu.cpp: raw text parsed with the
                 shipped models (parse::Pipeline), the trees' buckets into a
                 float layer (compiled mode: -DSYNATTN_COMPILED
                 -DSYNATTN_COMPILED_PIPELINE, what linking synattn::compiled
                 built with nlohmann-json defines)

Each compile runs ROUNDS times, the modes interleaved; the table gives the
median of user + system CPU time of the compiler (the compiler's own clock,
less disturbed by other work on a shared machine than wall time, which is
given too), and the object file's code (`size`'s text), as Markdown.

With --baseline REV the same files are compiled against the headers of the
commit REV too (taken with `git archive`; the timed files are the working
tree's, so both sides compile the same program), interleaved with the working
tree's, so a change is measured before and after in one run on the same
machine. The working tree's headers are copied at the start, so editing them
during a run does not mix versions. --cxx, --tu, --arch and --opt take
comma-separated lists: --opt=-fsyntax-only,-O0,-O1,-O2,-O3 shows what the
front end alone costs and what each level of optimisation adds.

  /usr/bin/python3 tools/compile_time_table.py [--cxx g++,clang++] [--rounds 3] [--baseline REV]
      [--tu layer,layer+parser] [--arch default,native] [--opt -O3]
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
# name -> (file, compiled mode's flags)
TUS = {
    "layer": ("compile_time_tu.cpp", ["-DSYNATTN_COMPILED"]),
    "layer+parser": ("compile_time_parser_tu.cpp", ["-DSYNATTN_COMPILED", "-DSYNATTN_COMPILED_PIPELINE"]),
}
MODES = ["header-only", "compiled"]
ARCHES = {"default": [], "native": ["-march=native"]}


def compile_once(cxx, tree, tu, flags, opt, out):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    subprocess.run([cxx, "-std=c++17", opt, "-fopenmp", "-I" + os.path.join(tree, "include"),
                    "-I/usr/include/eigen3", *flags, "-c", os.path.join(ROOT, "bench", tu),
                    "-o", out], check=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    code = None  # -fsyntax-only writes no object
    if os.path.exists(out):
        code = int(subprocess.run(["size", out], capture_output=True, text=True, check=True)
                   .stdout.splitlines()[1].split()[0])
        os.remove(out)
    return cpu, wall, code


def extract(rev, into):
    """The headers of commit `rev`, under `into`."""
    archive = subprocess.run(["git", "-C", ROOT, "archive", rev, "include"],
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
    parser.add_argument("--tu", default="layer,layer+parser", help="comma-separated: " + ", ".join(TUS))
    parser.add_argument("--arch", default="default,native", help="comma-separated: " + ", ".join(ARCHES))
    parser.add_argument("--opt", default="-O3", help="comma-separated optimisation flags (default -O3)")
    args = parser.parse_args()
    compilers = args.cxx.split(",")
    tus = args.tu.split(",")
    arches = args.arch.split(",")
    opts = args.opt.split(",")
    for name in tus:
        if name not in TUS:
            raise SystemExit(f"compile_time_table: --tu {name}: expected one of {', '.join(TUS)}")
    for name in arches:
        if name not in ARCHES:
            raise SystemExit(f"compile_time_table: --arch {name}: expected one of {', '.join(ARCHES)}")
    for cxx in compilers:
        if shutil.which(cxx) is None:
            raise SystemExit(f"compile_time_table: no compiler '{cxx}' on PATH")
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        work = os.path.join(scratch, "work")
        shutil.copytree(os.path.join(ROOT, "include"), os.path.join(work, "include"))
        trees = [("working tree", work)]
        if args.baseline:
            base = os.path.join(scratch, "baseline")
            os.makedirs(base)
            trees.insert(0, (extract(args.baseline, base), base))
        out = os.path.join(scratch, "tu.o")
        for _ in range(args.rounds):
            for cxx in compilers:
                for tu in tus:
                    for arch in arches:
                        for mode in MODES:
                            flags = ARCHES[arch] + (TUS[tu][1] if mode == "compiled" else [])
                            for opt in opts:
                                for tree_name, tree in trees:
                                    key = (cxx, tu, arch, mode, opt, tree_name)
                                    results.setdefault(key, []).append(
                                        compile_once(cxx, tree, TUS[tu][0], flags, opt, out))
    for cxx in compilers:
        version = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
        print(f"{cxx}: {version}")
    print(f"{args.rounds} rounds, medians; load average at the end {os.getloadavg()[0]:.1f}\n")
    print("| compiler | program | -march | mode | flag | headers | CPU s | wall s | code KB |")
    print("| --- | --- | --- | --- | --- | --- | ---: | ---: | ---: |")
    for (cxx, tu, arch, mode, opt, tree_name), runs in results.items():
        cpu = statistics.median(r[0] for r in runs)
        wall = statistics.median(r[1] for r in runs)
        code = runs[-1][2]
        kb = "–" if code is None else f"{code / 1000:,.0f}"
        print(f"| {cxx} | {tu} | {arch} | {mode} | {opt} | {tree_name} | {cpu:.1f} | {wall:.1f} | {kb} |")

if __name__ == "__main__":
    main()
