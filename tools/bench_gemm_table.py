#!/usr/bin/env python3
"""The GEMM-against-Eigen table of docs/benchmarks.md, from bench/bench_gemm.

Each --run names a bench_gemm program (and optionally the kernel set to run
it with, through SYNATTN_KERNEL_ISA); the runs go one after another, each
interleaving Eigen's product and the dispatched GEMM on the same shapes, so
read each run's ratio, not times across runs. For each run the table has
Eigen's median, the GEMM's median and their ratio (above 1: the GEMM is
faster); below it, per run, how the GEMM did inside and outside the rule
given with --rule (the thresholds of kernels::gemm_rule).

    /usr/bin/python3 tools/bench_gemm_table.py --cpu 1 \\
        --run 'AVX2 GEMM=build/release/bench/bench_gemm:avx2' \\
        --run 'AVX-512 GEMM=build/release/bench/bench_gemm:avx512' --rule 32,131072
"""
import argparse
import csv
import datetime
import io
import os
import platform
import re
import shlex
import subprocess
import sys

NAME = re.compile(r"^(eigen|gemm)/(float|double)/(NN|NT|TN|TT)/(\d+)x(\d+)x(\d+)_median$")
TO_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}


def parse_run(spec):
    if "=" not in spec:
        raise argparse.ArgumentTypeError(f"--run {spec!r}: expected LABEL=PROGRAM[:ISA]")
    label, rest = spec.split("=", 1)
    program, _, isa = rest.partition(":")
    if not os.access(program, os.X_OK):
        raise argparse.ArgumentTypeError(f"--run {spec!r}: {program} is not an executable")
    return label, program, isa


def parse_rule(text):
    try:
        side, volume = (int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--rule {text!r}: expected MIN_SIDE,MIN_VOLUME")
    return side, volume


def measure(program, isa, args):
    """{(scalar, op, m, n, k): {"eigen": us, "gemm": us}} from one run of `program`."""
    cmd = [program, "--benchmark_filter=^(eigen|gemm)/", f"--benchmark_min_time={args.min_time}",
           f"--benchmark_repetitions={args.repetitions}", "--benchmark_report_aggregates_only=true",
           "--benchmark_format=csv"]
    if args.cpu is not None:
        cmd = ["taskset", "-c", str(args.cpu)] + cmd
    env = dict(os.environ)
    if isa:
        env["SYNATTN_KERNEL_ISA"] = isa
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    start = out.find("name,")
    if start < 0:
        sys.exit(f"bench_gemm_table: {program} printed no CSV header")
    times = {}
    for row in csv.DictReader(io.StringIO(out[start:])):
        m = NAME.match(row["name"])
        if not m:
            continue
        path, scalar, op, *mnk = m.groups()
        key = (scalar, op) + tuple(int(v) for v in mnk)
        times.setdefault(key, {})[path] = float(row["real_time"]) * TO_US[row["time_unit"]]
    if not times:
        sys.exit(f"bench_gemm_table: {program} measured no eigen/ or gemm/ benchmark")
    return times


def fmt(us):
    return f"{us:.3g}"


def inside(rule, m, n, k):
    return m >= rule[0] and n >= rule[0] and m * n * k >= rule[1]


def summary(label, rule, rows):
    lines = []
    for where in (True, False):
        ratios = [r for (m, n, k), r in rows if inside(rule, m, n, k) == where]
        if not ratios:
            continue
        won = sum(r > 1 for r in ratios)
        lines.append(f"{label}, {'inside' if where else 'outside'} the rule: the GEMM faster in {won} of "
                     f"{len(ratios)}, Eigen / GEMM {min(ratios):.2f}–{max(ratios):.2f}×")
    return lines


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", action="append", type=parse_run, required=True,
                   help="LABEL=PROGRAM[:ISA]: a bench_gemm program and the kernel set to run it with")
    p.add_argument("--rule", type=parse_rule, help="MIN_SIDE,MIN_VOLUME: the rule to sum up against")
    p.add_argument("--cpu", type=int, help="pin the runs to this core (taskset)")
    p.add_argument("--min-time", type=float, default=0.2)
    p.add_argument("--repetitions", type=int, default=3)
    args = p.parse_args()

    started = datetime.datetime.now(datetime.timezone.utc)
    runs = [(label, measure(program, isa, args)) for label, program, isa in args.run]
    keys = sorted(set.intersection(*(set(t) for _, t in runs)),
                  key=lambda k: (k[2] * k[3] * k[4], k[2:], k[1], k[0] != "float"))  # by m n k, float first
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                           text=True).stdout.strip()
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    print(f"Machine: {cpu}, {os.cpu_count()} CPUs; {started:%Y-%m-%d %H:%M} UTC; commit {commit}"
          f"{' with uncommitted changes' if dirty else ''}; medians of {args.repetitions}, one thread"
          f"{f', pinned to CPU {args.cpu}' if args.cpu is not None else ''}.")
    print("Command: /usr/bin/python3 tools/bench_gemm_table.py " + " ".join(shlex.quote(a) for a in sys.argv[1:]))
    print()
    head = "| shape m×n×k op | scalar |"
    rule_line = "|---|---|"
    for label, _ in runs:
        head += f" Eigen µs | {label} µs | Eigen / {label} |"
        rule_line += "---:|---:|---:|"
    print(head)
    print(rule_line)
    ratios = {label: [] for label, _ in runs}
    for key in keys:
        scalar, op, m, n, k = key
        line = f"| {m}x{n}x{k} {op} | {scalar} |"
        for label, times in runs:
            e, g = times[key].get("eigen"), times[key].get("gemm")
            if e is None or g is None:
                line += " — | — | — |"
                continue
            ratios[label].append(((m, n, k), e / g))
            line += f" {fmt(e)} | {fmt(g)} | {e / g:.2f}× |"
        print(line)
    if args.rule:
        print()
        for label, _ in runs:
            for text in summary(label, args.rule, ratios[label]):
                print(f"- {text}")


if __name__ == "__main__":
    main()
