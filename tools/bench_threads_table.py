#!/usr/bin/env python3
"""The default thread count against one thread, on an idle and on a busy
machine, with the busy-machine guard on and off (docs/guide.md, Threads).

Runs bench_attention's threads/ benchmarks (each iteration: the layer at one
thread, then at the default; bench/bench_attention.cpp, BM_ThreadRatio)
ROUNDS times per setting, interleaved, and prints per benchmark the median
of the default/one-thread ratios, as Markdown.

  cmake --preset release -B build/bench -DSYNATTN_BUILD_BENCH=ON
  cmake --build build/bench --target bench_attention
  /usr/bin/python3 tools/bench_threads_table.py [--bench build/bench/bench/bench_attention] [--rounds 2]
"""
import argparse
import json
import os
import statistics
import subprocess

SETTINGS = [("busy", "on"), ("busy", "off"), ("idle", "on"), ("idle", "off")]


def run(bench, machine, guard, min_time):
    env = dict(os.environ, SYNATTN_CONTENTION=guard)
    args = [bench, "--benchmark_filter=threads/", f"--benchmark_min_time={min_time}", "--benchmark_format=json"]
    if machine == "busy":
        args.append("--synattn_busy")
    out = subprocess.run(args, env=env, check=True, capture_output=True, text=True).stdout
    rows = {}
    for b in json.loads(out)["benchmarks"]:
        name = b["name"].replace("/manual_time", "").replace("busy/", "").replace("threads/", "")
        rows[name] = (b["ratio"], b["contended"])
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", default="build/bench/bench/bench_attention")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--min-time", type=float, default=0.5)
    a = p.parse_args()
    results = {}
    for _ in range(a.rounds):
        for setting in SETTINGS:
            for name, value in run(a.bench, *setting, a.min_time).items():
                results.setdefault(name, {}).setdefault(setting, []).append(value)
    print("| benchmark | " + " | ".join(f"{m}, guard {g}" for m, g in SETTINGS) + " |")
    print("|---" * (len(SETTINGS) + 1) + "|")
    for name, by_setting in results.items():
        cells = []
        for s in SETTINGS:
            ratio = statistics.median(r for r, _ in by_setting[s])
            caught = statistics.median(c for _, c in by_setting[s])
            cells.append(f"{ratio:.2f}x" + (f" ({caught:.0f} caught)" if s[1] == "on" and caught else ""))
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
