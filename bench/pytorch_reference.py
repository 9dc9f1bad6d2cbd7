#!/usr/bin/env python3
"""Times the reference PyTorch SyntaxBiasedAttention on bench_attention's shapes and trees.

    build/release/bench/bench_attention --synattn_dump=/tmp/synattn_dist
    /usr/bin/python3 bench/pytorch_reference.py --dist-dir /tmp/synattn_dist [--threads 1,2]
    /usr/bin/python3 bench/pytorch_reference.py --dist-dir DIR --openblas-coretype default

The module is the plain PyTorch reference, kept as it was first written: q/k/v/out nn.Linear, an
nn.Embedding(max_distance + 1, 1) distance bias looked up at the clamped
distances, masked_fill of padding pairs (distance < 0) with -inf, softmax,
matmul. Its trees are the ones bench_attention uses: the distance blocks it
wrote with --synattn_dump (manifest.json names the shapes), so both sides see
the same EWT forests.

Each thread count runs in a child process whose environment sets
OPENBLAS_NUM_THREADS and OMP_NUM_THREADS (torch.set_num_threads does not reach
OpenBLAS in Debian's build), OMP_WAIT_POLICY=PASSIVE above one thread (else
ATen's spinning OpenMP threads starve OpenBLAS's), and whose OpenBLAS kernel is chosen by
--openblas-coretype: "default" unsets OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE
and lets OpenBLAS detect the CPU; a name (SkylakeX, Haswell, ...) forces that
kernel. OpenBLAS 0.3.21 does not know CPU models newer than it (Sapphire and
Emerald Rapids) and then falls back to its generic Prescott (SSE3) kernel,
several times slower, so a fair baseline forces SkylakeX there. Every child
prints the BLAS it loaded and the kernel OpenBLAS runs, and checks that kernel
against float64 before timing anything.

Timings: forward under torch.no_grad() (the cheapest forward PyTorch has; the
C++ side times its inference forward, infer(), which likewise keeps nothing
for a backward pass); forward+backward with
x.requires_grad, grads reset to None, out.backward(G). Per case: warm-up, then
--runs timed runs of enough iterations to last --min-time seconds each; the
median per-iteration time is reported. Before each case the child waits
(up to --quiet-wait seconds) until the machine's other processes leave the
cores idle, since it is shared.
"""
import argparse
import ctypes
import json
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


# --------------------------------------------------------------------------
# Machine state (no torch needed)
# --------------------------------------------------------------------------

def cpu_busy(interval=1.0):
    """Fraction of all cores busy over `interval` seconds, from /proc/stat."""
    def sample():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        idle = v[3] + (v[4] if len(v) > 4 else 0)
        return sum(v), idle
    t0, i0 = sample()
    time.sleep(interval)
    t1, i1 = sample()
    return 1.0 - (i1 - i0) / max(1, t1 - t0)


def wait_for_quiet(max_wait=120.0, busy_below=0.08, log=None):
    """Waits until the cores are idle (other helpers share them). Returns the
    busy fraction of the last sample (still high if max_wait ran out)."""
    start = time.time()
    busy = cpu_busy()
    while busy >= busy_below and time.time() - start < max_wait:
        if log:
            log("machine busy (%.0f%% of cores); waiting" % (100 * busy))
        time.sleep(2.0)
        busy = cpu_busy()
    return busy


def child_env(threads, coretype):
    env = dict(os.environ)
    env["OPENBLAS_NUM_THREADS"] = str(threads)
    env["OMP_NUM_THREADS"] = str(threads)
    if threads > 1:
        # ATen's OpenMP team and OpenBLAS's own pthreads take turns on the
        # same cores; libgomp's default spin-waiting between regions then
        # starves OpenBLAS (measured: 32x32x512x8 forward 30 ms -> 19 ms at 2
        # threads with PASSIVE). The baseline gets the better setting.
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    env.pop("OPENBLAS_L2_SIZE", None)
    if coretype == "default":
        env.pop("OPENBLAS_CORETYPE", None)
    else:
        env["OPENBLAS_CORETYPE"] = coretype
    return env


