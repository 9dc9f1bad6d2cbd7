#!/usr/bin/env python3
"""The Python benchmark's table (docs/benchmarks.md, "synattn from Python") from bench/bench_python.py's JSON.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/bench_python.py --json /tmp/py.jsonl
    python3 tools/bench_python_table.py /tmp/py.jsonl          # the last run in the file

Columns: the C++ layer's own forward + backward (its loop in C++), the same through synattn.torch, their
ratio (the binding's overhead: the issue asks <= 1.10 at the large shapes, <= 1.5 at 1x16x256x4), plain
PyTorch, and how much faster the module is; then the packed document's time and peak memory against
PyTorch's dense path. A --training-step run gives the DEPREL training step's table instead: the step and
where its time goes, with plain-PyTorch attention and with synattn.torch's.
"""
import json
import sys


def fmt(ms):
    return f"{ms:,.3f}" if ms < 1 else (f"{ms:,.2f}" if ms < 100 else f"{ms:,.1f}")


def training_table(t):
    """bench_python.py --training-step: the step and its parts, ms per step (medians of the rounds)."""
    print(f"DEPREL recipe, variant {t['variant']}, N = {t['train_size']}: {t['batches']} batches of the first "
          f"epoch, {t['tokens']:,} labelled tokens; ms per step.\n")
    rows = [("whole step", "step"), ("embedding (+ positions, dropout)", "embedding"), ("attention (2 layers)", "attention"),
            ("LayerNorms, FFN, residuals (2 layers)", "ffn_norms"), ("classifier + loss", "head"),
            ("Adam step", "optimiser"), ("rest (autograd, Python, zero_grad)", "other")]
    p, s = t["pytorch"], t["synattn"]
    print("| part | plain PyTorch ms | share | synattn.torch attention ms | share |")
    print("|---|---:|---:|---:|---:|")
    for label, k in rows:
        print(f"| {label} | {fmt(p[k])} | {100 * p[k] / p['step']:.0f} % | {fmt(s[k])} | "
              f"{100 * s[k] / s['step']:.0f} % |")
    print(f"\nSpeed-up of the whole step: {t['speedup']:.2f}×; of the attention: "
          f"{p['attention'] / s['attention']:.2f}×.")


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    with open(argv[1]) as f:
        runs = [json.loads(line) for line in f if line.strip()]
    if not runs:
        sys.exit(f"{argv[1]}: no results")
    r = runs[-1]
    print(f"Date {r['date']}, commit {r['commit']}, torch {r['torch']}, CPU {r['cpu']}.\n")
    if "training_step" in r:
        training_table(r["training_step"])
        return 0
    print("| shape B×n×d×h | C++ layer ms | synattn.torch ms | overhead | plain PyTorch ms | vs PyTorch |")
    print("|---|---:|---:|---:|---:|---:|")
    for s in r["shapes"]:
        shape = "×".join(str(v) for v in s["shape"])
        print(f"| {shape} | {fmt(s['cpp_ms'])} | {fmt(s['module_ms'])} | {s['overhead']:.2f}× | "
              f"{fmt(s['torch_ms'])} | {s['vs_torch']:.2f}× |")
    if "document_synattn" in r:
        d, t = r["document_synattn"], r["document_torch"]
        print()
        print("| packed document | words | synattn.torch ms | peak MB | PyTorch dense ms | peak MB | speed-up | memory |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        print(f"| n = {d['n']:,}, window {d['window']} | {d['words']:,} | {fmt(d['layer_ms'])} | "
              f"{d['layer_peak_MB']:,.0f} | {fmt(t['layer_ms'])} | {t['layer_peak_MB']:,.0f} | "
              f"{r['document_speedup']:.1f}× | {r['document_memory_ratio']:.3f}× |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
