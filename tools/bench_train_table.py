#!/usr/bin/env python3
"""Training-throughput table: synattn (bench/bench_train.cpp) against the
PyTorch twin (bench/pytorch_train_reference.py throughput), same models and
shapes, each case in its own process (so peak RSS is that case's), in one run.

    cmake --preset release -DSYNATTN_BUILD_BENCH=ON && cmake --build --preset release --target bench_train
    /usr/bin/python3 tools/bench_train_table.py [--bench build/release/bench/bench_train] [--threads 1,2]

Prints a Markdown table: per (model, variant, threads) the median step time
and training tokens/s of each side, the speedup, and each side's peak RSS.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODELS = {"d128": 0, "d256": 1}
VARIANTS = {"none": 0, "shared": 1}


def synattn_case(bench, model, variant, threads, repetitions):
    name = f"BM_TrainStep/model:{MODELS[model]}/bias:{VARIANTS[variant]}/threads:{threads}/"
    out = subprocess.run([bench, f"--benchmark_filter=^{name}", f"--benchmark_repetitions={repetitions}",
                          "--benchmark_format=json"], check=True, capture_output=True, text=True).stdout
    runs = [b for b in json.loads(out)["benchmarks"] if b.get("run_type") == "iteration"]
    if not runs:
        raise SystemExit(f"bench_train ran no case matching {name}")
    times = sorted(b["real_time"] / 1e3 for b in runs)  # ms -> s
    rss = max(b["peak_rss_MiB"] for b in runs)
    med = times[len(times) // 2]
    return {"step": med, "tokens": 32 * 64 / med, "rss": rss}


def pytorch_case(python, model, variant, threads, quiet_wait):
    out = subprocess.run([python, os.path.join(ROOT, "bench", "pytorch_train_reference.py"), "throughput",
                          "--threads", str(threads), "--models", model, "--variants", variant,
                          "--quiet-wait", str(quiet_wait)], check=True, capture_output=True, text=True).stdout
    line = [l for l in out.splitlines() if l.startswith("{")][-1]
    j = json.loads(line)
    return {"step": j["step_seconds_median"], "tokens": j["tokens_per_second"], "rss": j["peak_rss_mib"],
            "torch": j.get("torch", "?")}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default=os.path.join(ROOT, "build", "release", "bench", "bench_train"))
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--quiet-wait", type=float, default=10)
    args = ap.parse_args()
    rows = []
    torch_version = "?"
    for threads in [int(t) for t in args.threads.split(",")]:
        for model in MODELS:
            for variant in VARIANTS:
                s = synattn_case(args.bench, model, variant, threads, args.repetitions)
                p = pytorch_case(args.python, model, variant, threads, args.quiet_wait)
                torch_version = p["torch"]
                rows.append((model, variant, threads, s, p))
                print(f"# {model} {variant} {threads} thread(s): synattn {s['tokens']:.0f} tok/s, "
                      f"PyTorch {p['tokens']:.0f} tok/s", file=sys.stderr, flush=True)
    print("| model | variant | threads | synattn ms/step | synattn tokens/s | PyTorch ms/step | PyTorch tokens/s "
          "| speedup | synattn peak RSS MiB | PyTorch peak RSS MiB |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for model, variant, threads, s, p in rows:
        print(f"| {model} | {variant} | {threads} | {1e3 * s['step']:.1f} | {s['tokens']:,.0f} | "
              f"{1e3 * p['step']:.1f} | {p['tokens']:,.0f} | {p['step'] / s['step']:.2f}x | "
              f"{s['rss']:.0f} | {p['rss']:.0f} |")
    print(f"\nPyTorch {torch_version}; batch 32 x n 64 tokens, 2 pre-norm layers, dropout 0.1, forward + backward "
          "+ Adam step; medians.")


if __name__ == "__main__":
    main()
