#!/usr/bin/env python3
"""PyTorch twin of the DEPREL training experiment (examples/train_deprel).

    /usr/bin/python3 bench/pytorch_train_reference.py recipe --variant shared --train-size 500 --seed 1 --threads 1
    /usr/bin/python3 bench/pytorch_train_reference.py throughput [--threads 1,2]
    /usr/bin/python3 bench/pytorch_train_reference.py selftest      # pinned RNG numbers (shared with C++)
    /usr/bin/python3 bench/pytorch_train_reference.py pins          # prints the numbers the C++ test pins

Task: predict each word's base universal dependency relation (DEPREL before
':') in UD English EWT from its lower-cased form; the gold tree enters the
model only through the attention bias s * T[bucket(dist(i, j))].

The data recipe is the one of include/synattn/data/ (batching.hpp,
vocabulary.hpp, tagging_corpus.hpp), re-implemented here bit for bit:

* Random numbers: synattn::RandomStream. mix64 is splitmix64's finaliser;
  RandomStream(seed).key = mix64(seed + G) with G = 0x9e3779b97f4a7c15;
  derive(id).key = mix64(key ^ mix64(id + 0x632be59bd9b4e019));
  bits(c) = mix64(key + (c + 1) * G); uniform(c) = (bits(c) >> 11) * 2^-53.
  All arithmetic modulo 2^64.
* Bounded draw below m (unbiased, "OpenBSD arc4random_uniform"): draw
  x = bits(c) for c = 0, 1, 2, ... of a counter that runs through the whole
  shuffle; accept the first x >= (2^64 mod m) and return x mod m.
* Shuffle (Fisher-Yates, Durstenfeld): for i = n-1 down to 1:
  j = below(i + 1); swap(a[i], a[j]).
* Training subset: shuffle 0..S-1 (S = train sentences) with stream
  RandomStream(data_seed).derive(1), take the first N, drop those with more
  than 60 words; the subset is in that shuffled order.
* Vocabulary from the subset: 0 = <pad>, 1 = <unk>, then words by descending
  count, ties by first appearance (subset order, then word order).
  Word dropout: a word seen once in the subset becomes <unk> when
  uniform(j) < 0.5 on RandomStream(seed).derive(3).derive(epoch).derive(s)
  (s = the sentence's position in the subset, j = word position).
* Labels: the base DEPRELs of the full train file, sorted by their UTF-8
  bytes; any other label is -100 (ignored).
* Batches of one epoch: stream E = RandomStream(seed).derive(2).derive(epoch);
  key(s) = length(s) + 4 * E.derive(0).uniform(s); sort positions by
  (key, s); cut into consecutive batches of 32 (the last may be smaller);
  shuffle the batch order with E.derive(1).
* Evaluation batches: positions sorted by (length, position), cut into 32s.
* Lower-casing: ASCII A-Z only; every other byte (all of non-ASCII UTF-8)
  is kept as it is, so "É" stays "É".

The model (the experiment's, written plainly): nn.Embedding(V, d,
padding_idx=0) + sinusoidal positions (not scaled) + dropout 0.1; 2 pre-norm
encoder layers (d_model 128, 4 heads, FFN 256 ReLU; dropout 0.1 on attention
probabilities, attention output, FFN hidden and FFN output); syntax-biased
multi-head attention scores q.k/sqrt(dk) + s * T[bucket], -inf on padding
keys, each layer its own table T (zero init) and scale s (init 1); final
LayerNorm; linear classifier; cross-entropy with ignore_index -100.
Variants: none, fixed (T[b] = -b frozen, s learnable), shared (11 buckets,
clamp 10, one table per layer), per-head (one table per head), directed
(up/down clamp 4: 25 buckets), shared-decay (shared, T initialised at -b).

Training (recipe mode): Adam (torch defaults, no weight decay), learning rate
lr(step) = 1e-3 * min(1, (step + 1) / 50) with the step counted from 0 over
all epochs, the bias tables and scales at --bias-lr-mult times that; loss =
mean cross-entropy over the batch's counted tokens; after every epoch the
full dev set is evaluated (accuracy = correct / counted tokens, in
evaluation batches, dropout off); early stopping when the best dev accuracy
is `patience` epochs old. Model initialisation and dropout masks come from
torch's generator (torch.manual_seed(seed)), so they are not the C++ ones:
only the data order, vocabulary and word dropout are shared.

Throughput mode: one child process per (model, variant, threads) so that
peak RSS is that case's; models d128 (d_model 128, 4 heads, FFN 256) and
d256 (d_model 256, 4 heads, FFN 4*256 = 1024), 2 layers, batch 32 x n 64
full-length sentences on random recursive trees (word i > 0 hangs from a
uniform earlier word), vocabulary 4000, 37 classes; forward + backward +
Adam step; 3 warm-up steps, then the median of 15 timed steps after waiting
for idle cores (up to --quiet-wait s; the busy fraction is reported).
"""
import argparse
import json
import math
import os
import sys
import time

