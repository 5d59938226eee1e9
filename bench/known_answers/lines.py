"""A training loop whose lines have known costs, for bench/verdicts.py: LINE-A, LINE-B and
LINE-C run their matmul KA, KB and KC times a step, each loop on one line whose text does not
change with the counts, so "a line made k times heavier" is one count times k and two runs
still match line for line. ``python lines.py STEPS KA KB KC``."""

import sys

import torch

steps, ka, kb, kc = (int(a) for a in sys.argv[1:5])
torch.manual_seed(0)
x = torch.randn(32, 32)
w = torch.nn.Parameter(torch.randn(32, 32) / 32)
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