# --------------------------------------------------------------------------
# The reference module
# --------------------------------------------------------------------------

def make_module_class(torch):
    nn = torch.nn

    class SyntaxBiasedAttention(nn.Module):
        """The reference syntax-biased multi-head attention."""

        def __init__(self, d_model, heads, max_distance=10):
            super().__init__()
            assert d_model % heads == 0
            self.heads = heads
            self.dk = d_model // heads
            self.max_distance = max_distance
            self.q = nn.Linear(d_model, d_model)
            self.k = nn.Linear(d_model, d_model)
            self.v = nn.Linear(d_model, d_model)
            self.out = nn.Linear(d_model, d_model)
            self.distance_bias = nn.Embedding(max_distance + 1, 1)

        def forward(self, x, dist):
            # x: (B, n, d_model); dist: (B, n, n) int64, -1 on padding pairs
            B, n, d = x.shape
            q = self.q(x).view(B, n, self.heads, self.dk).transpose(1, 2)   # (B, h, n, dk)
            k = self.k(x).view(B, n, self.heads, self.dk).transpose(1, 2)
            v = self.v(x).view(B, n, self.heads, self.dk).transpose(1, 2)
            scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.dk)  # (B, h, n, n)
            bias = self.distance_bias(dist.clamp(0, self.max_distance)).squeeze(-1)  # (B, n, n)
            scores = scores + bias.unsqueeze(1)
            scores = scores.masked_fill((dist < 0).unsqueeze(1), float("-inf"))
            p = torch.softmax(scores, dim=-1)
            ctx = torch.matmul(p, v).transpose(1, 2).reshape(B, n, d)      # (B, n, d)
            return self.out(ctx)

    return SyntaxBiasedAttention


# --------------------------------------------------------------------------
# Child: one thread count
# --------------------------------------------------------------------------

def openblas_info():
    """Path, kernel (core name) and thread count of the OpenBLAS this process
    loaded, read through its own API; plus every BLAS-like library mapped."""
    libs = []
    with open("/proc/self/maps") as f:
        for line in f:
            p = line.split()[-1]
            if any(k in p for k in ("blas", "lapack", "mkl", "gomp", "omp")) and p not in libs:
                libs.append(p)
    info = {"mapped": libs}
    for p in libs:
        if "openblas" in os.path.basename(p) and "lapack" not in os.path.basename(p):
            try:
                lib = ctypes.CDLL(p)
                lib.openblas_get_corename.restype = ctypes.c_char_p
                lib.openblas_get_config.restype = ctypes.c_char_p
                info.update(openblas=p, core=lib.openblas_get_corename().decode(),
                            config=lib.openblas_get_config().decode(),
                            blas_threads=int(lib.openblas_get_num_threads()))
            except (OSError, AttributeError):
                pass
    return info


def reference_blas_refusal(torch):
    """Why this torch's times are not worth quoting, or None. Debian's torch is
    built against the generic libblas.so.3 (BLAS_INFO=generic), which runs the
    reference (netlib) BLAS unless an optimised one is installed: 20-30x
    slower at these shapes, a peer that flatters synattn (it happened twice:
    docs/benchmarks.md). SYNATTN_ALLOW_REFERENCE_BLAS=1 times it anyway."""
    if os.environ.get("SYNATTN_ALLOW_REFERENCE_BLAS") == "1":
        return None
    if not any("BLAS_INFO=generic" in l for l in torch.__config__.show().splitlines()):
        return None
    # The libblas.so.3 torch resolved (not LAPACK's: OpenBLAS's liblapack.so.3
    # can sit beside the reference libblas.so.3, which then does the products).
    blas = [os.path.realpath(p) for p in openblas_info()["mapped"] if os.path.basename(p).startswith("libblas.so")]
    if not blas or any(k in p for p in blas for k in ("openblas", "mkl", "blis", "atlas")):
        return None
    return ("PyTorch would run on the reference BLAS (%s), 20-30x slower than an optimised one: "
            "install OpenBLAS (SYNATTN_WITH_BENCH_EXTRAS=1 tools/install-deps.sh), or set "
            "SYNATTN_ALLOW_REFERENCE_BLAS=1 to time it anyway" % ", ".join(blas))