T_START = time.time()  # the wall time reported includes reading and preparing the data

M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
DERIVE = 0x632BE59BD9B4E019
IGNORE = -100
PAD, UNK = 0, 1
BATCH = 32
MAX_WORDS = 60
DEFAULT_DATA_SEED = 20240601

SITE_SUBSET, SITE_BATCHES, SITE_WORD_DROPOUT = 1, 2, 3

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from pytorch_reference import reference_blas_refusal, wait_for_quiet  # noqa: E402  (the attention benchmark's helpers)
ROOT = os.path.dirname(HERE)
EWT = os.path.join(ROOT, "data", "ud", "UD_English-EWT")


# --------------------------------------------------------------------------
# synattn::RandomStream in Python
# --------------------------------------------------------------------------

def mix64(z):
    z &= M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


class RandomStream:
    __slots__ = ("key",)

    def __init__(self, seed=None, key=None):
        self.key = key if key is not None else mix64(seed + GOLDEN)

    def derive(self, i):
        return RandomStream(key=mix64(self.key ^ mix64(i + DERIVE)))

    def bits(self, c):
        return mix64(self.key + ((c + 1) * GOLDEN & M64))

    def uniform(self, c):
        return (self.bits(c) >> 11) * 2.0 ** -53


class Sequence:
    """Draws bits(0), bits(1), ... of one stream, in order."""

    def __init__(self, stream):
        self.stream, self.counter = stream, 0

    def next(self):
        x = self.stream.bits(self.counter)
        self.counter += 1
        return x

    def below(self, m):
        assert m >= 1
        threshold = (1 << 64) % m
        while True:
            x = self.next()
            if x >= threshold:
                return x % m


def shuffle(items, stream):
    a = list(items)
    seq = Sequence(stream)
    for i in range(len(a) - 1, 0, -1):
        j = seq.below(i + 1)
        a[i], a[j] = a[j], a[i]
    return a


def select_training_subset(lengths, n, data_seed, max_words=MAX_WORDS):
    order = shuffle(range(len(lengths)), RandomStream(data_seed).derive(SITE_SUBSET))
    return [i for i in order[:n] if lengths[i] <= max_words]


def epoch_batches(lengths, seed, epoch, batch=BATCH, noise=4.0):
    e = RandomStream(seed).derive(SITE_BATCHES).derive(epoch)
    ns = e.derive(0)
    keys = [(lengths[s] + noise * ns.uniform(s), s) for s in range(len(lengths))]
    order = [s for _, s in sorted(keys)]
    batches = [order[k:k + batch] for k in range(0, len(order), batch)]
    return shuffle(batches, e.derive(1))


def eval_batches(lengths, batch=BATCH):
    order = sorted(range(len(lengths)), key=lambda s: (lengths[s], s))
    return [order[k:k + batch] for k in range(0, len(order), batch)]


