"""A warm-up of the program's own making that only the step thread's waits show: for the first
CONTENDED steps two child processes of the program spin beside it (as a DataLoader's workers
filling their queues would), then they are stopped; the step's own work never changes, and it
runs on one thread (no intra-op worker waits on a preempted thread, so only the step thread's
waits for a CPU show the children). A warm-up rule that took a fall of the waits for a busy
host's and not the program's would count those steps. ``python contend.py STEPS CONTENDED``."""

import subprocess
import sys

import torch

steps, contended = int(sys.argv[1]), int(sys.argv[2])
torch.set_num_threads(1)  # the step's thread alone: its own time does not show the children
torch.manual_seed(0)
x = torch.randn(128, 512)
w = torch.nn.Parameter(torch.randn(512, 512) / 512**0.5)
opt = torch.optim.SGD([w], lr=0.0)
spin = "while True: pass"
children = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(2)]
for i in range(steps):
    h = x
    for _ in range(4):
        h = torch.tanh(h @ w)
    h.sum().backward()
    if i + 1 == contended:  # the children stop before the step ends: the next step is calm
        for c in children:
            c.kill()
        for c in children:
            c.wait()
    opt.step()
    opt.zero_grad()
