"""A data-parallel job of known truth for bench/verdicts.py: every rank runs the same step and
all-reduces its gradient (gloo, on the CPU); rank SLEEPER also sleeps MS before its all-reduce
(LINE-SLEEP), so the others wait about that long for it every step. SLEEPER -1: symmetric.
``torchrun --nproc_per_node=2 ranks.py STEPS SLEEPER MS``."""

import sys
import time

import torch
import torch.distributed as dist

steps, sleeper, ms = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
x = torch.randn(64, 256)
w = torch.nn.Parameter(torch.randn(256, 256) / 16)
opt = torch.optim.SGD([w], lr=0.0)
for _ in range(steps):
    y = torch.tanh(x @ w) @ w  # LINE-WORK
    y.sum().backward()
    if rank == sleeper: time.sleep(ms / 1000)  # LINE-SLEEP  # noqa: E701
    dist.all_reduce(w.grad)  # LINE-ALLREDUCE
    opt.step()
    opt.zero_grad()
dist.destroy_process_group()