def word_dropout_stream(seed, epoch, sentence):
    return RandomStream(seed).derive(SITE_WORD_DROPOUT).derive(epoch).derive(sentence)


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------

_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def ascii_lower(s):
    return s.translate(_ASCII_LOWER)


def base_deprel(label):
    return label.split(":", 1)[0]


def read_conllu(path):
    """[(forms, heads 0-based root -1, base labels)], integer-ID lines only."""
    out, forms, heads, labels = [], [], [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\r\n")
            if not line.strip():
                if forms:
                    out.append((forms, heads, labels))
                forms, heads, labels = [], [], []
                continue
            if line.startswith("#"):
                continue
            cols = line.split("\t")
            if "-" in cols[0] or "." in cols[0]:
                continue
            forms.append(ascii_lower(cols[1]))
            heads.append(int(cols[6]) - 1)
            labels.append(base_deprel(cols[7]))
    if forms:
        out.append((forms, heads, labels))
    return out


def build_vocabulary(sentences):
    count, first = {}, {}
    for forms, _, _ in sentences:
        for w in forms:
            if w not in count:
                count[w] = 0
                first[w] = len(first)
            count[w] += 1
    words = sorted(count, key=lambda w: (-count[w], first[w]))
    index = {w: i + 2 for i, w in enumerate(words)}
    singleton = [False, False] + [count[w] == 1 for w in words]
    return index, singleton


def build_labels(sentences):
    return sorted({l for _, _, ls in sentences for l in ls}, key=lambda s: s.encode("utf-8"))


def distances(heads):
    """(undirected, up, down) n x n lists of lists."""
    n = len(heads)
    depth = [0] * n
    for i in range(n):
        d, h = 0, heads[i]
        while h >= 0:
            d, h = d + 1, heads[h]
        depth[i] = d
    anc = []
    for i in range(n):
        path, h = [i], heads[i]
        while h >= 0:
            path.append(h)
            h = heads[h]
        anc.append(set(path))
    up = [[0] * n for _ in range(n)]
    down = [[0] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            a = j
            while a not in anc[i]:
                a = heads[a]
            up[i][j] = depth[i] - depth[a]
            down[i][j] = depth[j] - depth[a]
    return up, down


VARIANTS = ("none", "fixed", "shared", "per-head", "directed", "shared-decay")


def variant_buckets(variant):
    return 25 if variant == "directed" else 11


def sentence_buckets(heads, variant):
    up, down = distances(heads)
    n = len(heads)
    if variant == "directed":
        return [[min(up[i][j], 4) * 5 + min(down[i][j], 4) for j in range(n)] for i in range(n)]
    return [[min(up[i][j] + down[i][j], 10) for j in range(n)] for i in range(n)]


# --------------------------------------------------------------------------
# Model
# --------------------------------------------------------------------------

def make_model(torch, vocab, classes, variant, d_model=128, heads=4, ffn=256, layers=2, dropout=0.1):
    nn = torch.nn
    F = torch.nn.functional
    nb = variant_buckets(variant)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.h, self.dk = heads, d_model // heads
            self.q = nn.Linear(d_model, d_model)
            self.k = nn.Linear(d_model, d_model)
            self.v = nn.Linear(d_model, d_model)
            self.out = nn.Linear(d_model, d_model)
            self.drop = nn.Dropout(dropout)
            if variant != "none":
                rows = heads if variant == "per-head" else 1
                init = torch.zeros(rows, nb)
                if variant in ("fixed", "shared-decay"):
                    init[:] = -torch.arange(nb, dtype=torch.float32)
                self.table = nn.Parameter(init, requires_grad=variant != "fixed")
                self.scale = nn.Parameter(torch.ones(()))

        def forward(self, x, buckets, key_pad):
            # x: (B, n, d); buckets: (B, n, n) int64 (>= 0); key_pad: (B, 1, 1, n) bool
            B, n, d = x.shape
            q = self.q(x).view(B, n, self.h, self.dk).transpose(1, 2)   # (B, h, n, dk)
            k = self.k(x).view(B, n, self.h, self.dk).transpose(1, 2)
            v = self.v(x).view(B, n, self.h, self.dk).transpose(1, 2)
            scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.dk)  # (B, h, n, n)
            if variant != "none":
                if self.table.shape[0] == 1:
                    bias = self.table[0][buckets].unsqueeze(1)           # (B, 1, n, n)
                else:
                    bias = self.table[:, buckets].transpose(0, 1)        # (B, h, n, n)
                scores = scores + self.scale * bias
            # Padding keys only: a padding query row keeps its real keys, so no
            # row is fully masked (no NaN) and real rows are what docs/math.md §4.2 masks.
            scores = scores.masked_fill(key_pad, float("-inf"))
            p = self.drop(torch.softmax(scores, dim=-1))
            ctx = torch.matmul(p, v).transpose(1, 2).reshape(B, n, d)
            return self.out(ctx)

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
            self.attn = Attention()
            self.ff1, self.ff2 = nn.Linear(d_model, ffn), nn.Linear(ffn, d_model)
            self.drop_attn, self.drop_hidden, self.drop_ffn = nn.Dropout(dropout), nn.Dropout(dropout), nn.Dropout(dropout)

        def forward(self, x, buckets, key_pad):
            x = x + self.drop_attn(self.attn(self.ln1(x), buckets, key_pad))
            h = self.drop_hidden(F.relu(self.ff1(self.ln2(x))))
            return x + self.drop_ffn(self.ff2(h))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, d_model, padding_idx=0)
            self.drop = nn.Dropout(dropout)
            self.layers = nn.ModuleList([Layer() for _ in range(layers)])
            self.ln = nn.LayerNorm(d_model)
            self.classify = nn.Linear(d_model, classes)
            pos = torch.arange(512, dtype=torch.float32).unsqueeze(1)
            div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
            pe = torch.zeros(512, d_model)
            pe[:, 0::2] = torch.sin(pos * div)
            pe[:, 1::2] = torch.cos(pos * div)
            self.register_buffer("pe", pe)

        def forward(self, ids, buckets, lengths):
            # ids: (B, n) int64; buckets: (B, n, n) int64, -1 on padding pairs; lengths: (B,)
            B, n = ids.shape
            key_pad = (torch.arange(n).unsqueeze(0) >= lengths.unsqueeze(1)).view(B, 1, 1, n)
            b = buckets.clamp(min=0)
            x = self.drop(self.embed(ids) + self.pe[:n])
            for layer in self.layers:
                x = layer(x, b, key_pad)
            return self.classify(self.ln(x))                               # (B, n, classes)

        def bias_parameters(self):
            return [p for l in self.layers if variant != "none" for p in (l.attn.table, l.attn.scale)]

        def learned_bias(self):
            """s * T per layer (rows: heads or 1)."""
            return [(l.attn.scale * l.attn.table).detach().tolist() for l in self.layers] if variant != "none" else []

    return Model()