def check_kernel(torch, Module):
    """The float32 forward and backward against float64: a BLAS kernel that
    miscomputes on this CPU (the reason OPENBLAS_CORETYPE is sometimes forced)
    fails here instead of producing a timing."""
    import numpy as np
    torch.manual_seed(0)
    B, n, d, h = 3, 37, 96, 4
    m64 = Module(d, h).double()
    m32 = Module(d, h)
    m32.load_state_dict({k: v.float() for k, v in m64.state_dict().items()})
    rng = np.random.default_rng(0)
    dist = torch.tensor(rng.integers(-1, 14, size=(B, n, n)), dtype=torch.int64)
    dist[:, :, 0] = 0  # every row keeps a visible key
    x = torch.randn(B, n, d, dtype=torch.float64)
    G = torch.randn(B, n, d, dtype=torch.float64)
    worst = 0.0
    outs = []
    for m, dt in ((m64, torch.float64), (m32, torch.float32)):
        xi = x.to(dt).detach().clone().requires_grad_(True)
        out = m(xi, dist)
        out.backward(G.to(dt))
        outs.append((out.detach().double(), xi.grad.double(), m.q.weight.grad.double()))
    for a, b in zip(outs[0], outs[1]):
        worst = max(worst, float((a - b).abs().max() / a.abs().max()))
    return worst


