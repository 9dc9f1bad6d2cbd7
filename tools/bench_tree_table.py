#!/usr/bin/env python3
"""Runs bench_tree once and prints README's distance table (medians of one run).

usage: tools/bench_tree_table.py [build/release/bench/bench_tree] [--repetitions N]
"""
import json
import os
import subprocess
import sys


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    binary = args[0] if args else "build/release/bench/bench_tree"
    reps = 5
    for a in sys.argv[1:]:
        if a.startswith("--repetitions="):
            reps = int(a.split("=", 1)[1])
    if not os.path.exists(binary):  # benchmarks are opt-in
        raise SystemExit("missing %s: cmake --preset release -DSYNATTN_BUILD_BENCH=ON && "
                         "cmake --build --preset release --target bench_tree" % binary)
    out = subprocess.run(
        [binary, "--benchmark_format=json", f"--benchmark_repetitions={reps}",
         "--benchmark_report_aggregates_only=true", "--benchmark_min_time=0.1"],
        check=True, capture_output=True, text=True).stdout
    medians = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        name = b["run_name"]  # BM_X/kind:K/n:N
        fn, kind, n = name.split("/")
        medians[(fn, int(kind.split(":")[1]), int(n.split(":")[1]))] = b["real_time"] * {
            "ns": 1e-3, "us": 1.0, "ms": 1e3}[b["time_unit"]]
    kinds = {0: "recursive (projective)", 3: "recursive (attachment order)", 1: "path-like (deep)",
             2: "EWT forest"}

    def fmt(us):
        return "—" if us is None else (f"{us:.2f}" if us < 100 else f"{us:,.0f}")

    print("| input | n | memset floor µs | synattn µs | × floor | BFS every word µs | parent walk µs | walk / synattn |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for kind in (0, 2, 3, 1):
        for n in (32, 64, 256, 1024, 4096):
            floor = medians.get(("BM_Memset", kind, n))
            ours = medians.get(("BM_Synattn", kind, n))
            bfs = medians.get(("BM_BfsEveryWord", kind, n))
            walk = medians.get(("BM_SeedParentWalk", kind, n))
            if ours is None:
                continue
            ratio = f"{ours / floor:.2f}" if floor else "—"
            speed = f"{walk / ours:,.0f}×" if walk else "—"
            print(f"| {kinds[kind]} | {n} | {fmt(floor)} | {fmt(ours)} | {ratio} | {fmt(bfs)} | {fmt(walk)} | {speed} |")


if __name__ == "__main__":
    main()
