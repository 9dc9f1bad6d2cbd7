#!/usr/bin/env python3
"""Runs bench_attention (Eigen and OpenBLAS builds, LibTorch peer) and the PyTorch reference; prints one Markdown table.

    cmake --preset release -DSYNATTN_BUILD_BENCH=ON && cmake --build --preset release --target bench_attention
    cmake --preset blas && cmake --build --preset blas --target bench_attention      (optional column)
    /usr/bin/python3 tools/bench_attention_table.py [--repetitions 5] [--threads 1,2] [--json all.json]

Every number in the table comes from this one invocation. Each case
(shape, threads) is measured --rounds times in a row, each round running the
Eigen build, the OpenBLAS build and PyTorch back to back; a column is the
median over rounds. C++: one round is the median of --repetitions
repetitions (Google Benchmark's median aggregate); "GEMM floor" and "x floor"
are the layer's own products timed interleaved with it in the same iterations,
and "% FMA peak" uses an FMA probe run between them (bench_attention.cpp
explains why). LibTorch: the same layer in LibTorch's C++ API, built into
bench_attention when find_package(Torch) succeeds (libtorch_peer.cpp), timed
in the same round (its layer_ms, the median iteration). PyTorch: the median of --pytorch-runs timed runs
(bench/pytorch_reference.py) on the same trees (the distance blocks
bench_attention --synattn_dump writes), with OpenBLAS forced to --coretype
(auto: SkylakeX on an AVX-512 CPU, because OpenBLAS 0.3.21 falls back to its
generic Prescott kernel on CPUs newer than itself; elsewhere OpenBLAS's own
detection); the last PyTorch column, measured once, uses OpenBLAS's
own CPU detection (OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset). The
OpenBLAS build of synattn and the LibTorch peer run with the same --coretype.

The machine is shared: before each measurement the script waits (up to
--quiet-wait seconds) for idle cores, and re-runs a measurement (up to twice)
whose CPU-time / wall-time ratio shows that another process took a core.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import pytorch_reference as ptref  # noqa: E402


def log(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def list_benchmarks(binary):
    out = subprocess.run([binary, "--benchmark_list_tests=true"], check=True, capture_output=True,
                         text=True).stdout
    return [l.strip() for l in out.splitlines() if l.strip()]


def run_one(binary, name, reps, env, extra, quiet_wait, min_util):
    """Median aggregate of one benchmark; retried while cpu_util shows interference."""
    best = None
    for attempt in range(3):
        ptref.wait_for_quiet(quiet_wait)
        # Names carry a suffix (/real_time, /manual_time) after ours.
        cmd = [binary, "--benchmark_filter=^%s(/|$)" % name, "--benchmark_format=json",
               "--benchmark_repetitions=%d" % reps, "--benchmark_report_aggregates_only=true"] + extra
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if p.returncode != 0:
            raise SystemExit("%s failed:\n%s" % (" ".join(cmd), p.stderr))
        doc = json.loads(p.stdout)
        med = [b for b in doc["benchmarks"] if b.get("aggregate_name") == "median"]
        if not med:
            raise SystemExit("no median for %s in %s" % (name, binary))
        b = med[0]
        b["_context"] = doc["context"]
        util = b.get("cpu_util", 1.0)
        if best is None or util > best.get("cpu_util", 1.0):
            best = b
        if util >= min_util:
            break
        log("  %s: cpu_util %.2f (another process had a core); again" % (name, util))
    return best


def to_ms(b):
    return b["real_time"] * {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b["time_unit"]]


def median(values):
    v = sorted(x for x in values if x is not None)
    if not v:
        return None
    m = len(v) // 2
    return v[m] if len(v) % 2 else 0.5 * (v[m - 1] + v[m])


SHAPE_ORDER = ["32x32x512x8", "16x128x512x8", "4x512x512x8", "1x1024x256x4", "1x16x256x4", "1x32x512x8"]


def cases_of(names, threads, shapes=None):
    """[(shape, threads, [passes])] in table order, from bench_attention's names."""
    found = {}
    for name in names:
        parts = name.split("/")
        if parts[0] in ("fwd", "fwdbwd"):
            t = int(parts[2].split(":")[1])
            if t in threads and (not shapes or parts[1] in shapes):
                found.setdefault((parts[1], t), []).append(parts[0])
    key = lambda st: (st[1], SHAPE_ORDER.index(st[0]) if st[0] in SHAPE_ORDER else 99, st[0])
    return [(s, t, sorted(found[(s, t)], key=lambda p: p != "fwd")) for s, t in sorted(found, key=key)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--release", default=os.path.join(ROOT, "build/release/bench/bench_attention"))
    ap.add_argument("--blas", default=os.path.join(ROOT, "build/blas/bench/bench_attention"),
                    help='the EIGEN_USE_BLAS build ("" to skip)')
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--coretype", default="auto",
                    help="OPENBLAS_CORETYPE for PyTorch, LibTorch and the BLAS build (auto: SkylakeX with AVX-512, "
                         "else OpenBLAS's detection; default: OpenBLAS's detection)")
    ap.add_argument("--no-pytorch", action="store_true")
    ap.add_argument("--no-default-kernel", action="store_true",
                    help="skip PyTorch with OpenBLAS's own CPU detection")
    ap.add_argument("--pytorch-runs", type=int, default=7)
    ap.add_argument("--quiet-wait", type=float, default=30.0,
                    help="max seconds to wait for idle cores before each measurement")
    ap.add_argument("--min-time", default=None, help="--benchmark_min_time for the C++ runs")
    ap.add_argument("--rounds", type=int, default=1,
                    help="measure every case this many times in a row (columns: median over rounds); "
                         "3 is steadier but takes ~3x the ~20 min of one round")
    ap.add_argument("--shapes", nargs="*", help="only these shapes (e.g. 32x32x512x8)")
    ap.add_argument("--json", help="write every raw number here")
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    if args.coretype == "auto":
        with open("/proc/cpuinfo") as f:
            args.coretype = "SkylakeX" if " avx512f" in f.read() else "default"
        log("OPENBLAS_CORETYPE: %s" % args.coretype)
    extra = ["--benchmark_min_time=%s" % args.min_time] if args.min_time else []

    for b in [args.release] + ([args.blas] if args.blas else []):
        if b == args.release and not os.path.exists(b):
            raise SystemExit("missing %s: cmake --preset release -DSYNATTN_BUILD_BENCH=ON && cmake --build --preset release "
                             "--target bench_attention" % b)
    have_blas = bool(args.blas) and os.path.exists(args.blas)
    if args.blas and not have_blas:
        log("no %s: the OpenBLAS column stays empty (cmake --preset blas && cmake --build --preset blas "
            "--target bench_attention)" % args.blas)

    with open("/proc/loadavg") as f:
        log("load average at start: " + " ".join(f.read().split()[:3]))
    dist_dir = tempfile.mkdtemp(prefix="synattn_dist_")
    subprocess.run([args.release, "--synattn_dump=" + dist_dir], check=True, stdout=subprocess.DEVNULL)

    env_eigen = dict(os.environ)
    env_blas = ptref.child_env(1, args.coretype)
    env_blas.pop("OPENBLAS_NUM_THREADS", None)  # the bench sets OpenBLAS's threads itself
    env_blas.pop("OMP_NUM_THREADS", None)
    names = list_benchmarks(args.release)

    # FMA peak first, on idle cores.
    peaks = {}
    widest = next((n.split("/")[1] for n in names if n.startswith("fma_peak/")), None)
    for t in threads:
        name = "fma_peak/%s/omp:%d" % (widest, t)
        if any(n.startswith(name + "/") or n == name for n in names):
            b = run_one(args.release, name, args.repetitions, env_eigen, extra, args.quiet_wait, 0.0)
            peaks[t] = b["GFLOPs"]  # the counter is already GFLOP/s
            log("%s: %.1f GFLOP/s" % (name, peaks[t]))

    # Case by case, every implementation back to back, --rounds times in a
    # row: the VM's speed drifts by tens of percent over minutes, so columns
    # measured far apart in time would not compare.
    runs = {"eigen": {}, "blas": {}, "libtorch": {}, "pt": {}, "pt_default": {}}
    ctx, blas_ctx, pt_info, torch_ctx = {}, {}, {}, {}
    def torch_env(t):
        """PyTorch's child environment (OMP_WAIT_POLICY=PASSIVE above one thread, the coretype), minus
        the thread counts: the peer sets at::set_num_threads and OpenBLAS's threads itself."""
        env = ptref.child_env(t, args.coretype)
        env.pop("OPENBLAS_NUM_THREADS", None)
        env.pop("OMP_NUM_THREADS", None)
        return env
    env_torch = torch_env(1)
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable

    def pytorch(store, coretype, shape, t, nruns):
        res = ptref.run_all(dist_dir, [t], coretype, runs=nruns, quiet_wait=args.quiet_wait, only=[shape],
                            python=python)[t]
        pt_info[(coretype, t)] = res["info"]
        for x in res["results"]:
            runs[store].setdefault((x["pass"], shape, t), []).append(x["ms"])
            log("[pytorch %s] %s/%s/omp:%d %.3f ms" % (coretype, x["pass"], shape, t, x["ms"]))

    for shape, t, passes in cases_of(names, threads, args.shapes):
        for rnd in range(args.rounds):
            for p in passes:
                name = "%s/%s/omp:%d" % (p, shape, t)
                b = run_one(args.release, name, args.repetitions, env_eigen, extra, args.quiet_wait, 0.9)
                ctx = b["_context"]
                runs["eigen"].setdefault((p, shape, t), []).append(b)
                log("[eigen] %-26s %9.3f ms  floor %9.3f ms  x%.3f  util %.2f" % (
                    name, to_ms(b), b["gemm_ms"], b["ratio_to_gemm"], b.get("cpu_util", 0)))
                if "libtorch/" + name in names or any(n.startswith("libtorch/" + name + "/") for n in names):
                    b = run_one(args.release, "libtorch/" + name, args.repetitions, torch_env(t), extra, args.quiet_wait,
                                0.9 if t == 1 else 0.0)
                    torch_ctx = b["_context"]
                    runs["libtorch"].setdefault((p, shape, t), []).append(b)
                    log("[libtorch] %-26s %9.3f ms  util %.2f" % (name, b["layer_ms"], b.get("cpu_util", 0)))
                if have_blas:
                    b = run_one(args.blas, name, args.repetitions, env_blas, extra, args.quiet_wait, 0.9)
                    blas_ctx = b["_context"]
                    runs["blas"].setdefault((p, shape, t), []).append(b)
                    log("[blas]  %-26s %9.3f ms  floor %9.3f ms  x%.3f  util %.2f" % (
                        name, to_ms(b), b["gemm_ms"], b["ratio_to_gemm"], b.get("cpu_util", 0)))
            if not args.no_pytorch:
                pytorch("pt", args.coretype, shape, t, args.pytorch_runs)
        # The default-kernel column is context, not a target: one short measurement.
        if not args.no_pytorch and not args.no_default_kernel:
            pytorch("pt_default", "default", shape, t, 3)

    def merged(lst):
        """Median over rounds of every numeric field of the C++ aggregates."""
        out = dict(lst[0])
        for k, v in lst[0].items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out[k] = median([b[k] for b in lst])
        return out
    eigen = {k: merged(v) for k, v in runs["eigen"].items()}
    blas = {k: merged(v) for k, v in runs["blas"].items()}
    libtorch = {k: median([b["layer_ms"] for b in v]) for k, v in runs["libtorch"].items()}
    pt = {k: median(v) for k, v in runs["pt"].items()}
    pt_default = {k: median(v) for k, v in runs["pt_default"].items()}

    # ---- table ----
    def f(v, digits=None):
        if v is None:
            return "—"
        if digits is None:
            digits = 3 if v < 1 else (2 if v < 100 else 1)
        return "%.*f" % (digits, v)

    lines = []
    lines.append("| shape B×n×d×h | thr | pass | synattn ms | GEMM floor ms | × floor | synattn+OpenBLAS ms "
                 "| × floor (BLAS) | LibTorch ms | PyTorch ms | speedup vs LibTorch | speedup vs PyTorch (Eigen / BLAS) "
                 "| PyTorch, default kernel ms | GFLOP/s | % FMA peak |")
    lines.append("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    order = [(p, shape, t) for shape, t, passes in cases_of(names, threads, args.shapes) for p in passes
             if (p, shape, t) in eigen]
    for key in order:
        p, shape, t = key
        e = eigen[key]
        b = blas.get(key)
        ms = to_ms(e)
        bms = to_ms(b) if b else None
        ptms = pt.get(key)
        sp_e = ptms / ms if ptms else None
        sp_b = ptms / bms if (ptms and bms) else None
        ltms = libtorch.get(key)
        gflops = e["GFLOPs"]
        lines.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s | %s | %s |" % (
            shape.replace("x", "×"), t, "fwd+bwd" if p == "fwdbwd" else "fwd", f(ms), f(e["gemm_ms"]),
            f(e["ratio_to_gemm"], 2), f(bms), f(b["ratio_to_gemm"], 2) if b else "—", f(ltms), f(ptms),
            (f(ltms / ms, 2) + "×") if ltms else "—",
            (f(sp_e, 2) + "×") if sp_e else "—", (f(sp_b, 2) + "×") if sp_b else "—",
            f(pt_default.get(key)), f(gflops, 1), f(e["pct_of_peak"], 0)))
    print("\n".join(lines))
    print()
    print("FMA peak (fp32, %s kernel), measured at the start: %s; %% FMA peak uses the peak probed between "
          "the layer's own iterations (median %s)" % (widest, ", ".join(
              "%.0f GFLOP/s at %d thread%s" % (v, t, "s" if t > 1 else "") for t, v in sorted(peaks.items())),
              ", ".join("%.0f at %d thread%s" % (median([e["fma_peak_GFLOPs"] for k, e in eigen.items() if k[2] == t]),
                                                 t, "s" if t > 1 else "") for t in sorted(peaks))))
    print("CPU: %s" % ctx.get("cpu", "? (a bench_attention without machine.hpp)"))
    print("Eigen build: %s; BLAS build: %s" % (
        ctx.get("gemm", "?") + ", " + ctx.get("eigen_simd", "?"), blas_ctx.get("gemm", "—")))
    if torch_ctx:
        print("LibTorch peer: %s (OPENBLAS_CORETYPE=%s; the core and thread count as read when the program started)" % (
            torch_ctx.get("libtorch", "?"), env_torch.get("OPENBLAS_CORETYPE")))
        labels = sorted({b.get("label", "") for v in runs["libtorch"].values() for b in v})
        for l in labels:
            print("LibTorch peer while timed: %s" % l)
    for (ct, t), info in sorted(pt_info.items(), key=lambda kv: (kv[0][0] == "default", kv[0][1])):
        print("PyTorch %s, %d thread(s): %s kernel %s (OPENBLAS_CORETYPE=%s), blas threads %s, float32 check %.1e" % (
            info.get("torch"), t, info.get("openblas", "?"), info.get("core", "?"), info.get("OPENBLAS_CORETYPE"),
            info.get("blas_threads"), info.get("float32_vs_float64_rel_err", float("nan"))))

    # ---- targets (1 thread) ----
    print()
    print("Targets (1 thread):")

    def verdict(ok):
        return "met" if ok else "NOT met"
    train = SHAPE_ORDER[:4]
    ratios = [(k, eigen[k]["ratio_to_gemm"]) for k in order if k[2] == 1]
    if ratios:
        worst = max(ratios, key=lambda kv: kv[1])
        print("- layer ≤ 1.15× its own GEMMs on every shape: %s (worst %.2f× at %s %s)" % (
            verdict(worst[1] <= 1.15), worst[1], worst[0][1], worst[0][0]))
    if blas and pt:
        rs = [(s, pt.get(("fwdbwd", s, 1)), blas.get(("fwdbwd", s, 1))) for s in train]
        rs = [(s, p_, to_ms(b_)) for s, p_, b_ in rs if p_ and b_]
        if rs:
            print("- with BLAS, fwd+bwd at least as fast as PyTorch on every shape: %s (%s)" % (
                verdict(all(b_ <= p_ for _, p_, b_ in rs)),
                ", ".join("%s %.2f×" % (s, p_ / b_) for s, p_, b_ in rs)))
    if pt:
        def sp(pass_, s):
            k = (pass_, s, 1)
            return pt[k] / to_ms(eigen[k]) if (k in pt and k in eigen) else None
        for pass_ in ("fwd", "fwdbwd"):
            a = sp(pass_, "32x32x512x8")
            if a:
                print("- Eigen GEMM, %s, within 10%% of PyTorch at n=32: %s (speedup %.2f×)" % (
                    pass_, verdict(a >= 1 / 1.10), a))
            bs = [(s, sp(pass_, s)) for s in ("16x128x512x8", "4x512x512x8", "1x1024x256x4")]
            bs = [(s, v) for s, v in bs if v]
            if bs:
                print("- Eigen GEMM, %s, faster than PyTorch from n=128 on: %s (%s)" % (
                    pass_, verdict(all(v > 1 for _, v in bs)), ", ".join("%s %.2f×" % kv for kv in bs)))
            c = sp(pass_, "1x1024x256x4")
            if c:
                print("- Eigen GEMM, %s, ≥1.5× faster on 1×1024×256×4: %s (%.2f×)" % (pass_, verdict(c >= 1.5), c))
        d = sp("fwd", "1x16x256x4")
        if d:
            print("- single-sentence latency 1×16×256×4 ≥ 2× faster than PyTorch: %s (%.2f×; %.1f µs vs %.1f µs)" % (
                verdict(d >= 2), d, 1e3 * to_ms(eigen[("fwd", "1x16x256x4", 1)]), 1e3 * pt[("fwd", "1x16x256x4", 1)]))

    if args.json:
        def keyed(d):
            return {"%s/%s/omp:%d" % k: v for k, v in d.items()}
        with open(args.json, "w") as fh:
            json.dump({"eigen": keyed(eigen), "blas": keyed(blas), "libtorch": keyed(libtorch), "pytorch": keyed(pt),
                       "rounds": {k: keyed(v) for k, v in runs.items()},
                       "pytorch_default_kernel": keyed(pt_default), "fma_peak": peaks,
                       "pytorch_info": {"%s/%d" % k: v for k, v in pt_info.items()}}, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
