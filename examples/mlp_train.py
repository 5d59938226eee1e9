"""A small MLP training loop: on the GPU when there is one, else on the CPU, in a few seconds.

It is dlpt's smallest end-to-end example (the README's first command) and the model behind the
`cpu_example` benchmark workload. Each distinct operation sits on its own source line on
purpose: dlpt attributes cost to lines, so tests and readers can check that, e.g., the
`x @ self.w1` line holds the matmul (forward and backward) and the `torch.relu` line holds the
elementwise activation. Each step copies its batch from (pageable) host memory, and every
`--log-every` steps `loss.item()` waits for the GPU: the copy and the wait show on their lines.

    python examples/mlp_train.py [--steps 60] [--device cpu|cuda]
    python -m dlpt --skip-first 3 examples/mlp_train.py
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
        self.w1 = torch.nn.Parameter(torch.randn(d_in, hidden) * d_in**-0.5)
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


def make_step(
    batch: int = 128,
    d_in: int = 512,
    hidden: int = 1024,
    classes: int = 10,
    seed: int = 0,
    device: str = "cpu",
):
    """Build model and optimizer on `device` and a fixed batch in host memory; return a
    zero-argument step().

    The benchmark (bench/workloads.py) times exactly this step on the CPU, so it and `main`
    profile the same lines.
    """
    torch.manual_seed(seed)
    model = MLP(d_in, hidden, classes).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x_host = torch.randn(batch, d_in)
    y = torch.randint(0, classes, (batch,), device=device)

    def step():
        x = x_host.to(device)
        return train_step(model, opt, x, y)

    return step


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=60)  # dlpt's warm-up waits for 15+ steady steps
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--log-every", type=int, default=5)
    args = ap.parse_args(argv)
    step = make_step(batch=args.batch, hidden=args.hidden, device=args.device)
    t0 = time.perf_counter()
    for i in range(args.steps):
        loss = step()
        if (i + 1) % args.log_every == 0:
            last = loss.item()  # waits for the GPU: shows as a sync on this line
    dt = (time.perf_counter() - t0) / max(args.steps, 1)
    print(f"mlp_train: {args.steps} steps on {args.device}, loss {last:.4f}, {dt * 1e3:.1f} ms/step")


if __name__ == "__main__":
    main()
