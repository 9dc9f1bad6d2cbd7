#!/usr/bin/env python3
"""PyTorch's n^2 path on bench_attention's long documents: one layer's forward + backward.

    /usr/bin/python3 bench/pytorch_documents.py --n 4096 --window 1 [--runs 3] [--json FILE]

The document is the one bench_attention's documents/ benchmarks use: the
first EWT train sentences, whole, while they fit n tokens (the rest padding).
PyTorch has no packed input, so the layer is the reference module
(bench/pytorch_reference.py: q/k/v/out nn.Linear, d_model 512, 8 heads, an
nn.Embedding distance bias that gets a gradient, the masked pairs -inf,
softmax, P V) on the dense n x n distance block; backward by autograd. The
distances are random (time and memory do not depend on them); the mask is
the document's sentence window. One thread:
OMP_NUM_THREADS and OPENBLAS_NUM_THREADS are set to 1 before torch loads,
and OPENBLAS_CORETYPE to SkylakeX unless set (OpenBLAS 0.3.21 falls back to
a generic SSE3 kernel on CPUs newer than it; see bench/pytorch_reference.py).

Prints (and with --json writes) the median forward + backward time and the
peak resident memory of the first pass (VmHWM, reset first) over what was
resident before it (the inputs).
"""
import argparse
import json
import os
import pathlib
import statistics
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_CORETYPE", "SkylakeX")

import torch  # noqa: E402  (after the environment above)

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from pytorch_reference import make_module_class, reference_blas_refusal  # noqa: E402  (the reference module)

ROOT = pathlib.Path(__file__).resolve().parent.parent


def sentence_lengths(path):
    """Words per sentence of a CoNLL-U file (multiword and empty tokens skipped)."""
    lengths, words = [], 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                if words:
                    lengths.append(words)
                words = 0
            elif not line.startswith("#"):
                first = line.split("\t", 1)[0]
                if first.isdigit():
                    words += 1
    if words:
        lengths.append(words)
    return lengths


def resident_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def resident_peak_mb():
    """VmHWM: the peak resident memory since reset_resident_peak()."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def reset_resident_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--window", type=int, default=1)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--conllu", default=str(ROOT / "data/ud/UD_English-EWT/en_ewt-ud-train.conllu"))
    ap.add_argument("--json", help="write the result here")
    args = ap.parse_args()
    refusal = reference_blas_refusal(torch)
    if refusal:
        sys.exit(refusal)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    n, d, heads = args.n, 512, 8
    sentence_of, words = [], 0
    for s, length in enumerate(sentence_lengths(args.conllu)):
        if words + length > n:
            break
        sentence_of += [s] * length
        words += length
    sid = torch.full((n,), -10**6, dtype=torch.long)
    sid[:words] = torch.tensor(sentence_of)
    real = torch.arange(n) < words
    visible = ((sid[:, None] - sid[None, :]).abs() <= args.window) & real[:, None] & real[None, :]
    # The reference module's distances: clamped into the 11-entry embedding, -1
    # masking the pair; a padding row sees itself only (no NaN rows).
    dist = torch.randint(0, 11, (1, n, n)).masked_fill(~visible.unsqueeze(0), -1)
    padding = torch.arange(words, n)
    dist[0, padding, padding] = 0
    module = make_module_class(torch)(d, heads)
    x = torch.randn(1, n, d, requires_grad=True)
    dout = torch.randn(1, n, d)

    def step():
        for p in module.parameters():
            p.grad = None
        x.grad = None
        module(x, dist).backward(dout)

    reset_resident_peak()
    before = resident_mb()
    step()
    peak = resident_peak_mb() - before
    times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    result = {"n": n, "window": args.window, "words": words, "torch": torch.__version__,
              "layer_ms": statistics.median(times) * 1e3, "layer_peak_MB": peak,
              "live_pairs_pct": 100.0 * float(visible.sum()) / (n * n)}
    print(json.dumps(result))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
