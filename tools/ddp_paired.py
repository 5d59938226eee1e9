"""What profiling costs a multi-GPU training step, measured paired in each rank's process.

    torchrun --standalone --nproc_per_node=2 tools/ddp_paired.py [--mode ddp|fsdp2|tp]
             [--rounds 12] [--chunk 10] [--cpu] [--out DIR] [model options of examples/ddp_train.py]

Separate runs on shared machines differ by more than the overhead measured (CONTRIBUTING.md,
Benchmarks), so, as bench/paired.py does for one GPU: each round runs, on every rank at once, an
unprofiled chunk of steps and right after it a profiled one (``dlpt.profile()`` started before
and stopped after the chunk's timer); the ratio of the two is the round's ratio. The ``aa`` mode
profiles nothing in its second chunk: its spread is the noise floor. A barrier before every chunk
lines the ranks up (one rank still stopping its profile would otherwise slow the others' next
chunk). Rank 0 prints the median ratio over rounds (min, max) of every rank and writes
<out>/ddp-paired-<gpu>-<date>.json and .md when --out is given.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "examples"))
if REPO not in sys.path:
    sys.path.append(REPO)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from ddp_train import setup  # noqa: E402

import dlpt  # noqa: E402

MODES = ("aa", "dlpt", "dlpt_nosampler", "cupti_floor")


def profiler(mode: str):
    """What profiles the second chunk of a round: nothing (aa), dlpt, dlpt without its host
    sampler, or the CUPTI floor (the native core's callbacks and activity kinds with empty
    handlers: what any CUPTI tracer costs, bench/paired.py's cupti_floor)."""
    if mode == "cupti_floor":
        sys.path.insert(0, REPO)
        from bench.paired import Native

        return Native(floor=2)
    return dlpt.profile(calibrate=False, **({"sample_hz": 0} if mode == "dlpt_nosampler" else {}))


def build(args: argparse.Namespace):
    model, opt, inputs, targets, device, rank, world, cfg = setup(args)
    cuda = device.startswith("cuda")

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cuda" if cuda else "cpu", dtype=torch.bfloat16, enabled=cuda):
            loss = model(inputs, targets)
        loss.backward()
        opt.step()

    return step, cuda, rank, world, cfg


def chunk(step, n: int, cuda: bool) -> float:
    """Seconds per step over ``n`` steps, the ranks lined up first."""
    if cuda:
        torch.cuda.synchronize()
    dist.barrier()
    t = time.perf_counter()
    for _ in range(n):
        step()
    if cuda:
        torch.cuda.synchronize()
    return (time.perf_counter() - t) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=("ddp", "fsdp2", "tp"), default="ddp")
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--chunk", type=int, default=10, help="steps per chunk")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--cpu", action="store_true")
    ap.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    ap.add_argument("--out", help="directory for the .json and .md results (rank 0)")
    for k in ("layers", "width", "seq", "batch", "vocab"):
        ap.add_argument(f"--{k}", type=int)
    args = ap.parse_args()

    step, cuda, rank, world, cfg = build(args)
    for _ in range(args.warmup):
        step()
    modes = [m for m in MODES if m in args.modes]
    ratios: dict[str, list[float]] = {m: [] for m in modes}
    base: dict[str, list[float]] = {m: [] for m in modes}
    for _ in range(args.rounds):
        for mode in modes:
            a = chunk(step, args.chunk, cuda)
            if mode == "aa":
                b = chunk(step, args.chunk, cuda)
            elif mode == "cupti_floor":
                with profiler(mode):
                    b = chunk(step, args.chunk, cuda)
            else:
                prof = profiler(mode)
                prof.start()
                b = chunk(step, args.chunk, cuda)
                prof.stop()
                if cuda and not prof.session.meta["gpu"]["enabled"]:  # a CPU-only profile would flatter dlpt
                    raise RuntimeError(f"dlpt ran without GPU capture: {prof.session.meta['gpu']['reason']}")
            ratios[mode].append(b / a)
            base[mode].append(a)
    mine = {m: {"ratios": r, "base_s": base[m]} for m, r in ratios.items()}
    every: list[dict] = [{} for _ in range(world)]
    dist.all_gather_object(every, mine)
    if rank == 0:
        report(args, cfg, cuda, world, every)
    dist.barrier()
    dist.destroy_process_group()


def report(args: argparse.Namespace, cfg: dict, cuda: bool, world: int, every: list[dict]) -> None:
    gpu = torch.cuda.get_device_name(0) if cuda else "cpu"
    lines = [
        f"dlpt paired overhead, {args.mode} on {world} ranks ({gpu}), torch {torch.__version__}, "
        f"{args.rounds} rounds of {args.chunk} steps, config {cfg}",
        "",
        "| rank | mode | base ms/step | ratio median | min | max |",
        "|---|---|---|---|---|---|",
    ]
    for r, res in enumerate(every):
        for m in res:
            rr = res[m]["ratios"]
            ms = statistics.median(res[m]["base_s"]) * 1e3
            mid = statistics.median(rr)
            lines.append(f"| {r} | {m} | {ms:.2f} | **{mid:.3f}x** | {min(rr):.3f}x | {max(rr):.3f}x |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        stem = f"ddp-paired-{gpu.replace(' ', '-')}-{datetime.datetime.now():%Y-%m-%d-%H%M%S}"
        with open(os.path.join(args.out, stem + ".md"), "w") as f:
            f.write(text + "\n")
        with open(os.path.join(args.out, stem + ".json"), "w") as f:
            json.dump({"args": vars(args), "config": cfg, "gpu": gpu, "ranks": every}, f, indent=1)


if __name__ == "__main__":
    main()