# --------------------------------------------------------------------------
# Batches as tensors
# --------------------------------------------------------------------------

class Prepared:
    """One split: ids without dropout, singleton flags, labels, buckets per sentence."""

    def __init__(self, sentences, vocab, singleton, label_index, variant):
        self.forms_ids, self.single, self.labels, self.buckets, self.lengths = [], [], [], [], []
        self.ignored = 0
        for forms, heads, labels in sentences:
            ids = [vocab.get(w, UNK) for w in forms]
            self.forms_ids.append(ids)
            self.single.append([singleton[i] for i in ids])
            ls = [label_index.get(l, IGNORE) for l in labels]
            self.ignored += sum(1 for l in ls if l == IGNORE)
            self.labels.append(ls)
            self.buckets.append(sentence_buckets(heads, variant) if variant != "none" else None)
            self.lengths.append(len(forms))

    def batch(self, torch, positions, dropout=None):
        """dropout: (seed, epoch) for training word dropout, or None."""
        n = max(self.lengths[s] for s in positions)
        B = len(positions)
        ids = torch.zeros(B, n, dtype=torch.int64)
        labels = torch.full((B, n), IGNORE, dtype=torch.int64)
        buckets = torch.full((B, n, n), -1, dtype=torch.int64)
        lengths = torch.tensor([self.lengths[s] for s in positions], dtype=torch.int64)
        for b, s in enumerate(positions):
            L = self.lengths[s]
            row = list(self.forms_ids[s])
            if dropout is not None:
                st = word_dropout_stream(dropout[0], dropout[1], s)
                for j in range(L):
                    if self.single[s][j] and st.uniform(j) < 0.5:
                        row[j] = UNK
            ids[b, :L] = torch.tensor(row)
            labels[b, :L] = torch.tensor(self.labels[s])
            if self.buckets[s] is not None:
                buckets[b, :L, :L] = torch.tensor(self.buckets[s])
        return ids, buckets, lengths, labels


