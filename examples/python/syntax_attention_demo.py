#!/usr/bin/env python3
"""Raw text -> trees -> buckets -> the attention layer forward and backward, from Python.

    PYTHONPATH=build/release/python /usr/bin/python3 examples/python/syntax_attention_demo.py ["Some text."]

Parses the text with the shipped English tokenizer and parser, prints each word's head and relation,
buckets the trees' distances, runs synattn.torch.SyntaxBiasedAttention (the C++ layer) forward and
backward, takes one Adam step and writes the weights as a checkpoint the C++ side loads
(SyntaxBiasedAttention<float> + synattn::load_weights).
"""
import os
import sys
import tempfile

import torch

import synattn
import synattn.torch as st


def main():
    text = sys.argv[1] if len(sys.argv) > 1 else "Dr. Smith's team didn't finish the report. They left early!"
    doc = synattn.parse(text)
    for s in doc.sentences:
        for i, w in enumerate(s.words):
            head = s.words[w.head - 1].form if w.head > 0 else "ROOT"
            print(f"{i + 1:3d} {w.form:12s} {w.deprel:10s} -> {head}   bytes {w.span}")
        print()
    bucketing = synattn.Bucketing.linear(8)
    batch = st.bucket_batch([s.tree() for s in doc.sentences], bucketing)
    layer = st.SyntaxBiasedAttention(32, 4, bucketing=bucketing, per_head=True, dropout=0.1)
    opt = torch.optim.Adam(layer.parameters(), lr=1e-2)
    x = torch.randn(len(doc.sentences), batch.n, 32, requires_grad=True)
    out = layer(x, batch.lengths, batch.buckets)
    loss = out.square().mean()
    loss.backward()
    opt.step()
    print(f"out {tuple(out.shape)}, loss {loss.item():.4f}, |d table| {layer.table.grad.abs().sum().item():.4g}")
    path = os.path.join(tempfile.mkdtemp(), "attention.safetensors")
    layer.save_weights(path, extra={"made_by": "examples/python/syntax_attention_demo.py"})
    print(f"wrote {path} ({os.path.getsize(path)} bytes): tensors {', '.join(n for n, _ in layer.named_parameters())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
