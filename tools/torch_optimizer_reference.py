#!/usr/bin/python3
"""Prints the reference numbers pasted into tests/train/test_optimizers.cpp:
three steps of torch.optim (PyTorch 1.13, float64) on one 2x2 parameter with
fixed gradients. Run with Debian's python3-torch: /usr/bin/python3 tools/torch_optimizer_reference.py"""
import torch

P0 = [[0.5, -1.25], [2.0, 0.75]]
GRADS = [
    [[0.1, -0.2], [0.3, 0.05]],
    [[-0.4, 0.25], [0.0, 1.5]],
    [[0.2, 0.2], [-0.6, -0.1]],
]

CASES = {
    "sgd_momentum": lambda p: torch.optim.SGD([p], lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01),
    "sgd_nesterov": lambda p: torch.optim.SGD([p], lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    "adam": lambda p: torch.optim.Adam([p], lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1),
    "adamw": lambda p: torch.optim.AdamW([p], lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
}

for name, make in CASES.items():
    p = torch.tensor(P0, dtype=torch.float64, requires_grad=True)
    opt = make(p)
    print(name)
    for g in GRADS:
        p.grad = torch.tensor(g, dtype=torch.float64)
        opt.step()
        print("  {" + ", ".join("%.17g" % v for v in p.detach().flatten().tolist()) + "},")