def default_schedule(n):
    if n <= 500:
        return 60, 10
    if n <= 2000:
        return 20, 6
    return 6, 3


def set_blas_env(threads):
    """Before torch is imported: OpenBLAS reads these when it loads."""
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ["OPENBLAS_NUM_THREADS"] = str(threads)
    if threads > 1:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    # OpenBLAS 0.3.21 does not know CPUs newer than it and falls back to its
    # SSE3 kernel; force SkylakeX on AVX-512 machines (as pytorch_reference.py).
    try:
        with open("/proc/cpuinfo") as f:
            if " avx512f" in f.read() and "OPENBLAS_CORETYPE" not in os.environ:
                os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"
    except OSError:
        pass


def run_recipe(args):
    set_blas_env(args.threads)
    import torch
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    t_load = time.time()
    train_all = read_conllu(args.train)
    dev = read_conllu(args.dev)
    subset_idx = select_training_subset([len(s[0]) for s in train_all], args.train_size, args.data_seed)
    train = [train_all[i] for i in subset_idx]
    vocab, singleton = build_vocabulary(train)
    label_names = build_labels(train_all)
    label_index = {l: i for i, l in enumerate(label_names)}
    tr = Prepared(train, vocab, singleton, label_index, args.variant)
    dv = Prepared(dev, vocab, singleton, label_index, args.variant)
    epochs, patience = default_schedule(args.train_size)
    epochs = args.epochs or epochs
    patience = args.patience or patience
    print(f"# data: {len(train)} train sentences ({sum(tr.lengths)} words), vocab {len(vocab) + 2}, "
          f"{len(label_names)} classes, dev {len(dev)} sentences, {dv.ignored} dev labels ignored "
          f"(prepared in {time.time() - t_load:.1f} s)", file=sys.stderr)

    model = make_model(torch, len(vocab) + 2, len(label_names), args.variant)
    bias = model.bias_parameters()
    bias_ids = {id(p) for p in bias}
    groups = [{"params": [p for p in model.parameters() if id(p) not in bias_ids and p.requires_grad], "mult": 1.0}]
    if bias:
        groups.append({"params": [p for p in bias if p.requires_grad], "mult": args.bias_lr_mult})
    opt = torch.optim.Adam(groups, lr=args.lr)
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=IGNORE)
    dev_batches = [dv.batch(torch, b) for b in eval_batches(dv.lengths)]

    def evaluate():
        model.eval()
        correct = total = 0
        with torch.no_grad():
            for ids, buckets, lengths, labels in dev_batches:
                pred = model(ids, buckets, lengths).argmax(-1)
                m = labels != IGNORE
                correct += int((pred[m] == labels[m]).sum())
                total += int(m.sum())
        model.train()
        return 100.0 * correct / total

    step, best, best_epoch, history = 0, -1.0, 0, []
    train_tokens, train_time = 0, 0.0
    t0 = time.time()
    epochs_run = 0
    for epoch in range(epochs):
        te = time.time()
        for positions in epoch_batches(tr.lengths, args.seed, epoch):
            ids, buckets, lengths, labels = tr.batch(torch, positions, dropout=(args.seed, epoch))
            lr = args.lr * min(1.0, (step + 1) / args.warmup)
            for g in opt.param_groups:
                g["lr"] = lr * g["mult"]
            logits = model(ids, buckets, lengths)
            loss = loss_fn(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
            train_tokens += int((labels != IGNORE).sum())
        train_time += time.time() - te
        acc = evaluate()
        history.append(acc)
        epochs_run = epoch + 1
        if acc > best:
            best, best_epoch = acc, epoch + 1
        print(f"epoch {epoch + 1} loss {float(loss):.4f} dev {acc:.2f}% best {best:.2f}% "
              f"({time.time() - t0:.1f} s)", file=sys.stderr)
        if epoch + 1 - best_epoch >= patience:
            break
    wall = time.time() - t0
    result = {"mode": "recipe", "framework": "pytorch", "variant": args.variant,
              "train_sentences": len(train), "train_size": args.train_size, "seed": args.seed,
              "threads": args.threads, "bias_lr_mult": args.bias_lr_mult,
              "best_dev_accuracy": best, "best_epoch": best_epoch, "epochs_run": epochs_run,
              "wall_seconds": time.time() - T_START, "loop_seconds": wall, "train_seconds": train_time,
              "train_tokens_per_second": train_tokens / train_time if train_time else 0.0,
              "dev_history": history, "dev_ignored_labels": dv.ignored,
              "learned_bias": model.learned_bias(), "torch": torch.__version__}
    print(json.dumps(result))


# --------------------------------------------------------------------------
# Throughput
# --------------------------------------------------------------------------

def random_recursive_heads(rng, n):
    """Word 0 is the root; word i > 0 hangs from a uniform earlier word."""
    return [-1] + [int(rng.integers(0, i)) for i in range(1, n)]


THROUGHPUT_MODELS = {"d128": (128, 4, 256), "d256": (256, 4, 1024)}  # d_model, heads, FFN (4*d for d256)


def throughput_child(args):
    """One measurement (one model, variant, thread count) in a fresh process,
    so peak RSS (getrusage maxrss) is that case's own."""
    set_blas_env(args.threads_child)
    import numpy as np
    import resource
    import torch
    refusal = reference_blas_refusal(torch)
    if refusal:
        sys.exit(refusal)
    torch.set_num_threads(args.threads_child)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    B, n, vocab, classes = args.batch, args.n, 4000, 37
    d, h, ffn = THROUGHPUT_MODELS[args.model]
    variant = args.variants
    model = make_model(torch, vocab, classes, variant, d_model=d, heads=h, ffn=ffn)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    ids = torch.randint(2, vocab, (B, n))
    labels = torch.randint(0, classes, (B, n))
    buckets = torch.tensor([sentence_buckets(random_recursive_heads(rng, n), variant) if variant != "none"
                            else [[0] * n] * n for _ in range(B)], dtype=torch.int64)
    lengths = torch.full((B,), n, dtype=torch.int64)
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=IGNORE)

    def step():
        logits = model(ids, buckets, lengths)
        loss = loss_fn(logits.reshape(-1, classes), labels.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(args.warmup_steps):
        step()
    busy = wait_for_quiet(max_wait=args.quiet_wait) if args.quiet_wait > 0 else float("nan")
    times = []
    for _ in range(args.steps):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    times.sort()
    med = times[len(times) // 2]
    print(json.dumps({"mode": "throughput", "framework": "pytorch", "model": args.model, "d_model": d,
                      "heads": h, "ffn": ffn, "layers": 2, "variant": variant, "batch": B, "n": n,
                      "vocab": vocab, "classes": classes, "threads": args.threads_child,
                      "step_seconds_median": med, "step_seconds_min": times[0],
                      "tokens_per_second": B * n / med,
                      "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
                      "cpu_busy_before": busy, "torch": torch.__version__}), flush=True)


def run_throughput(args):
    import subprocess
    for t in [int(x) for x in args.threads.split(",")]:
        for model in args.models.split(","):
            for variant in args.variants.split(","):
                cmd = [sys.executable, os.path.abspath(__file__), "throughput", "--threads-child", str(t),
                       "--model", model, "--variants", variant, "--batch", str(args.batch), "--n", str(args.n),
                       "--steps", str(args.steps), "--warmup-steps", str(args.warmup_steps),
                       "--quiet-wait", str(args.quiet_wait)]
                subprocess.run(cmd, check=True)


# --------------------------------------------------------------------------
# Pinned numbers (the same values are pinned in tests/data/test_batching.cpp)
# --------------------------------------------------------------------------

def pins():
    """The numbers the C++ test pins; printed by `pins`, checked by `selftest`."""
    s = RandomStream(7)
    return {
        "mix64_12345": mix64(12345),
        "stream7_key": s.key, "stream7_derive3_bits0": s.derive(3).bits(0),
        "stream7_uniform5": s.uniform(5).hex(),
        "below_1000_seq": _below_seq(s, 1000, 6),
        "shuffle10_seed7": shuffle(range(10), RandomStream(7)),
        "subset": select_training_subset([5, 70, 12, 3, 61, 9, 60, 1, 2, 33, 8, 40], 8, 99),
        "batches": epoch_batches([3, 9, 4, 12, 7, 7, 1, 30, 2, 5], 11, 2, batch=3),
        "dropout_s5_e1_seed3_uniform": [word_dropout_stream(3, 1, 5).uniform(j).hex() for j in range(4)],
    }


def _below_seq(s, m, k):
    seq = Sequence(s)
    return [seq.below(m) for _ in range(k)]


# The values tests/data/test_batching.cpp ("[pins]") requires of
# synattn::RandomStream, DrawSequence, shuffled_indices,
# select_training_subset, length_batches and word_dropout_stream in C++ (that
# test passes, so these are the C++ results); `selftest` checks Python
# against them.
CPP_PINS = {
    "mix64_12345": 17540659726606785873,
    "stream7_key": 7191089600892374487,
    "stream7_derive3_bits0": 18299605080711404622,
    "stream7_uniform5": "0x1.7551f69e6c4c8p-3",
    "below_1000_seq": [221, 174, 827, 45, 790, 174],
    "shuffle10_seed7": [7, 6, 9, 2, 8, 4, 0, 3, 5, 1],
    "subset": [9, 3, 2, 5, 7, 11, 6],
    "batches": [[7], [6, 8, 0], [2, 9, 5], [4, 1, 3]],
    "dropout_s5_e1_seed3_uniform": ["0x1.d000949a9f76dp-1", "0x1.73abf9830fef4p-1",
                                    "0x1.9e471efd3cb22p-2", "0x1.b6aa5eb7ee625p-1"],
}


# What tests/data/test_token_batch.cpp ("the N = 500 recipe on EWT ...")
# requires of the C++ data pipeline on the vendored EWT train file (default
# data seed, N = 500, seed 1, epoch 0).
CPP_EWT_PINS = {
    "subset_size": 492,
    "subset_first8": [2308, 2958, 8647, 362, 11221, 8278, 7849, 3675],
    "subset_words": 7682,
    "vocab_size": 2416,
    "vocab_first10": ["the", ".", ",", "to", "and", "a", "of", "in", "i", "you"],
    "vocab_last3": ["release", "tenn", "iroq"],
    "singletons": 1706,
    "labels": [36, "acl", "nmod", "xcomp"],
    "batches": 16,
    "first_batch": [352, 441, 58, 143, 244, 480, 62, 344, 107, 49, 294, 21, 169, 291, 8, 221, 477, 160, 444,
                    278, 44, 366, 280, 4, 153, 10, 74, 300, 474, 401, 252, 332],
    "first_batch_dropped": 33,
}


def ewt_pins():
    tr = read_conllu(os.path.join(EWT, "en_ewt-ud-train.conllu"))
    sub = select_training_subset([len(s[0]) for s in tr], 500, DEFAULT_DATA_SEED)
    train = [tr[i] for i in sub]
    vocab, single = build_vocabulary(train)
    words = sorted(vocab, key=vocab.get)
    labels = build_labels(tr)
    lengths = [len(s[0]) for s in train]
    batches = epoch_batches(lengths, 1, 0)
    ids = [[vocab[w] for w in train[s][0]] for s in batches[0]]
    dropped = sum(1 for k, s in enumerate(batches[0]) for j, i in enumerate(ids[k])
                  if single[i] and word_dropout_stream(1, 0, s).uniform(j) < 0.5)
    return {"subset_size": len(sub), "subset_first8": sub[:8], "subset_words": sum(lengths),
            "vocab_size": len(vocab) + 2, "vocab_first10": words[:10], "vocab_last3": words[-3:],
            "singletons": sum(single), "labels": [len(labels), labels[0], labels[24], labels[-1]],
            "batches": len(batches), "first_batch": batches[0], "first_batch_dropped": dropped}


def selftest():
    got = pins()
    checks = [(k, CPP_PINS[k], got[k]) for k in CPP_PINS]
    if os.path.exists(os.path.join(EWT, "en_ewt-ud-train.conllu")):
        got_ewt = ewt_pins()
        checks += [("ewt." + k, CPP_EWT_PINS[k], got_ewt[k]) for k in CPP_EWT_PINS]
    bad = [(k, want, have) for k, want, have in checks if want != have]
    for k, want, have in bad:
        print(f"MISMATCH {k}: python {have} c++ {want}")
    print("selftest:", "FAILED" if bad else "ok", f"({len(checks)} values)")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("recipe")
    r.add_argument("--variant", default="shared", choices=VARIANTS)
    r.add_argument("--train-size", type=int, default=500)
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--data-seed", type=int, default=DEFAULT_DATA_SEED)
    r.add_argument("--threads", type=int, default=1)
    r.add_argument("--epochs", type=int, default=0, help="0: by train size (60/20/6)")
    r.add_argument("--patience", type=int, default=0, help="0: by train size (10/6/3)")
    r.add_argument("--lr", type=float, default=1e-3)
    r.add_argument("--warmup", type=int, default=50)
    r.add_argument("--bias-lr-mult", type=float, default=1.0)
    r.add_argument("--train", default=os.path.join(EWT, "en_ewt-ud-train.conllu"))
    r.add_argument("--dev", default=os.path.join(EWT, "en_ewt-ud-dev.conllu"))
    t = sub.add_parser("throughput")
    t.add_argument("--threads", default="1,2")
    t.add_argument("--threads-child", type=int, default=0, help=argparse.SUPPRESS)
    t.add_argument("--batch", type=int, default=32)
    t.add_argument("--n", type=int, default=64)
    t.add_argument("--steps", type=int, default=15)
    t.add_argument("--warmup-steps", type=int, default=3)
    t.add_argument("--variants", default="none,shared", help="comma list (one per child process)")
    t.add_argument("--models", default="d128,d256", help="d128 (FFN 256), d256 (FFN 1024)")
    t.add_argument("--model", default="d128", help=argparse.SUPPRESS)
    t.add_argument("--quiet-wait", type=float, default=60.0,
                   help="seconds to wait for idle cores before timing (the machine is shared)")
    sub.add_parser("pins")
    sub.add_parser("selftest")
    args = ap.parse_args()
    if args.mode == "recipe":
        run_recipe(args)
    elif args.mode == "throughput":
        if args.threads_child:
            throughput_child(args)
        else:
            run_throughput(args)
    elif args.mode == "pins":
        print(json.dumps(pins(), indent=1))
    else:
        sys.exit(selftest())


if __name__ == "__main__":
    main()
