#!/usr/bin/env python3
"""synattn from Python, side by side in one run, one thread: the C++ layer's own forward + backward, the
same through synattn.torch (the binding's overhead), and plain PyTorch (the layer written in torch ops,
bench/pytorch_reference.py: nn.Linear projections, an nn.Embedding distance bias that gets a gradient,
-inf masking, softmax, P V; backward by autograd).

    PYTHONPATH=build/py/python /usr/bin/python3 bench/bench_python.py [--runs 5] [--json FILE]

Shapes (batch, n, d_model, heads): (16, 128, 512, 8), (4, 512, 512, 8), (1, 1024, 256, 4), (1, 16, 256, 4),
float32, linear(10) buckets of random trees (time does not depend on the tree). Then a packed document of
n = 4,096 (the first EWT train sentences that fit, as bench_attention's documents/ cases) with a sentence
window of 1: synattn.torch with packed= (the fused, linear-memory path) against PyTorch's dense n x n path
(bench/pytorch_documents.py, run as is); each in a child process of its own, so each peak resident memory
(VmHWM, reset before the pass, over what was resident before it) is its own.

--training-step instead times a whole training step of the DEPREL recipe's model (2 layers, d_model 128,
4 heads; bench/pytorch_train_reference.py) on the recipe's first-epoch batches of EWT train (--train-size,
--variant), with its plain-PyTorch attention and with synattn.torch's (examples/python/train_deprel.py), and
where the step's time goes: embedding, attention, the rest of the layers, classifier and loss, each forward
+ backward timed alone on the inputs the step gave it, and Adam's step.

--function-floor times what no binding can avoid at 1x16x256x4: an empty torch.autograd.Function with the
module's inputs and outputs (x and 10 Parameters in, their gradients out) in the same step, and with x alone.

Per case: a warm-up, then --runs rounds, each of enough steps to last --min-time seconds per contender,
the contenders interleaved round by round; every step is timed alone and the median step is reported. OMP_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1, torch.set_num_threads(1), and OpenBLAS's kernel
forced to SkylakeX unless OPENBLAS_CORETYPE is set (bench/pytorch_reference.py says why). Before each case
the run waits (up to --quiet-wait s) until the machine's other processes leave the cores idle.
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_CORETYPE", "SkylakeX")

import numpy as np  # noqa: E402
import torch  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from pytorch_documents import reset_resident_peak, resident_mb, resident_peak_mb, sentence_lengths  # noqa: E402
from pytorch_reference import cpu_busy, make_module_class, reference_blas_refusal, wait_for_quiet  # noqa: E402

try:
    import synattn  # noqa: E402
    import synattn.torch as st  # noqa: E402
except ImportError as e:  # --function-floor needs torch alone
    synattn = st = None
    SYNATTN_IMPORT_ERROR = e

SHAPES = [(16, 128, 512, 8), (4, 512, 512, 8), (1, 1024, 256, 4), (1, 16, 256, 4)]


def random_trees(lengths, rng):
    trees = []
    for n in lengths:
        order = rng.permutation(n)
        heads = [-1] * n
        for k in range(1, n):
            heads[order[k]] = int(order[rng.integers(0, k)])
        trees.append(synattn.Tree(heads))
    return trees


def shape_case(shape, runs, min_time):
    B, n, d, h = shape
    rng = np.random.default_rng(0)
    bucketing = synattn.Bucketing.linear(10)
    batch = synattn.bucket_batch(random_trees([n] * B, rng), bucketing)
    layer = st.SyntaxBiasedAttention(d, h, bucketing=bucketing)
    with torch.no_grad():
        layer.table.normal_(0, 0.5)
    x = torch.randn(B, n, d, requires_grad=True)
    G = torch.randn(B, n, d)
    buckets = torch.from_numpy(batch.buckets)
    lengths = batch.lengths.tolist()

    # The C++ layer alone: the same kernel and parameters, the loop in C++.
    kernel = layer._kernel(torch.float32).kernel
    arrays = [p.detach().numpy() for p in layer._params()]
    xa, ga = x.detach().numpy().reshape(B * n, d), G.numpy().reshape(B * n, d)
    bflat = batch.buckets.reshape(B * n, n)

    def module_step():
        for p in layer.parameters():
            p.grad = None
        x.grad = None
        layer(x, lengths, buckets).backward(G)

    ref = make_module_class(torch)(d, h)
    dist = torch.from_numpy(np.stack([t.distances() for t in random_trees([n] * B, rng)]).astype(np.int64))

    def torch_step():
        for p in ref.parameters():
            p.grad = None
        x.grad = None
        ref(x, dist).backward(G)

    # Steps per contender: enough for min_time, measured once after a warm-up of each. Every step is timed
    # on its own and the medians compared: on a shared machine a mean is mostly its outliers (a preempted
    # step costs milliseconds), and they fall on whichever contender was running.
    kernel.time_forward_backward(arrays, xa, lengths, bflat, None, ga, 2)
    once = kernel.time_forward_backward(arrays, xa, lengths, bflat, None, ga, 1)[0]
    iters = max(3, int(min_time / max(once, 1e-6)))
    module_step()
    torch_step()
    t0 = time.perf_counter()
    torch_step()
    torch_iters = max(3, int(min_time / max(time.perf_counter() - t0, 1e-6)))

    def steps(step, k):
        out = []
        for _ in range(k):
            t0 = time.perf_counter()
            step()
            out.append(time.perf_counter() - t0)
        return out

    # The three interleaved run by run, so that a load from elsewhere falls on all of them alike.
    cpp, py, pt = [], [], []
    for _ in range(runs):
        cpp += kernel.time_forward_backward(arrays, xa, lengths, bflat, None, ga, iters)
        py += steps(module_step, iters)
        pt += steps(torch_step, torch_iters)
    cpp, py, pt = statistics.median(cpp), statistics.median(py), statistics.median(pt)
    return {"shape": list(shape), "cpp_ms": cpp * 1e3, "module_ms": py * 1e3, "torch_ms": pt * 1e3,
            "overhead": py / cpp, "vs_torch": pt / py}


def document_child(n, window, runs):
    """synattn.torch on the packed document: median forward + backward and the first pass's peak memory."""
    torch.manual_seed(0)
    lengths, words, trees = [], 0, []
    conllu = ROOT / "data/ud/UD_English-EWT/en_ewt-ud-train.conllu"
    sentences = synattn.read_conllu(conllu)
    for s in sentences:
        if words + len(s) > n:
            break
        trees.append(s.tree())
        words += len(s)
    bucketing = synattn.Bucketing.linear(10)
    packed = synattn.pack_documents([trees], bucketing, window=window)
    layer = st.SyntaxBiasedAttention(512, 8, bucketing=bucketing)
    x = torch.randn(1, n, 512, requires_grad=True)
    dout = torch.randn(1, n, 512)
    # The packed input has `words` positions: the rest of the n is not there at all (the dense path pads).
    xw = x[:, :words]

    def step():
        for p in layer.parameters():
            p.grad = None
        x.grad = None
        layer(xw, packed=packed).backward(dout[:, :words])

    reset_resident_peak()
    before = resident_mb()
    step()
    peak = resident_peak_mb() - before
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return {"n": n, "window": window, "words": words, "layer_ms": statistics.median(times) * 1e3,
            "layer_peak_MB": peak}


