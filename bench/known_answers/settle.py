"""Steps whose time falls for a known number of steps, then stays flat, for bench/verdicts.py:
each step does a little work and sleeps 4 ms plus EXTRA ms falling geometrically to ~0 over FALL
steps (a sleep is what the step takes, whatever else the host runs).
``python settle.py STEPS FALL EXTRA``."""

import math
import sys
import time

import torch

steps, fall, extra = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
w = torch.nn.Parameter(torch.ones(32, 32))
opt = torch.optim.SGD([w], lr=0.0)
for i in range(steps):
    (w @ w).sum().backward()
    settling = extra * math.exp(-3.0 * i / fall) if i < fall else 0.0
    time.sleep((4.0 + settling) / 1000)
    opt.step()
    opt.zero_grad()
