"""A small MLP training loop that runs on the CPU anywhere in a few seconds.

It is dlpt's smallest end-to-end example and the model behind the `cpu_example` benchmark
workload. Each distinct operation sits on its own source line on purpose: dlpt attributes
cost to lines, so tests and readers can check that, e.g., the `x @ self.w1` line holds the
matmul and the `torch.relu` line holds the elementwise activation.

    python examples/cpu_train.py [--steps 20]
    python -m dlpt examples/cpu_train.py
"""
import argparse
import time

import torch
import torch.nn.functional as F


class MLP(torch.nn.Module):
    """Two-layer MLP: an explicit matmul for layer 1, an nn.Linear module for the head."""

    def __init__(self, d_in: int, hidden: int, classes: int):
        super().__init__()
        # Explicit parameters (not nn.Linear) so the matmul is a visible `@` on a user line.
        self.w1 = torch.nn.Parameter(torch.randn(d_in, hidden) * d_in ** -0.5)
        self.b1 = torch.nn.Parameter(torch.zeros(hidden))
        self.norm = torch.nn.LayerNorm(hidden)
        self.head = torch.nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x @ self.w1
        h = h + self.b1
        h = torch.relu(h)
        h = self.norm(h)
        return self.head(h)


def train_step(model: MLP, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor):
    """One optimisation step; returns the loss tensor (no .item(): that would be a sync on GPU)."""
    opt.zero_grad(set_to_none=True)
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    loss.backward()
    opt.step()
    return loss


def make_step(batch: int = 128, d_in: int = 512, hidden: int = 1024, classes: int = 10,
              seed: int = 0):
    """Build model, optimizer and a fixed batch on the CPU; return a zero-argument step().

    The benchmark (bench/workloads.py) times exactly this step, so it and `main` profile the
    same lines.
    """
    torch.manual_seed(seed)
    model = MLP(d_in, hidden, classes)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, d_in)
    y = torch.randint(0, classes, (batch,))

    def step():
        return train_step(model, opt, x, y)
    return step


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=1024)
    args = ap.parse_args(argv)
    # Always the CPU, even where a GPU exists: this example exists to show CPU-only profiling.
    step = make_step(batch=args.batch, hidden=args.hidden)
    t0 = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    dt = (time.perf_counter() - t0) / max(args.steps, 1)
    print(f"cpu_train: {args.steps} steps, loss {loss.item():.4f}, {dt * 1e3:.1f} ms/step")


if __name__ == "__main__":
    main()
