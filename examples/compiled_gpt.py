"""The GPT of gpu_gpt.py trained under torch.compile: what dlpt shows for compiled models.

Inductor fuses the model's ops into Triton kernels and launches them from generated code; dlpt
maps each launch back to the model line the fused ops came from, forward and backward. Two
things real training scripts run into are built in, so the report has them to show:

- a graph break: `log_norm()` below calls `torch._dynamo.graph_break()`, standing in for any
  code Dynamo cannot trace (a print, a branch on `.item()`, a C extension);
- a recompilation: every `--short-every`-th batch is shorter (like the last batch of an epoch or
  variable-length data), so the compiled graph's shape guard fails once.

    python -m dlpt --skip-first 5 examples/compiled_gpt.py [--mode reduce-overhead|eager]
    python examples/compiled_gpt.py --steps 20 [--no-break] [--short-every 0]

`--compile-optimizer` also compiles `opt.step` (foreach kernels, attributed to the step line).
"""

import argparse
import time

import torch

from gpu_gpt import CPU_CFG, GPT, GPU_CFG


def log_norm(x: torch.Tensor, enabled: bool) -> torch.Tensor:
    """Activation logging the compiler cannot trace: splits the compiled forward in two."""
    if enabled:
        torch._dynamo.graph_break()
    return x


class LoggedGPT(GPT):
    """GPT with an untraceable logging call between the blocks and the head."""

    def __init__(self, *args, graph_break: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        self.graph_break = graph_break

    def forward(self, ids: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.tok(ids) + self.pos(pos)
        for block in self.blocks:
            x = block(x)
        x = log_norm(x, self.graph_break)
        x = self.ln_f(x)
        logits = self.head(x)
        return torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), targets.flatten())


def make_step(
    mode: str = "default",
    graph_break: bool = True,
    short_every: int = 4,
    compile_optimizer: bool = False,
    seed: int = 0,
):
    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    cfg = dict(GPU_CFG if cuda else CPU_CFG)
    heads = max(1, cfg["width"] // 64)
    torch.manual_seed(seed)
    model = LoggedGPT(
        cfg["vocab"], cfg["seq"], cfg["layers"], cfg["width"], heads, graph_break=graph_break
    ).to(device)
    compiled = model if mode == "eager" else torch.compile(model, mode=None if mode == "default" else mode)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, foreach=True)
    opt_step = torch.compile(opt.step) if compile_optimizer else opt.step
    ids = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["seq"] + 1), device=device)
    short = cfg["seq"] // 2
    calls = 0

    def step():
        nonlocal calls
        calls += 1
        n = short if short_every and calls % short_every == 0 else cfg["seq"]
        inputs, targets = ids[:, :n], ids[:, 1 : n + 1]
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=cuda):
            loss = compiled(inputs, targets)
        loss.backward()
        opt_step()
        return loss

    return step, dict(cfg, device=device, mode=mode)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument(
        "--mode",
        default="default",
        choices=["default", "reduce-overhead", "max-autotune-no-cudagraphs", "eager"],
        help="torch.compile mode (reduce-overhead replays CUDA graphs); eager: not compiled",
    )
    ap.add_argument("--no-break", action="store_true", help="leave out the graph break")
    ap.add_argument(
        "--short-every",
        type=int,
        default=4,
        help="every N-th batch is half as long (recompiles once); 0: never",
    )
    ap.add_argument("--compile-optimizer", action="store_true", help="torch.compile(opt.step) too")
    args = ap.parse_args(argv)
    step, cfg = make_step(args.mode, not args.no_break, args.short_every, args.compile_optimizer)
    t0 = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    last = loss.item()  # waits for the GPU
    dt = (time.perf_counter() - t0) / max(args.steps, 1)
    print(
        f"compiled_gpt: {args.steps} steps on {cfg['device']} ({cfg['mode']}), loss {last:.4f}, "
        f"{dt * 1e3:.1f} ms/step (compilation included)"
    )


if __name__ == "__main__":
    main()
