#!/usr/bin/env python3
"""The "Training across processes" table of docs/benchmarks.md.

Runs train_deprel alone and under mpirun (-np P, with and without
--no-overlap), the three in turn for --repetitions rounds so that a change in
the machine's load falls on all of them, and prints per configuration the
median (and range) of the training tokens/s and of rank 0's time spent
waiting for gradient reductions, from the JSON line each run appends.

    /usr/bin/python3 tools/bench_mpi_table.py --train-deprel build/release/examples/train_deprel --repetitions 7
"""
import argparse
import datetime
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import tempfile

# Open MPI settings for ranks that share cores with each other (and with
# other work): no binding, shared memory without the kernel's single copy
# (not available in every container), and yielding while waiting.
DEFAULT_MPIRUN = ("--bind-to none --mca btl self,vader --mca btl_vader_single_copy_mechanism none "
                  "--mca mpi_yield_when_idle 1")


def run_once(cmd, json_path):
    if os.path.exists(json_path):
        os.remove(json_path)
    env = dict(os.environ)
    if os.geteuid() == 0:  # containers often run as root, which mpirun refuses unless told
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"bench_mpi_table: {' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    with open(json_path) as f:
        lines = [l for l in f if l.strip()]
    if not lines:
        sys.exit(f"bench_mpi_table: {' '.join(cmd)} wrote no result to {json_path}")
    return json.loads(lines[-1])


def spread(values, fmt):
    return f"{fmt(statistics.median(values))} ({fmt(min(values))}–{fmt(max(values))})"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--train-deprel", required=True, help="the train_deprel program (built with MPI)")
    p.add_argument("--np", type=int, default=2, help="processes under mpirun")
    p.add_argument("--train-size", type=int, default=2000)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--threads", type=int, default=1, help="OpenMP threads per process")
    p.add_argument("--repetitions", type=int, default=7)
    p.add_argument("--mpirun-args", default=DEFAULT_MPIRUN)
    args = p.parse_args()
    if not os.access(args.train_deprel, os.X_OK):
        sys.exit(f"bench_mpi_table: {args.train_deprel} is not an executable")

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "run.jsonl")
        base = [args.train_deprel, "--train-size", str(args.train_size), "--variants", "shared", "--seeds", "1",
                "--epochs", str(args.epochs), "--threads", str(args.threads), "--json", out]
        mpirun = ["mpirun", "-np", str(args.np)] + shlex.split(args.mpirun_args)
        configs = [("1 process", base),
                   (f"{args.np} processes, overlap", mpirun + base),
                   (f"{args.np} processes, `--no-overlap`", mpirun + base + ["--no-overlap"])]
        started = datetime.datetime.now(datetime.timezone.utc)
        load_start = os.getloadavg()
        results = {label: [] for label, _ in configs}
        for _ in range(args.repetitions):
            for label, cmd in configs:
                results[label].append(run_once(cmd, out))
        load_end = os.getloadavg()
        ended = datetime.datetime.now(datetime.timezone.utc)

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    steps = math.ceil(args.train_size / 32) * args.epochs
    print(f"{started:%Y-%m-%d %H:%M}–{ended:%H:%M} UTC, {os.cpu_count()} CPUs, load average "
          f"{load_start[0]:.1f} at the start and {load_end[0]:.1f} at the end; commit {commit}; "
          f"{steps} steps of 32 sentences; medians (range) of {args.repetitions} alternating repetitions.")
    print("Command: /usr/bin/python3 tools/bench_mpi_table.py " + " ".join(shlex.quote(a) for a in sys.argv[1:]))
    print()
    print("| | training tokens/s | rank 0 waiting for reductions, per epoch |")
    print("|---|---|---|")
    for label, _ in configs:
        runs = results[label]
        tokens = spread([r["train_tokens_per_second"] for r in runs], lambda v: f"{v:,.0f}")
        if runs[0].get("processes", 1) == 1:
            wait = "—"
        else:
            waits = [r["reduce_wait_seconds"] / max(1, r["epochs_run"]) for r in runs]
            per_step = statistics.median(waits) / math.ceil(args.train_size / 32) * 1e3
            wait = spread(waits, lambda v: f"{v:.2f} s") + f": {per_step:.1f} ms per step"
        print(f"| {label} | {tokens} | {wait} |")


if __name__ == "__main__":
    main()
