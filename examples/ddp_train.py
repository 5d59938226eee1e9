"""The GPT of gpu_gpt.py trained on several ranks: DDP, FSDP2 (``fully_shard``) or tensor
parallel (DTensor), on 1..N GPUs with NCCL or on the CPU with gloo. What dlpt shows for
multi-GPU jobs: communication beside compute, exposed communication, stragglers.

    torchrun --standalone --nproc_per_node=2 examples/ddp_train.py [--mode ddp|fsdp2|tp] [--steps 20]
    torchrun --standalone --nproc_per_node=2 -m dlpt --skip-first 5 -o ddp.json examples/ddp_train.py
    python -m dlpt --load 'ddp.rank*.json'          # the report across ranks, again
    python examples/ddp_train.py                       # one process, no launcher needed

--straggle R makes rank R sleep --straggle-ms before each backward (a rank slowed by its host:
data loading, Python, another process), for dlpt to name. --straggle-at forward sleeps before the
forward instead: after --log-steps' synchronisation the GPU has nothing queued there, so the
whole sleep delays the others (before the backward, the forward still queued on the GPU hides
part of it). With --straggle-every 2 only every other step sleeps, so that each rank's own step
times (--log-steps, synchronised) measure what the sleep cost the others, step beside step:
tools/wait_truth.py holds dlpt's wait against that. --straggle-on gpu delays rank R's GPU instead
of its host: a kernel that spins for --straggle-ms (a slower kernel; its host runs on). --log-steps
prints every rank's own step times, to hold dlpt's figures against. --cpu forces gloo on the CPU.
Random tokens, random init: nothing is downloaded. The GPU config is small (4 layers, width 256);
--layers/--width/--seq/--batch scale it.
"""

import argparse
import os
import time
from typing import NamedTuple

import torch
import torch.distributed as dist
from torch import nn

from gpu_gpt import CPU_CFG, GPT, GPU_CFG


def init(cpu: bool) -> tuple[str, int, int]:
    """Join the job torchrun (or SLURM, or nobody: a single process) started; returns
    (device, rank, world size)."""
    for k, v in (("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29511"), ("RANK", "0"), ("WORLD_SIZE", "1")):
        os.environ.setdefault(k, v)
    cuda = torch.cuda.is_available() and not cpu
    if cuda:
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        dist.init_process_group("nccl", device_id=torch.device("cuda", local))
        return f"cuda:{local}", dist.get_rank(), dist.get_world_size()
    dist.init_process_group("gloo")
    return "cpu", dist.get_rank(), dist.get_world_size()


def wrap(model: nn.Module, mode: str, device: str, world: int) -> nn.Module:
    """The model as ``mode`` distributes it."""
    if mode == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP

        return DDP(model, device_ids=[torch.device(device).index] if device.startswith("cuda") else None)
    from torch.distributed.device_mesh import init_device_mesh

    mesh = init_device_mesh(device.split(":")[0], (world,))
    if mode == "fsdp2":
        from torch.distributed.fsdp import fully_shard

        for block in model.blocks:
            fully_shard(block, mesh=mesh)
        return fully_shard(model, mesh=mesh)
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    # Megatron-style MLP: the first linear split by columns, the second by rows (one all-reduce
    # per block in the forward, one in the backward); attention and embeddings stay replicated.
    for block in model.blocks:
        parallelize_module(block.mlp, mesh, {"fc": ColwiseParallel(), "out": RowwiseParallel()})
    return model


class Setup(NamedTuple):
    model: nn.Module  # as args.mode distributes it
    opt: torch.optim.Optimizer
    inputs: torch.Tensor  # this rank's batch
    targets: torch.Tensor
    device: str
    rank: int
    world: int
    cfg: dict  # the model sizes used


