"""Synthetic sessions of the ranks of one job, in the documented format (docs/session-format.md),
for the communication and cross-rank tests.

- :func:`ddp_gpu`: one rank of a DDP training step on a GPU: two linear layers whose backward
  holds the gradient bucket's NCCL all-reduce (as DDP issues it, under the backward of the
  layer that filled the bucket), an optimizer step, meta.distributed and the native core's
  communication union and exposed part (per step too, as meta.gpu_steps). ``comm_ns`` sets that
  rank's all-reduce kernel time, ``fc2_ns`` its compute, ``blocked_ns`` its host's time blocked
  in a synchronising call per step, ``exposed_ns`` its communication with nothing else running
  (a rank waiting for another has both), ``sleep_ns`` a host line of its own (``time.sleep``).
- :func:`gloo_cpu`: one rank of a CPU job: a line whose ``torch.distributed.all_reduce`` call
  dlpt wrapped (its wait), a DDP all-reduce issued by the C++ reducer (bytes unknown).
"""

from __future__ import annotations

from typing import Any

from dlpt.model.session import VERSION, Session
from tests.sessions import Builder

TRAIN = "/home/user/proj/train.py"
MODEL = "/home/user/proj/model.py"
SOURCES = {
    TRAIN: {
        "30": "        loss = model(x).square().mean()",
        "31": "        loss.backward()",
        "32": "        opt.step()",
        "33": "        time.sleep(0.02)",
    },
    MODEL: {"10": "        h = self.fc1(x)", "11": "        return self.fc2(h)"},
}
STEPS = 4
ALLREDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


class _Table(Builder):
    """The shared builder with metrics given as run totals, and rank-style kernels."""

    def __init__(self) -> None:
        super().__init__(steps=1)

    def kernel(  # type: ignore[override]  # totals over STEPS calls, a real NCCL-style full name
        self, parent: int, name: str, ns: int, n: int = STEPS, **m: int
    ) -> int:
        return self.add(
            parent,
            "kernel",
            name.split("(")[0],
            x={"full_name": name, "device": 0, "grid": [8, 1, 1], "block": [256, 1, 1]},
            kernels=n,
            gpu_ns=ns,
            min_ns=ns // n,
            max_ns=ns // n,
            **m,
        )


def _meta(rank: int, world: int, gpu: bool, step_ns: int, extra: dict[str, Any]) -> dict[str, Any]:
    return {
        "argv": ["train.py", "--ddp"],
        "torch": "2.13.0",
        "dlpt": "0.1.0",
        "started_at": "2026-01-01T12:00:00+00:00",
        "wall_ns": step_ns * STEPS,
        "devices": [{"index": 0, "name": "NVIDIA H200", "capability": "9.0"}] if gpu else [],
        "gpu": {"enabled": gpu, "reason": None if gpu else "no CUDA GPU available"},
        "steps": {
            "profiled": STEPS,
            "seen": STEPS + 2,
            "skip_first": 2,
            "active": None,
            "source": "optimizer",
        },
        "step_wall_ns": [step_ns] * STEPS,
        "distributed": {
            "rank": rank,
            "world_size": world,
            "local_rank": rank % 2,
            "hostname": f"node{rank // 2}",
            "device": rank % 2 if gpu else None,
            "backends": ["nccl" if gpu else "gloo"],
            "source": "env",
            "run_id": "torchrun:test:0",
        },
        "sources": SOURCES,
        **extra,
    }


