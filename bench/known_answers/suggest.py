"""Programs with one known inefficiency each, and the same program with the fix dlpt's suggestion
asks for, for bench/verdicts.py's "suggest" part: the suggestion's estimated gain against the
gain measured by applying it.

    python suggest.py CASE [--fixed] [--steps N]    # one variant, profiled by dlpt --step-on step
    python suggest.py CASE --paired ROUNDS           # both variants in this one process,
                                                     # alternated; prints the measured gain (JSON)

Every step is a call of ``step()``. The fix is the suggestion's own action, nothing else, so the
gain it brings is the truth the estimate is judged against. ``--paired`` times chunks of steps
by the program's own clock (a synchronize at each chunk's end), unfixed and fixed in turn (the
order alternating each round), and reports the median of the rounds' differences.

Cases (``CASES``; cpu: runs without a GPU):
  sync        a .item() every step after 2 ms of host work     -> keep the loss on the GPU
  loader      3 ms of host preparation per batch, 1.5 ms of GPU -> DataLoader workers (3)
  launch      300 tiny kernels a step                          -> a CUDA graph replay
  fp32        fp32 matmuls                                     -> bf16 autocast
  attention   attention written out by hand (fwd + bwd)        -> F.scaled_dot_product_attention
  optimizer   AdamW over 300 small parameters, per parameter   -> fused=True
  optimizer_cpu  the same on the CPU                           -> foreach=True
  optimizer_few_cpu  AdamW over 6 parameters on the CPU         -> foreach=True
  readme_cpu  the README's command's model: SGD, per parameter -> foreach=True
  pinned      a pageable 64 MiB host-to-device copy a step     -> pin_memory + non_blocking
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import torch
import torch.nn.functional as F

Step = Callable[[], None]
CUDA = torch.device("cuda") if torch.cuda.is_available() else None


def spin(seconds: float) -> None:
    """Host work of a known duration that launches nothing (a batch's preprocessing)."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def sync_case(fixed: bool) -> Step:
    a = torch.randn(2048, 2048, device=CUDA)
    total = torch.zeros((), device=CUDA)

    def one() -> None:
        nonlocal total
        spin(0.002)
        loss = (a @ a).tanh().mean()
        for _ in range(5):
            loss = loss + (a @ a).mean()
        if fixed:
            total = total + loss.detach()
        else:
            total += loss.item()  # @sync

    return one


class Batches(torch.utils.data.IterableDataset):
    def __iter__(self) -> Iterator[torch.Tensor]:
        while True:
            spin(0.003)
            yield torch.ones(256, 256)


def loader_case(fixed: bool) -> Step:
    loader = torch.utils.data.DataLoader(Batches(), batch_size=None, num_workers=3 if fixed else 0)
    batches = iter(loader)
    a = torch.randn(4096, 4096, device=CUDA, dtype=torch.bfloat16) / 64

    def one() -> None:
        x = next(batches).to(CUDA)  # @loader
        y = a
        for _ in range(6):
            y = a @ y
        (y.sum() + x.sum()).detach()

    return one


def launch_case(fixed: bool) -> Step:
    x = torch.randn(256, device=CUDA)

    def kernels() -> torch.Tensor:
        y = x
        for _ in range(300):
            y = y * 1.0001 + 0.0001
        return y

    if not fixed:
        return lambda: kernels().sum()  # @launch (one() must return None: .sum() launches too)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        kernels()  # warm before capture
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        kernels()
    return graph.replay


def fp32_case(fixed: bool) -> Step:
    a = torch.randn(4096, 4096, device=CUDA)

    def one() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=fixed):
            y = a
            for _ in range(4):
                y = a @ y  # @fp32
            y.sum()

    return one


