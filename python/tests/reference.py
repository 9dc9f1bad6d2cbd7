"""The attention layer written in plain PyTorch ops (docs/math.md 4), for the tests and the benchmark.

Every option of the C++ layer but dropout: shared / per-head tables, tree fusion (views, shared table,
per-head weights), causal, cross-attention, key and value sizes, talking heads. The bias is gathered into a
float (B, h, n_q, n_kv) tensor, so autograd differentiates the table, the scale and the view logits too.
"""
import math

import torch


def reference_attention(params, o, x, lengths, buckets=None, memory=None, memory_lengths=None):
    """params: name -> tensor (the layer's names and shapes); o: the layer's options dict; x (B, n_q, d);
    buckets int (B, n_q, n_kv) or (V, B, n_q, n_kv)."""
    P = params
    h = o["heads"]
    d = o["d_model"]
    dk = o.get("key_size", 0) or d // h
    dv = o.get("value_size", 0) or d // h
    kv = x if memory is None else memory
    B, nq = x.shape[0], x.shape[1]
    nkv = kv.shape[1]
    lq = torch.as_tensor(lengths)
    lkv = lq if memory is None else torch.as_tensor(memory_lengths)
    q = (x @ P["Wq"].T + P["bq"]).view(B, nq, h, dk).transpose(1, 2)
    k = (kv @ P["Wk"].T + P["bk"]).view(B, nkv, h, dk).transpose(1, 2)
    v = (kv @ P["Wv"].T + P["bv"]).view(B, nkv, h, dv).transpose(1, 2)
    score = q @ k.transpose(-1, -2) / math.sqrt(dk)  # (B, h, nq, nkv)
    if o.get("talking_heads_pre"):
        score = torch.einsum("ac,bcij->baij", P["mix_pre"], score)
    i = torch.arange(nq).view(1, 1, nq, 1)
    j = torch.arange(nkv).view(1, 1, 1, nkv)
    mask = (i >= lq.view(B, 1, 1, 1)) | (j >= lkv.view(B, 1, 1, 1))
    if o.get("causal"):
        mask = mask | (j > i)
    if o.get("syntax_bias", True):
        V = o.get("views", 1)
        bk = torch.as_tensor(buckets).long().view(V, B, 1, nq, nkv)
        mask = mask | (bk[0] < 0)
        per_head = o.get("per_head", False)
        rows = h if per_head else 1
        tviews = 1 if (o.get("shared_table") or V == 1) else V
        table = P["table"].reshape(tviews, rows, -1)
        s = P["scale"].reshape(())
        if V > 1:
            wrows = h if o.get("per_head_weights") else 1
            w = torch.softmax(P["view_logits"].reshape(wrows, V), dim=-1)
        bias = 0
        safe = bk.clamp(min=0)
        for view in range(V):
            t = table[0 if tviews == 1 else view]  # (rows, nb)
            tb = t.expand(h, -1) if rows == 1 else t  # (h, nb)
            g = tb[torch.arange(h).view(1, h, 1, 1), safe[view]]  # (B, h, nq, nkv)
            wv = 1.0 if V == 1 else (w[:, view].view(1, -1, 1, 1))
            bias = bias + wv * g
        score = score + s * bias
    full = mask.all(dim=-1, keepdim=True)
    score = score.masked_fill(mask, float("-inf")).masked_fill(full, 0.0)
    p = torch.softmax(score, dim=-1).masked_fill(mask, 0.0)
    if o.get("talking_heads_post"):
        p = torch.einsum("ac,bcij->baij", P["mix_post"], p)
    ctx = (p @ v).transpose(1, 2).reshape(B, nq, h * dv)
    return ctx @ P["Wo"].T + P["bo"]
