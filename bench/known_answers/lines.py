"""A training loop whose lines have known costs, for bench/verdicts.py: LINE-A, LINE-B and
LINE-C run their matmul KA, KB and KC times a step, each loop on one line whose text does not
change with the counts, so "a line made k times heavier" is one count times k and two runs
still match line for line. ``python lines.py STEPS KA KB KC``; with ``KNOWN_DEVICE=cuda`` the
same lines run on the GPU (512x512 matrices there: each matmul a kernel of its own, measured by
its GPU time).

Each matmul costs the same whatever line it is on: ``w`` is a scaled orthogonal matrix, so the
values stay near 1 through hundreds of matmuls, and denormals are flushed to zero. (With ``w`` a
small random matrix they shrank through the denormal range somewhere in LINE-B, where a 32x32
matmul took 141 us instead of 7, and then to zero: LINE-B made 1.5x heavier measured 1.19x,
LINE-A 2x heavier 2.01x.)"""

import os
import sys

import torch

steps, ka, kb, kc = (int(a) for a in sys.argv[1:5])
torch.manual_seed(0)
torch.set_flush_denormal(True)
device = os.environ.get("KNOWN_DEVICE", "cpu")
n = 512 if device == "cuda" else 32
x = torch.randn(n, n).to(device)
w = torch.nn.Parameter((torch.linalg.qr(torch.randn(n, n))[0] * 1.5).to(device))
opt = torch.optim.SGD([w], lr=0.0)
for _ in range(steps):
    a = x
    for _ in range(ka): a = torch.tanh(a @ w)  # LINE-A  # noqa: E701
    b = a
    for _ in range(kb): b = torch.tanh(b @ w)  # LINE-B  # noqa: E701
    c = b
    for _ in range(kc): c = torch.tanh(c @ w)  # LINE-C  # noqa: E701
    c.sum().backward()
    opt.step()
    opt.zero_grad()