def attention_case(fixed: bool) -> Step:
    shape = (8, 12, 1024, 64)
    q, k, v = (torch.randn(shape, device=CUDA, dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    mask = torch.ones(1024, 1024, device=CUDA, dtype=torch.bool).tril()

    def by_hand() -> torch.Tensor:
        att = (q @ k.transpose(-2, -1)) * (1.0 / 8.0)
        att = att.masked_fill(~mask, float("-inf"))
        att = F.softmax(att, dim=-1)
        return att @ v

    def one() -> None:
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True) if fixed else by_hand()
        y.sum().backward()

    return one


def _optimizer_case(fixed: bool, device: torch.device | None, count: int = 300, **fix: bool) -> Step:
    params = [torch.nn.Parameter(torch.randn(64, 64, device=device)) for _ in range(count)]
    opt = torch.optim.AdamW(params, lr=1e-3, **(fix if fixed else {"foreach": False}))
    for p in params:
        p.grad = torch.randn_like(p)

    def one() -> None:
        opt.step()

    return one


def optimizer_case(fixed: bool) -> Step:
    return _optimizer_case(fixed, CUDA, fused=True)


def optimizer_cpu_case(fixed: bool) -> Step:
    return _optimizer_case(fixed, None, foreach=True)


def optimizer_few_cpu_case(fixed: bool) -> Step:
    return _optimizer_case(fixed, None, count=6, foreach=True)


def readme_cpu_case(fixed: bool) -> Step:
    """The README's command's model and step (examples/mlp_train.py), on the CPU."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    import mlp_train

    torch.manual_seed(0)
    model = mlp_train.MLP(512, 1024, 10)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, foreach=fixed)
    x, y = torch.randn(128, 512), torch.randint(0, 10, (128,))

    def one() -> None:
        mlp_train.train_step(model, opt, x, y)

    return one


def pinned_case(fixed: bool) -> Step:
    host = torch.randn(16 * 1024 * 1024)
    if fixed:
        host = host.pin_memory()

    def one() -> None:
        x = host.to(CUDA, non_blocking=fixed)  # @copy
        (x * 2).sum()

    return one


CASES: dict[str, Callable[[bool], Step]] = {
    "sync": sync_case,
    "loader": loader_case,
    "launch": launch_case,
    "fp32": fp32_case,
    "attention": attention_case,
    "optimizer": optimizer_case,
    "optimizer_cpu": optimizer_cpu_case,
    "optimizer_few_cpu": optimizer_few_cpu_case,
    "readme_cpu": readme_cpu_case,
    "pinned": pinned_case,
}


def finish() -> None:
    if CUDA is not None:
        torch.cuda.synchronize()


def step(one: Step) -> None:
    one()


def chunk_ns(one: Step, steps: int) -> float:
    finish()
    t0 = time.perf_counter_ns()
    for _ in range(steps):
        one()
    finish()
    return (time.perf_counter_ns() - t0) / steps


def paired(case: str, rounds: int, steps: int) -> dict:
    """Each round: a chunk of ``steps`` steps of each variant, in alternating order."""
    variants = {False: CASES[case](False), True: CASES[case](True)}
    for one in variants.values():
        chunk_ns(one, steps)  # warm: allocator, cuBLAS, the DataLoader's workers
    per_round = []
    for r in range(rounds):
        times = {}
        for fixed in (False, True) if r % 2 == 0 else (True, False):
            times[fixed] = chunk_ns(variants[fixed], steps)
        per_round.append({"unfixed_ns": times[False], "fixed_ns": times[True]})
    gains = [r["unfixed_ns"] - r["fixed_ns"] for r in per_round]
    return {
        "case": case,
        "gain_ns": statistics.median(gains),
        "unfixed_ns": statistics.median(r["unfixed_ns"] for r in per_round),
        "rounds": per_round,
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("case", choices=sorted(CASES))
    p.add_argument("--fixed", action="store_true")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--paired", type=int, default=0, metavar="ROUNDS")
    args = p.parse_args()
    if args.paired:
        print(json.dumps(paired(args.case, args.paired, args.steps)))
        return
    one = CASES[args.case](args.fixed)
    for _ in range(args.steps):
        step(one)
    finish()


if __name__ == "__main__":
    main()