def training_step_case(variant, train_size, runs):
    """A whole training step of the DEPREL recipe's model (bench/pytorch_train_reference.py: 2 pre-norm layers,
    d_model 128, 4 heads, FFN 256, dropout 0.1, Adam) on the recipe's own first-epoch batches of EWT train,
    with its plain-PyTorch attention and with synattn.torch's (examples/python/train_deprel.py): the step's
    median time and its parts, each part's forward + backward timed alone on the inputs the step gave it."""
    sys.path.insert(0, str(ROOT / "examples" / "python"))
    import pytorch_train_reference as recipe
    import train_deprel as example
    torch.manual_seed(0)
    train_all = recipe.read_conllu(os.path.join(recipe.EWT, "en_ewt-ud-train.conllu"))
    subset = recipe.select_training_subset([len(s[0]) for s in train_all], train_size, recipe.DEFAULT_DATA_SEED)
    train = [train_all[i] for i in subset]
    vocab, singleton = recipe.build_vocabulary(train)
    label_names = recipe.build_labels(train_all)
    tr = recipe.Prepared(train, vocab, singleton, {l: i for i, l in enumerate(label_names)}, variant)
    batches = [tr.batch(torch, b, dropout=(1, 0)) for b in recipe.epoch_batches(tr.lengths, 1, 0)]
    tokens = sum(int((labels != recipe.IGNORE).sum()) for *_, labels in batches)
    classes = len(label_names)
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=recipe.IGNORE)
    contenders = {}
    for name, make in (("pytorch", recipe.make_model), ("synattn", example.make_model)):
        model = make(torch, len(vocab) + 2, classes, variant)
        model.train()
        opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-3)
        contenders[name] = (model, opt)

    def step(model, opt, batch):
        ids, buckets, lengths, labels = batch
        logits = model(ids, buckets, lengths)
        loss = loss_fn(logits.reshape(-1, classes), labels.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    def captured(model, batch):
        """Every layer's and every attention's inputs in one forward pass of the step, and the last layer's
        output."""
        layer_in, attn_in, hooks = [], [], []
        for layer in model.layers:
            hooks.append(layer.register_forward_pre_hook(lambda m, a: layer_in.append(a)))
            hooks.append(layer.attn.register_forward_pre_hook(lambda m, a: attn_in.append(a)))
        last = []
        hooks.append(model.layers[-1].register_forward_hook(lambda m, a, out: last.append(out)))
        ids, buckets, lengths, labels = batch
        model(ids, buckets, lengths)
        for h in hooks:
            h.remove()
        leaf = lambda t: t.detach().requires_grad_() if t.is_floating_point() else t  # noqa: E731
        return ([tuple(leaf(t) if isinstance(t, torch.Tensor) else t for t in a) for a in layer_in],
                [tuple(leaf(t) if isinstance(t, torch.Tensor) else t for t in a) for a in attn_in],
                leaf(last[0]))

    def parts(model, opt, batch, cap):
        """Seconds of each part of the step: forward + backward alone (against a random output gradient), the
        optimiser's step (after a backward, so every gradient is there)."""
        ids, buckets, lengths, labels = batch
        layer_in, attn_in, last = cap
        n = ids.shape[1]
        out = {}

        def timed(key, fn):
            opt.zero_grad(set_to_none=True)
            t0 = time.perf_counter()
            fn()
            out[key] = out.get(key, 0.0) + time.perf_counter() - t0

        g = torch.randn(ids.shape[0], n, model.pe.shape[1])
        timed("embedding", lambda: model.drop(model.embed(ids) + model.pe[:n]).backward(g))
        for layer, a_layer, a_attn in zip(model.layers, layer_in, attn_in):
            timed("layers", lambda: layer(*a_layer).backward(g))
            timed("attention", lambda: layer.attn(*a_attn).backward(g))
        timed("head", lambda: loss_fn(model.classify(model.ln(last)).reshape(-1, classes),
                                      labels.reshape(-1)).backward())
        opt.zero_grad(set_to_none=True)
        step(model, opt, batch)  # the gradients the optimiser reads
        t0 = time.perf_counter()
        opt.step()
        out["optimiser"] = time.perf_counter() - t0
        return out

    for model, opt in contenders.values():  # warm-up: every batch shape once
        for batch in batches:
            step(model, opt, batch)
    caps = {name: [captured(model, b) for b in batches] for name, (model, _) in contenders.items()}
    rounds = {name: [] for name in contenders}
    for _ in range(runs):
        for name, (model, opt) in contenders.items():
            t0 = time.perf_counter()
            for batch in batches:
                step(model, opt, batch)
            whole = time.perf_counter() - t0
            total = {}
            for batch, cap in zip(batches, caps[name]):
                for k, v in parts(model, opt, batch, cap).items():
                    total[k] = total.get(k, 0.0) + v
            total["step"] = whole
            rounds[name].append(total)
    result = {"variant": variant, "train_size": train_size, "batches": len(batches), "tokens": tokens}
    for name, rs in rounds.items():
        med = {k: statistics.median(r[k] for r in rs) * 1e3 / len(batches) for k in rs[0]}
        med["ffn_norms"] = med["layers"] - med["attention"]  # the layers less their attention
        med["other"] = med["step"] - (med["embedding"] + med["layers"] + med["head"] + med["optimiser"])
        result[name] = {k: round(v, 4) for k, v in med.items()}
    result["speedup"] = result["pytorch"]["step"] / result["synattn"]["step"]
    return result


def function_floor(runs, steps=3000):
    """The fixed cost of a torch.autograd.Function step at 1x16x256x4, with nothing computed: an empty Function
    with the module's inputs and outputs (x and the layer's 10 trainable Parameters in, one (1, 16, 256) output;
    backward returns torch.from_numpy views of preallocated buffers, as the module's does) in the benchmark's
    step (every .grad set to None, .backward(G)); and the same with x alone. Medians of single steps, us."""
    d, n = 256, 16
    shapes = [(d, d)] * 3 + [(d,)] * 3 + [(d, d), (d,), (11,), (1,)]  # Wq Wk Wv bq bk bv Wo bo table scale
    params = [torch.nn.Parameter(torch.zeros(s)) for s in shapes]
    flat = np.zeros(sum(int(np.prod(s)) for s in shapes), np.float32)
    views, at = [], 0
    for s in shapes:
        k = int(np.prod(s))
        views.append(flat[at:at + k].reshape(s))
        at += k
    dx, out = np.zeros((n, d), np.float32), np.zeros((n, d), np.float32)
    x, G = torch.randn(1, n, d, requires_grad=True), torch.randn(1, n, d)

    class Empty(torch.autograd.Function):
        @staticmethod
        def forward(ctx, call, x, memory, *ps):
            return torch.from_numpy(out).view(1, n, d)

        @staticmethod
        def backward(ctx, g):
            return (None, torch.from_numpy(dx).view(1, n, d), None, *[torch.from_numpy(v) for v in views])

    class EmptyX(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return torch.from_numpy(out).view(1, n, d)

        @staticmethod
        def backward(ctx, g):
            return torch.from_numpy(dx).view(1, n, d)

    def full():
        for p in params:
            p.grad = None
        x.grad = None
        Empty.apply(None, x, None, *params).backward(G)

    def x_only():
        x.grad = None
        EmptyX.apply(x).backward(G)

    def median_us(step):
        for _ in range(300):
            step()
        ts = []
        for _ in range(steps):
            t0 = time.perf_counter()
            step()
            ts.append(time.perf_counter() - t0)
        return statistics.median(ts) * 1e6

    rounds = [(median_us(full), median_us(x_only)) for _ in range(runs)]
    return {"parameters_us": [r[0] for r in rounds], "x_only_us": [r[1] for r in rounds],
            "parameters_us_median": statistics.median(r[0] for r in rounds),
            "x_only_us_median": statistics.median(r[1] for r in rounds)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.5)
    ap.add_argument("--quiet-wait", type=float, default=60.0)
    ap.add_argument("--json", help="append the results here (one JSON object)")
    ap.add_argument("--shapes", help="only these shapes, e.g. 1x16x256x4,16x128x512x8")
    ap.add_argument("--no-document", action="store_true", help="skip the packed-document comparison")
    ap.add_argument("--training-step", action="store_true",
                    help="instead: a whole DEPREL training step, plain PyTorch against synattn.torch's attention")
    ap.add_argument("--variant", default="shared", help="--training-step: the recipe's variant")
    ap.add_argument("--train-size", type=int, default=500, help="--training-step: the recipe's N")
    ap.add_argument("--function-floor", action="store_true",
                    help="instead: an empty torch.autograd.Function's step at 1x16x256x4 (torch alone)")
    ap.add_argument("--document-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--window", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.function_floor:  # no matrix product: the BLAS does not matter
        r = function_floor(args.runs)
        print(json.dumps(r))
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                    "torch": torch.__version__, "function_floor": r}) + "\n")
        return 0
    refusal = reference_blas_refusal(torch)  # a peer on the netlib BLAS would flatter synattn 20-30x
    if refusal:
        sys.exit(refusal)
    if synattn is None:
        sys.exit(f"bench_python: cannot import synattn ({SYNATTN_IMPORT_ERROR}); set PYTHONPATH to the build's python/")
    synattn.set_num_threads(1)
    if args.document_child:
        print(json.dumps(document_child(args.n, args.window, args.runs)))
        return 0
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    result = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit,
              "torch": torch.__version__, "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                                                       if l.startswith("model name")), "?"),
              "shapes": [], "busy_before": []}
    if args.training_step:
        wait_for_quiet(args.quiet_wait)
        result["busy_before"].append(round(cpu_busy(0.5), 2))
        result["training_step"] = training_step_case(args.variant, args.train_size, args.runs)
        print(json.dumps(result["training_step"]), flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(result) + "\n")
        return 0
    shapes = SHAPES if not args.shapes else [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    for shape in shapes:
        wait_for_quiet(args.quiet_wait)
        result["busy_before"].append(round(cpu_busy(0.5), 2))
        r = shape_case(shape, args.runs, args.min_time)
        print(json.dumps(r), flush=True)
        result["shapes"].append(r)
    if args.no_document:
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(result) + "\n")
        return 0
    env = dict(os.environ)
    wait_for_quiet(args.quiet_wait)
    mine = subprocess.run([sys.executable, __file__, "--document-child", "--n", str(args.n), "--window",
                           str(args.window), "--runs", "3"], capture_output=True, text=True, env=env, check=True)
    result["document_synattn"] = json.loads(mine.stdout.strip().splitlines()[-1])
    wait_for_quiet(args.quiet_wait)
    theirs = subprocess.run([sys.executable, str(HERE / "pytorch_documents.py"), "--n", str(args.n), "--window",
                             str(args.window), "--runs", "3"], capture_output=True, text=True, env=env, check=True)
    result["document_torch"] = json.loads(theirs.stdout.strip().splitlines()[-1])
    d, t = result["document_synattn"], result["document_torch"]
    result["document_speedup"] = t["layer_ms"] / d["layer_ms"]
    result["document_memory_ratio"] = d["layer_peak_MB"] / t["layer_peak_MB"]
    print(json.dumps({k: result[k] for k in ("document_synattn", "document_torch", "document_speedup",
                                             "document_memory_ratio")}))
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
