"""Training throughput of the PyTorch counterpart of bench_tagger.cpp:
Embedding + sinusoidal positions + 2 pre-norm TransformerEncoder layers with an
additive per-bucket attention bias (s * T[bucket], as a float attn_mask per
head) + LayerNorm + Linear, cross-entropy with ignore_index=-100; one step =
forward + loss + backward (no optimiser). Prints tokens/s.

  /usr/bin/python3 bench/pytorch_tagger_reference.py [threads]
"""
import math
import sys
import time

import torch
import torch.nn as nn

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
torch.set_num_threads(threads)
torch.manual_seed(1)
B, N, V, C, D, H, F, L = 32, 60, 10000, 17, 128, 4, 256, 2
NB = 11


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D, padding_idx=0)
        pe = torch.zeros(N, D)
        pos = torch.arange(N).unsqueeze(1).float()
        div = torch.exp(torch.arange(0, D, 2).float() * (-math.log(10000.0) / D))
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.register_buffer("pe", pe)
        self.drop = nn.Dropout(0.1)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(D, H, F, 0.1, batch_first=True, norm_first=True) for _ in range(L))
        self.tables = nn.ParameterList(nn.Parameter(torch.zeros(NB)) for _ in range(L))
        self.scales = nn.ParameterList(nn.Parameter(torch.ones(1)) for _ in range(L))
        self.norm = nn.LayerNorm(D)
        self.cls = nn.Linear(D, C)

    def forward(self, ids, buckets, pad):
        x = self.drop(self.emb(ids) + self.pe[: ids.shape[1]])
        masked = buckets < 0
        for layer, t, s in zip(self.layers, self.tables, self.scales):
            bias = s * t[buckets.clamp(min=0)]
            bias = bias.masked_fill(masked, float("-inf"))
            # keep padding query rows finite (PyTorch would give NaN)
            bias = bias.masked_fill(pad.unsqueeze(2), 0.0)
            mask = bias.repeat_interleave(H, dim=0)
            x = layer(x, src_mask=mask)
        return self.cls(self.norm(x))


g = torch.Generator().manual_seed(1)
lengths = torch.randint(20, 61, (B,), generator=g)
ids = torch.zeros(B, N, dtype=torch.long)
labels = torch.full((B, N), -100, dtype=torch.long)
buckets = torch.full((B, N, N), -1, dtype=torch.long)
for b in range(B):
    n = int(lengths[b])
    ids[b, :n] = torch.randint(1, V, (n,), generator=g)
    labels[b, :n] = torch.randint(0, C, (n,), generator=g)
    i = torch.arange(n)
    buckets[b, :n, :n] = (i[:, None] - i[None, :]).abs().clamp(max=NB - 1)
pad = torch.arange(N)[None, :] >= lengths[:, None]
model = Tagger()
model.train()
loss_fn = nn.CrossEntropyLoss(ignore_index=-100, reduction="sum")


def step():
    model.zero_grad()
    out = model(ids, buckets, pad)
    loss = loss_fn(out.reshape(-1, C), labels.reshape(-1))
    loss.backward()


for _ in range(3):
    step()
reps = 10
t0, c0 = time.perf_counter(), time.process_time()
for _ in range(reps):
    step()
dt = (time.perf_counter() - t0) / reps
dc = (time.process_time() - c0) / reps  # CPU time: the fair figure on a shared machine
print(f"pytorch {torch.__version__}, {threads} thread(s): {dt * 1e3:.1f} ms/step wall, {dc * 1e3:.1f} ms/step CPU, "
      f"{int(lengths.sum()) / dt:.0f} tokens/s wall, {int(lengths.sum()) / dc:.0f} tokens/s CPU")
