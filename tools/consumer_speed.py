#!/usr/bin/python3
"""Consumer speed: what a project using an installed synattn gets, against our benchmark build and PyTorch.

    /usr/bin/python3 tools/consumer_speed.py [--rounds 3] [--threads 1] [--json out.json]

One command, from a checkout. It
  1. installs synattn into a scratch prefix (a configure with install rules
     only, CMake Release, like a user's `cmake --install`);
  2. builds tools/consumer_speed/ (consumer_bench.cpp, find_package(synattn))
     twice against that prefix: with CMake's Release defaults and nothing
     else ("default flags"), and linking synattn::native as README advises;
  3. builds bench_attention in the release preset (-O3 -march=native; with
     -DSYNATTN_BUILD_BENCH=ON), the build our README's benchmark tables come
     from, which also carries the LibTorch peer when LibTorch is found;
  4. runs, for every case, each implementation in turn, --rounds times in a
     row (alternating, so the shared VM's drift hits all columns alike), on the
     same EWT trees (bench_attention --synattn_dump) and prints one Markdown
     table of the medians over rounds, then whether two targets are met: the
     README consumer within 1.1x of the benchmark build, and the default-flags
     consumer never slower than PyTorch on the n >= 128 training shapes.

Cases, at --threads (default 1): fwd 32x32x512x8, fwd+bwd 16x128x512x8, the
single-sentence latency fwd 1x16x256x4, and the other n >= 128 fwd+bwd shapes
bench_attention has (4x512x512x8, 1x1024x256x4).

Each C++ number is a median of individually timed iterations: consumer_bench's
over its --runs runs, bench_attention's `layer_ms` (median iteration) as the
median over --repetitions repetitions. PyTorch is bench/pytorch_reference.py
(its seed-design module, the median of its timed runs) with OpenBLAS's own
CPU detection unless --coretype names a kernel.
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

CASES = [("fwd", "32x32x512x8"), ("fwdbwd", "16x128x512x8"), ("fwd", "1x16x256x4"),
         ("fwdbwd", "4x512x512x8"), ("fwdbwd", "1x1024x256x4")]
TRAINING_N128 = ["16x128x512x8", "4x512x512x8", "1x1024x256x4"]


def log(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def sh(cmd, **kw):
    log("+ " + " ".join(cmd))
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise SystemExit("failed (%d): %s\n%s\n%s" % (p.returncode, " ".join(cmd), p.stdout[-4000:], p.stderr[-4000:]))
    return p


def median(values):
    v = sorted(x for x in values if x is not None)
    if not v:
        return None
    m = len(v) // 2
    return v[m] if len(v) % 2 else 0.5 * (v[m - 1] + v[m])


def build(args):
    work = os.path.abspath(args.work)
    prefix = os.path.join(work, "prefix")
    gen = ["-G", "Ninja"]
    nice = ["nice", "-n", "5"]
    # 1. install synattn, as a user would (no tests, examples or benchmarks).
    sh(["cmake", "-S", ROOT, "-B", os.path.join(work, "synattn-build")] + gen +
       ["-DCMAKE_BUILD_TYPE=Release", "-DSYNATTN_BUILD_TESTS=OFF", "-DSYNATTN_BUILD_EXAMPLES=OFF",
        "-DSYNATTN_BUILD_BENCH=OFF", "-DSYNATTN_INSTALL=ON", "-DCMAKE_INSTALL_PREFIX=" + prefix])
    sh(["cmake", "--install", os.path.join(work, "synattn-build")])
    # 2. the consumer, twice.
    exes = {}
    for name, native in (("default", "OFF"), ("native", "ON")):
        b = os.path.join(work, "consumer-" + name)
        sh(["cmake", "-S", os.path.join(ROOT, "tools", "consumer_speed"), "-B", b] + gen +
           ["-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_PREFIX_PATH=" + prefix, "-DCONSUMER_NATIVE=" + native,
            "-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF"])
        sh(nice + ["cmake", "--build", b])
        exes[name] = os.path.join(b, "consumer_bench")
    # 3. our benchmark build.
    if not args.no_bench_build:
        sh(["cmake", "--preset", "release", "-DSYNATTN_BUILD_BENCH=ON"], cwd=ROOT)
        sh(nice + ["cmake", "--build", os.path.join(ROOT, "build", "release"), "--target", "bench_attention"], cwd=ROOT)
    exes["bench"] = args.bench
    return exes


def run_consumer(exe, case, p, threads, args):
    ptref.wait_for_quiet(args.quiet_wait)
    cmd = [exe, "--dist", os.path.join(args.dist_dir, case["dist"]), "--batch", str(case["batch"]),
           "--n", str(case["n"]), "--d-model", str(case["d_model"]), "--heads", str(case["heads"]),
           "--pass", p, "--threads", str(threads), "--runs", str(args.runs), "--min-time", str(args.min_time)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("%s failed:\n%s" % (" ".join(cmd), r.stderr))
    out = json.loads([l for l in r.stdout.splitlines() if l.startswith("{")][-1])
    out["stderr"] = r.stderr
    return out


def run_bench(exe, name, args):
    """bench_attention's median aggregate of one benchmark (layer_ms: median iteration)."""
    ptref.wait_for_quiet(args.quiet_wait)
    cmd = [exe, "--benchmark_filter=^%s(/|$)" % name, "--benchmark_format=json",
           "--benchmark_repetitions=%d" % args.repetitions, "--benchmark_report_aggregates_only=true"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("%s failed:\n%s" % (" ".join(cmd), r.stderr))
    doc = json.loads(r.stdout)
    med = [b for b in doc["benchmarks"] if b.get("aggregate_name") == "median"]
    if not med:
        return None, doc.get("context", {})
    return med[0], doc.get("context", {})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "consumer-speed"),
                    help="scratch folder (install prefix, consumer builds)")
    ap.add_argument("--bench", default=os.path.join(ROOT, "build", "release", "bench", "bench_attention"))
    ap.add_argument("--no-bench-build", action="store_true", help="use --bench as it is")
    ap.add_argument("--no-build", action="store_true", help="reuse the consumer builds in --work")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=7, help="timed runs per consumer measurement")
    ap.add_argument("--min-time", type=float, default=0.2, help="seconds per timed run")
    ap.add_argument("--repetitions", type=int, default=5, help="bench_attention repetitions per measurement")
    ap.add_argument("--coretype", default="default", help='OPENBLAS_CORETYPE for PyTorch ("default": detect)')
    ap.add_argument("--no-pytorch", action="store_true")
    ap.add_argument("--quiet-wait", type=float, default=10.0, help="max seconds to wait for idle cores")
    ap.add_argument("--cases", nargs="*", help="only these cases, e.g. fwd/1x16x256x4 fwdbwd/16x128x512x8")
    ap.add_argument("--json", help="write every raw number here")
    args = ap.parse_args()
    global CASES
    if args.cases:
        CASES = [tuple(c.split("/")) for c in args.cases]
        unknown = [c for c in CASES if len(c) != 2 or c[0] not in ("fwd", "fwdbwd")]
        if unknown:
            raise SystemExit("bad --cases %s (PASS/SHAPE, PASS fwd or fwdbwd)" % unknown)

    if args.no_build:
        w = os.path.abspath(args.work)
        exes = {"default": os.path.join(w, "consumer-default", "consumer_bench"),
                "native": os.path.join(w, "consumer-native", "consumer_bench"), "bench": args.bench}
    else:
        exes = build(args)
    args.dist_dir = tempfile.mkdtemp(prefix="synattn_consumer_speed_")
    sh([exes["bench"], "--synattn_dump=" + args.dist_dir])
    with open(os.path.join(args.dist_dir, "manifest.json")) as f:
        manifest = {c["name"]: c for c in json.load(f)["shapes"]}
    for c in manifest.values():
        if any(l != c["n"] for l in c["lengths"]):
            raise SystemExit("%s has padding; consumer_bench assumes full lengths" % c["name"])
    listed = subprocess.run([exes["bench"], "--benchmark_list_tests=true"], capture_output=True, text=True,
                            check=True).stdout.split()
    have_libtorch = any(n.startswith("libtorch/") for n in listed)
    with open("/proc/loadavg") as f:
        log("load average at start: " + " ".join(f.read().split()[:3]))

    t = args.threads
    runs = {k: {} for k in ("default", "native", "bench", "libtorch", "pytorch")}
    info = {}
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    shapes = []
    for _, s in CASES:
        if s not in shapes:
            shapes.append(s)
    for shape in shapes:
        passes = [p for p, s in CASES if s == shape]
        case = manifest[shape]
        for rnd in range(args.rounds):
            for p in passes:
                key = (p, shape)
                for impl in ("default", "native"):
                    r = run_consumer(exes[impl], case, p, t, args)
                    runs[impl].setdefault(key, []).append(r["ms"])
                    info[impl] = r["build_info"]
                    info[impl + "_notice"] = "synattn: this build is compiled for" in r["stderr"]
                    log("[%s] %s/%s/omp:%d %.3f ms (util %.2f)" % (impl, p, shape, t, r["ms"], r["cpu_util"]))
                b, ctx = run_bench(exes["bench"], "%s/%s/omp:%d" % (p, shape, t), args)
                runs["bench"].setdefault(key, []).append(b["layer_ms"])
                info["bench"] = ctx.get("eigen_simd", "?")
                log("[bench] %s/%s/omp:%d %.3f ms" % (p, shape, t, b["layer_ms"]))
                if have_libtorch:
                    b, ctx = run_bench(exes["bench"], "libtorch/%s/%s/omp:%d" % (p, shape, t), args)
                    runs["libtorch"].setdefault(key, []).append(b["layer_ms"])
                    info["libtorch"] = ctx.get("libtorch", "?")
                    log("[libtorch] %s/%s/omp:%d %.3f ms" % (p, shape, t, b["layer_ms"]))
            if not args.no_pytorch:
                res = ptref.run_all(args.dist_dir, [t], args.coretype, runs=args.runs, min_time=args.min_time,
                                    quiet_wait=args.quiet_wait, only=[shape], python=python)[t]
                info["pytorch"] = res["info"]
                for x in res["results"]:
                    if x["pass"] in passes:
                        runs["pytorch"].setdefault((x["pass"], shape), []).append(x["ms"])
                        log("[pytorch] %s/%s/omp:%d %.3f ms" % (x["pass"], shape, t, x["ms"]))

    med = {k: {key: median(v) for key, v in d.items()} for k, d in runs.items()}

    def f(v):
        if v is None:
            return "—"
        return "%.*f" % (3 if v < 1 else (2 if v < 100 else 1), v)

    def ratio(a, b):
        return ("%.2f×" % (a / b)) if (a and b) else "—"

    print("| pass | shape B×n×d×h | default-flags consumer ms | README consumer (synattn::native) ms "
          "| benchmark build ms | LibTorch ms | PyTorch ms | native / benchmark | default / PyTorch |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for p, shape in CASES:
        key = (p, shape)
        d, n, b = med["default"].get(key), med["native"].get(key), med["bench"].get(key)
        lt, pt = med["libtorch"].get(key), med["pytorch"].get(key)
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            "fwd+bwd" if p == "fwdbwd" else "fwd", shape.replace("x", "×"), f(d), f(n), f(b), f(lt), f(pt),
            ratio(n, b), ratio(d, pt)))
    print()
    print("%d thread(s); medians over %d alternating rounds (%s)." % (
        t, args.rounds, "consumer: median iteration of %d runs ≥ %.1f s; benchmark build and LibTorch: bench_attention's "
        "median iteration, median of %d repetitions" % (args.runs, args.min_time, args.repetitions)))
    print("- default-flags consumer: %s; SIMD notice printed: %s" % (info.get("default"), info.get("default_notice")))
    print("- README consumer: %s; SIMD notice printed: %s" % (info.get("native"), info.get("native_notice")))
    print("- benchmark build (release preset): Eigen SIMD %s" % info.get("bench"))
    if have_libtorch:
        print("- LibTorch: %s" % info.get("libtorch"))
    if "pytorch" in info:
        pi = info["pytorch"]
        print("- PyTorch %s: %s, OpenBLAS kernel %s (OPENBLAS_CORETYPE=%s)" % (
            pi.get("torch"), pi.get("openblas", "?"), pi.get("core", "?"), pi.get("OPENBLAS_CORETYPE")))
    print()
    print("Targets (%d thread):" % t)
    worst = [(s_, med["native"].get((p_, s_)), med["bench"].get((p_, s_))) for p_, s_ in CASES]
    worst = [(s_, a / b) for s_, a, b in worst if a and b]
    if worst:
        w = max(worst, key=lambda kv: kv[1])
        print("- README consumer within 1.1× of the benchmark build: %s (worst %.2f× at %s)" % (
            "met" if w[1] <= 1.1 else "NOT met", w[1], w[0]))
    sl = [(s_, med["default"].get(("fwdbwd", s_)), med["pytorch"].get(("fwdbwd", s_))) for s_ in TRAINING_N128]
    sl = [(s_, a, b) for s_, a, b in sl if a and b]
    if sl:
        print("- default flags never slower than PyTorch on the n ≥ 128 training shapes: %s (%s)" % (
            "met" if all(a <= b for _, a, b in sl) else "NOT met",
            ", ".join("%s %.2f×" % (s_, a / b) for s_, a, b in sl)))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"runs": {k: {"%s/%s" % key: v for key, v in d.items()} for k, d in runs.items()},
                       "info": info, "threads": t}, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