def time_case(torch, Module, case, dist_dir, backward, runs, min_time, quiet_wait):
    torch.manual_seed(1)
    B, n, d, h = case["batch"], case["n"], case["d_model"], case["heads"]
    import numpy as np
    dist_np = np.load(os.path.join(dist_dir, case["dist"]))
    assert dist_np.shape == (B, n, n), (case["name"], dist_np.shape)
    dist = torch.from_numpy(dist_np.astype(np.int64))
    m = Module(d, h)
    x = torch.randn(B, n, d)
    G = torch.randn(B, n, d)
    params = list(m.parameters())

    if backward:
        x.requires_grad_(True)

        def step():
            for p in params:
                p.grad = None
            x.grad = None
            m(x, dist).backward(G)
    else:
        def step():
            with torch.no_grad():
                m(x, dist)

    for _ in range(3):
        step()
    t0 = time.perf_counter()
    step()
    one = max(time.perf_counter() - t0, 1e-6)
    iters = max(1, int(math.ceil(min_time / one)))
    threads = torch.get_num_threads()
    for attempt in range(3):
        busy = wait_for_quiet(quiet_wait)
        per_iter = []
        c0, w0 = time.process_time(), time.perf_counter()
        for _ in range(runs):
            t0 = time.perf_counter()
            for _ in range(iters):
                step()
            per_iter.append((time.perf_counter() - t0) / iters)
        # Process CPU time over wall time: at 1 thread, well below 1 means
        # another process had the core (at 2 threads PyTorch's own idle
        # threads lower it too, so it is only recorded there).
        util = (time.process_time() - c0) / max(1e-9, time.perf_counter() - w0) / threads
        if threads > 1 or util >= 0.9:
            break
        sys.stderr.write("  %s: cpu_util %.2f, another process had the core; again\n" % (case["name"], util))
    per_iter.sort()
    return {"shape": case["name"], "pass": "fwdbwd" if backward else "fwd",
            "ms": 1e3 * per_iter[len(per_iter) // 2], "runs_ms": [1e3 * t for t in per_iter],
            "iterations_per_run": iters, "busy_before": round(busy, 3), "cpu_util": round(util, 3)}


def run_child(args):
    import torch
    threads = args.threads_child
    torch.set_num_threads(threads)
    Module = make_module_class(torch)
    blas_info_line = [l.strip() for l in torch.__config__.show().splitlines() if "BLAS_INFO" in l]
    info = openblas_info()
    info.update(torch=torch.__version__, threads=threads, torch_threads=torch.get_num_threads(),
                OPENBLAS_CORETYPE=os.environ.get("OPENBLAS_CORETYPE"),
                OPENBLAS_NUM_THREADS=os.environ.get("OPENBLAS_NUM_THREADS"),
                torch_build=("BLAS_INFO=generic (libblas.so.3)" if any("BLAS_INFO=generic" in l for l in blas_info_line)
                             else "; ".join(blas_info_line)[:200]))
    sys.stderr.write("[pytorch %s, %d thread(s)] BLAS: %s, kernel %s, blas threads %s\n" % (
        torch.__version__, threads, info.get("openblas", "?"), info.get("core", "?"), info.get("blas_threads", "?")))
    refusal = reference_blas_refusal(torch)
    if refusal:
        sys.stderr.write(refusal + "\n")
        print(json.dumps({"info": info, "results": [], "error": refusal}))
        return 1
    err = check_kernel(torch, Module)
    info["float32_vs_float64_rel_err"] = err
    if not err < 1e-4:
        sys.stderr.write("float32 result differs from float64 by %.2e: the BLAS kernel is wrong on this CPU\n" % err)
        print(json.dumps({"info": info, "results": [], "error": "kernel check failed"}))
        return 1
    with open(os.path.join(args.dist_dir, "manifest.json")) as f:
        manifest = json.load(f)
    results = []
    for case in manifest["shapes"]:
        if args.only and case["name"] not in args.only:
            continue
        for backward in ((False,) if case["latency"] else (False, True)):
            r = time_case(torch, Module, case, args.dist_dir, backward, args.runs, args.min_time, args.quiet_wait)
            r["threads"] = threads
            sys.stderr.write("  %-14s %-6s %10.3f ms\n" % (r["shape"], r["pass"], r["ms"]))
            results.append(r)
    print(json.dumps({"info": info, "results": results}))
    return 0


# --------------------------------------------------------------------------
# Parent: one child per thread count
# --------------------------------------------------------------------------

def run_all(dist_dir, threads=(1, 2), coretype="SkylakeX", runs=7, min_time=0.2, quiet_wait=120.0, only=None,
            python=sys.executable):
    """{threads: {"info": ..., "results": [...]}} from one child per thread count."""
    out = {}
    for t in threads:
        cmd = [python, os.path.abspath(__file__), "--child", "--threads-child", str(t), "--dist-dir", dist_dir,
               "--runs", str(runs), "--min-time", str(min_time), "--quiet-wait", str(quiet_wait)]
        if only:
            cmd += ["--only"] + list(only)
        p = subprocess.run(cmd, env=child_env(t, coretype), stdout=subprocess.PIPE, text=True)
        lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
        if p.returncode != 0 or not lines:
            why = json.loads(lines[-1]).get("error", "") if lines else ""
            raise SystemExit("pytorch_reference child (threads %d, coretype %s) failed%s" % (t, coretype,
                                                                                           ": " + why if why else ""))
        out[t] = json.loads(lines[-1])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dist-dir", required=True, help="folder written by bench_attention --synattn_dump")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--openblas-coretype", default="SkylakeX",
                    help='OpenBLAS kernel to force, or "default" for its own CPU detection')
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--min-time", type=float, default=0.2, help="seconds per timed run")
    ap.add_argument("--quiet-wait", type=float, default=120.0, help="max seconds to wait for idle cores")
    ap.add_argument("--only", nargs="*", help="shape names (e.g. 32x32x512x8)")
    ap.add_argument("--json", help="write all results here")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--threads-child", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return run_child(args)
    threads = [int(t) for t in args.threads.split(",")]
    res = run_all(args.dist_dir, threads, args.openblas_coretype, args.runs, args.min_time, args.quiet_wait,
                  args.only)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    print("| shape (B×n×d×h) | pass | threads | PyTorch ms | kernel |")
    print("|---|---|---:|---:|---|")
    for t in threads:
        for r in res[t]["results"]:
            print("| %s | %s | %d | %.3f | %s |" % (r["shape"], r["pass"], t, r["ms"], res[t]["info"].get("core", "?")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