def setup(args: argparse.Namespace) -> Setup:
    """Join the job and build what a step needs. ``args`` has ``cpu``, ``mode`` and the model
    sizes (None: the device's default). tools/ddp_paired.py builds its step here too."""
    device, rank, world = init(args.cpu)
    cuda = device.startswith("cuda")
    cfg = dict(GPU_CFG if cuda else CPU_CFG)
    cfg.update({k: getattr(args, k) for k in cfg if getattr(args, k) is not None})
    torch.manual_seed(0)  # the same initial weights on every rank
    model = GPT(cfg["vocab"], cfg["seq"], cfg["layers"], cfg["width"], max(1, cfg["width"] // 64)).to(device)
    model = wrap(model, args.mode, device, world)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=cuda or None)
    # Data parallel: each rank its own batch; tensor parallel: every rank the same one.
    gen = torch.Generator(device=device).manual_seed(0 if args.mode == "tp" else 1 + rank)
    ids = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["seq"] + 1), device=device, generator=gen)
    inputs, targets = ids[:, :-1], ids[:, 1:]
    return Setup(model, opt, inputs, targets, device, rank, world, cfg)


def spin_cycles(ms: float) -> int:
    """GPU cycles that ``torch.cuda._sleep`` spins for ``ms`` on this GPU (its clock measured
    here): a kernel that keeps the GPU busy that long, a slower kernel on demand."""
    probe = 10_000_000
    torch.cuda._sleep(probe)  # warm: the first launch loads the kernel
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(probe)
    end.record()
    end.synchronize()
    return int(probe * ms / max(start.elapsed_time(end), 1e-3))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=("ddp", "fsdp2", "tp"), default="ddp")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--cpu", action="store_true", help="gloo on the CPU even when there are GPUs")
    ap.add_argument(
        "--straggle",
        type=int,
        default=-1,
        metavar="R",
        help="rank R is slow (where: --straggle-at; what: --straggle-on)",
    )
    ap.add_argument("--straggle-ms", type=float, default=50.0)
    ap.add_argument("--straggle-every", type=int, default=1, metavar="N", help="sleep on every Nth step only")
    ap.add_argument(
        "--straggle-at", choices=("forward", "backward"), default="backward", help="where rank R sleeps"
    )
    ap.add_argument(
        "--straggle-on",
        choices=("host", "gpu"),
        default="host",
        help="what is slow on rank R: its host (a sleep) or its GPU (a kernel spinning as long)",
    )
    ap.add_argument(
        "--log-steps",
        action="store_true",
        help="each rank prints its own step times (synchronized: the GPU's work included)",
    )
    for k in ("layers", "width", "seq", "batch", "vocab"):
        ap.add_argument(f"--{k}", type=int, help=f"default {GPU_CFG[k]} on GPU, {CPU_CFG[k]} on CPU")
    args = ap.parse_args(argv)
    if args.straggle_every < 1:
        ap.error("--straggle-every must be >= 1")

    model, opt, inputs, targets, device, rank, world, _ = setup(args)
    cuda = device.startswith("cuda")
    if args.straggle_on == "gpu" and not cuda:
        ap.error("--straggle-on gpu needs a GPU")
    spin = spin_cycles(args.straggle_ms) if args.straggle_on == "gpu" and rank == args.straggle else 0

    t0 = time.perf_counter()
    for i in range(args.steps):
        ts = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        straggles = rank == args.straggle and i % args.straggle_every == 0
        if straggles and args.straggle_at == "forward":  # a slow host (data loading), or a slower kernel
            torch.cuda._sleep(spin) if spin else time.sleep(args.straggle_ms / 1e3)
        with torch.autocast(device_type="cuda" if cuda else "cpu", dtype=torch.bfloat16, enabled=cuda):
            loss = model(inputs, targets)
        if straggles and args.straggle_at == "backward":
            torch.cuda._sleep(spin) if spin else time.sleep(args.straggle_ms / 1e3)
        loss.backward()
        opt.step()
        if args.log_steps:
            if cuda:
                torch.cuda.synchronize()
            print(f"ddp_train: rank {rank} step {i} {(time.perf_counter() - ts) * 1e3:.2f} ms", flush=True)
    mean = loss.detach().float()
    dist.all_reduce(mean)  # the loss averaged over ranks, for the log line
    dt = (time.perf_counter() - t0) / max(args.steps, 1)
    if rank == 0:
        print(
            f"ddp_train: {args.mode} on {world} rank{'s' if world != 1 else ''} ({device.split(':')[0]}), "
            f"{args.steps} steps, loss {mean.item() / world:.4f}, {dt * 1e3:.1f} ms/step"
        )
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
