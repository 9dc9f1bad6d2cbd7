#!/usr/bin/env python3
"""The DEPREL experiment (examples/train_deprel) in PyTorch, with synattn's attention layer inside.

    PYTHONPATH=build/release/python /usr/bin/python3 examples/python/train_deprel.py --variant shared \
        --train-size 500 --seed 1 [--epochs E] [--bias-lr-mult 10]

Predict each word's base dependency relation in UD English EWT from its form; the gold tree enters the model
only through the attention bias. Everything but the attention is bench/pytorch_train_reference.py's PyTorch
twin of the C++ example (the same data recipe bit for bit: subset, vocabulary, word dropout, batches; 2
pre-norm layers, d_model 128, 4 heads, FFN 256, dropout 0.1, Adam 1e-3 with 50 warm-up steps), whose
run_recipe() trains and early-stops; the attention is synattn.torch.SyntaxBiasedAttention (the C++ forward
and backward, attention dropout 0.1 in training mode) with the variant's table: none (no bias), fixed (a
frozen -d decay), shared, per-head, directed, shared-decay. Prints the recipe's JSON line (best dev
accuracy, epochs, throughput).
"""
import math
import os
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "bench"))
import pytorch_train_reference as recipe  # noqa: E402  (the data recipe and the training loop)


def make_model(torch, vocab, classes, variant, d_model=128, heads=4, ffn=256, layers=2, dropout=0.1):
    import synattn
    import synattn.torch as st
    nn = torch.nn
    F = torch.nn.functional
    bucketing = synattn.Bucketing.directed(4) if variant == "directed" else synattn.Bucketing.linear(10)
    assert bucketing.num_buckets == recipe.variant_buckets(variant)

    def attention():
        if variant == "none":
            return st.SyntaxBiasedAttention(d_model, heads, syntax_bias=False, dropout=dropout)
        return st.SyntaxBiasedAttention(
            d_model, heads, bucketing=bucketing, dropout=dropout, per_head=variant == "per-head",
            init="linear_decay" if variant in ("fixed", "shared-decay") else "zero",
            table_learnable=variant != "fixed")

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
            self.attn = attention()
            self.ff1, self.ff2 = nn.Linear(d_model, ffn), nn.Linear(ffn, d_model)
            self.drop_attn, self.drop_hidden, self.drop_ffn = nn.Dropout(dropout), nn.Dropout(dropout), nn.Dropout(dropout)

        def forward(self, x, buckets, lengths):
            x = x + self.drop_attn(self.attn(self.ln1(x), lengths, buckets))
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
            # ids (B, n); buckets (B, n, n) int64, -1 on padding pairs (the layer's int8 block); lengths (B,)
            n = ids.shape[1]
            b = None if variant == "none" else buckets.to(torch.int8)
            x = self.drop(self.embed(ids) + self.pe[:n])
            for layer in self.layers:
                x = layer(x, b, lengths)
            return self.classify(self.ln(x))

        def bias_parameters(self):
            return [p for l in self.layers if variant != "none" for p in (l.attn.table, l.attn.scale)]

        def learned_bias(self):
            return ([(l.attn.scale * l.attn.table).detach().tolist() for l in self.layers]
                    if variant != "none" else [])

    return Model()


def main():
    recipe.make_model = make_model  # run_recipe builds its model through this name
    argv = sys.argv[1:]
    if "--bias-lr-mult" not in argv:
        argv += ["--bias-lr-mult", "10"]  # the C++ example's default (the twin's is 1)
    sys.argv = [sys.argv[0], "recipe"] + argv
    return recipe.main()


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