def ddp_gpu(
    rank: int,
    world: int = 4,
    comm_ns: int = 2_000_000,
    fc2_ns: int = 6_000_000,
    blocked_ns: int = 300_000,
    exposed_ns: int | None = None,
    sleep_ns: int = 0,
    host_pace: float = 0.0,
    sleep_held_gil: bool = False,
) -> Session:
    """One rank's session: per step 4 ms fc1 forward, ``fc2_ns`` fc2, 8 ms backward, a 25 MiB
    bf16 all-reduce taking ``comm_ns`` (half of it exposed unless ``exposed_ns`` says), 1 ms
    optimizer whose ``.item()``-style sync blocks the host ``blocked_ns``, a ``time.sleep``
    line of ``sleep_ns`` when given (``sleep_held_gil``: its thread held the GIL all that time,
    on the CPU for 2% of it: not a sleep, a thread the host kept off the CPU). ``host_pace`` >
    0: sampled host time on the model's lines (10 ms, 12 ms) and the optimizer's (3 ms, its
    sync added), each times ``host_pace`` (a rank whose CPU is that much slower), per step."""
    t = _Table()
    s = STEPS
    exposed = comm_ns // 2 if exposed_ns is None else exposed_ns
    main = t.add(0, "frame", "main", TRAIN, 30)
    for line, _layer, fwd_ns, bwd_ns, bucket in (
        (10, "fc1", 4_000_000, 8_000_000, False),
        (11, "fc2", fc2_ns, 8_000_000, True),
    ):
        fr = t.add(main, "frame", "forward", MODEL, line)
        if host_pace:
            t.nodes[fr]["m"]["host_ns"] = int((10_000_000 + 2_000_000 * (line - 10)) * host_pace) * s
        op = t.add(fr, "op", "aten::linear", calls=s, cpu_ns=30_000 * s)
        t.kernel(t.add(op, "phase", "<forward>"), "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", fwd_ns * s)
        bw = t.add(t.add(op, "phase", "<backward>"), "op", "AddmmBackward0", calls=s, cpu_ns=20_000 * s)
        t.kernel(bw, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n", bwd_ns * s, 2 * s)
        if bucket:  # DDP's bucket all-reduce, issued when fc2's gradient filled the bucket
            ar = t.add(
                bw,
                "op",
                "c10d::allreduce_",
                x={
                    "collective": "allreduce",
                    "dtype": "BFloat16",
                    "pg_name": "0",
                    "pg_desc": "default_pg",
                    "world_size": world,
                },
                calls=s,
                cpu_ns=15_000 * s,
                comm_calls=s,
                comm_in_bytes=25 * 2**20 * s,
                comm_out_bytes=25 * 2**20 * s,
            )
            t.kernel(ar, ALLREDUCE, comm_ns * s, comm_ns=comm_ns * s)
            t.nodes[-1]["x"].update(collective="allreduce", algorithm="RING", protocol="LL", dtype="bf16")
    step_line = t.add(0, "frame", "main", TRAIN, 32)
    if host_pace:  # the optimizer's host work, and the time its sync blocked (sampled too)
        t.nodes[step_line]["m"]["host_ns"] = (int(3_000_000 * host_pace) + blocked_ns) * s
    opt = t.add(step_line, "op", "aten::_fused_adamw_", calls=s, cpu_ns=50_000 * s)
    t.kernel(opt, "multi_tensor_apply_kernel<FusedAdamW>", 1_000_000 * s)
    t.add(step_line, "sync", "cudaStreamSynchronize", sync_ns=blocked_ns * s, api_ns=blocked_ns * s, count=s)
    if sleep_ns:
        held = sleep_ns * s if sleep_held_gil else 0
        t.add(0, "frame", "main", TRAIN, 33, host_ns=sleep_ns * s, host_gil_ns=held, host_cpu_ns=held // 50)
    busy = 4_000_000 + fc2_ns + 16_000_000 + comm_ns + 1_000_000
    span = max(40_000_000, busy)
    row = {"span_ns": span, "busy_ns": busy, "idle_before_ns": 0, "idle_after_ns": span - busy}
    extra = {
        "gpu_busy_ns": {"0": busy * s},
        "gpu_comm_ns": {"0": comm_ns * s},
        "gpu_comm_exposed_ns": {"0": exposed * s},
        "gpu_steps": {"0": [dict(row, comm_ns=comm_ns, exposed_ns=exposed) for _ in range(s)]},
    }
    session = {
        "format": "dlpt-session",
        "version": VERSION,
        "meta": _meta(rank, world, True, 40_000_000, extra),
        "nodes": t.nodes,
    }
    return Session.from_dict(session)


def gloo_cpu(
    rank: int,
    world: int = 2,
    wait_ns: int = 1_000_000,
    step_ns: int = 0,
    in_one_step: bool = False,
    floor_ns: int = 0,
) -> Session:
    """One rank of a CPU job: compute, a wrapped ``all_reduce`` that waited ``wait_ns`` per
    step, a DDP bucket all-reduce (bytes unknown) under the backward; ``step_ns``: the
    optimizer's op time per step (its line, 32), all of it in one step if ``in_one_step`` (a
    thread preempted there once) else the same in every step. Op times carry their per-step
    second moments (node field ``q``) when ``step_ns`` is given; ``floor_ns``: the optimizer
    line's floor per step (``cpu_floor_ns``: its calls at their fastest), none when 0."""
    t = _Table()
    s = STEPS
    main = t.add(0, "frame", "main", TRAIN, 30)
    mm = t.add(main, "op", "aten::linear", calls=s, cpu_ns=3_000_000 * s)
    bw = t.add(t.add(mm, "phase", "<backward>"), "op", "AddmmBackward0", calls=s, cpu_ns=2_000_000 * s)
    t.add(bw, "op", "c10d::allreduce_", calls=s, cpu_ns=100_000 * s)
    if step_ns:
        opt = t.add(
            t.add(0, "frame", "main", TRAIN, 32), "op", "aten::_foreach_add_", calls=s, cpu_ns=step_ns * s
        )
        t.nodes[opt]["q"] = {"cpu_ns": (step_ns * s) ** 2 if in_one_step else step_ns**2 * s}
        if floor_ns:
            t.nodes[opt]["m"]["cpu_floor_ns"] = floor_ns * s
        for n in t.nodes:
            if "cpu_ns" in n["m"] and "q" not in n:
                n["q"] = {"cpu_ns": n["m"]["cpu_ns"] ** 2 // s}  # the same every step
    line = t.add(0, "frame", "main", TRAIN, 31)
    call = t.add(
        line,
        "op",
        "torch.distributed.all_reduce",
        x={
            "collective": "allreduce",
            "dtype": "Float",
            "pg_name": "0",
            "pg_desc": "default_pg",
            "world_size": world,
            "backend": "gloo",
        },
        calls=s,
        comm_calls=s,
        comm_in_bytes=4000 * s,
        comm_out_bytes=4000 * s,
        comm_wait_ns=wait_ns * s,
    )
    t.add(call, "phase", "<forward>", cpu_ns=wait_ns * s)
    t.add(call, "op", "c10d::allreduce_", calls=s, cpu_ns=50_000 * s)
    session = {
        "format": "dlpt-session",
        "version": VERSION,
        "meta": _meta(rank, world, False, 10_000_000, {}),
        "nodes": t.nodes,
    }
    return Session.from_dict(session)


def with_collectives(
    session: Session,
    kernels: list[tuple[int, int, float]],
    name: str = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
) -> Session:
    """``session`` with ``meta.gpu_collectives`` as the native core writes it: each of its STEPS
    epochs (numbered from 3: warm-up epochs came first) runs ``kernels``, each (start offset in
    the step, duration, exposed share of every sixteenth), on this rank's own clock (a step
    every 40 ms from an arbitrary origin)."""
    cols: dict[str, list[Any]] = {k: [] for k in ("device", "epoch", "name", "start_ns", "dur_ns", "exposed")}
    for step in range(STEPS):
        for offset, dur, share in kernels:
            cols["device"].append(0)
            cols["epoch"].append(3 + step)
            cols["name"].append(0)
            cols["start_ns"].append(10**15 + step * 40_000_000 + offset)
            cols["dur_ns"].append(dur)
            cols["exposed"].append(bytes([round(255 * share)] * 16).hex())
    d = session.to_dict()
    d["meta"]["gpu_collectives"] = {"names": [name], **cols}
    return Session.from_dict(d)


def render_text_of(rep: Any) -> str:
    """The terminal report across ranks of ``rep`` (a RanksView), as plain text 160 wide."""
    from rich.console import Console

    from dlpt.renderers.terminal.ranks import render_ranks

    console = Console(width=160, record=True, color_system=None, force_terminal=False)
    console.print(render_ranks(rep, threshold=0.0))
    return console.export_text()
