"""One deterministic GPU workload measured by one tool, in its own process (CUPTI has a single
subscriber, so tools cannot watch the same process at once). Prints one JSON line:
{"kernels": count, "kernel_ns": total kernel time}.

usage: python -m tests.gpu.reference_run {dlpt,cupti,torchprof}
"""

from __future__ import annotations

import json
import sys

import torch

STEPS = 20


def build():
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)
    ).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
    x = torch.randn(512, 1024, device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        model(x).square().mean().backward()
        opt.step()

    return step


def run(step):
    for _ in range(STEPS):
        step()
    torch.cuda.synchronize()


def with_dlpt(step):
    import dlpt

    # Every step traced (no untraced calibration window), as the other tools trace them all; the
    # warm-up steps' kernels are outside counted steps (node metrics "o"): both count.
    with dlpt.profile(calibrate=False) as prof:
        run(step)
    ks = [n for n in prof.session.nodes if n["kind"] == "kernel"]
    both = [(n["m"], n.get("o", {})) for n in ks]
    return (
        sum(m.get("kernels", 0) + o.get("kernels", 0) for m, o in both),
        sum(m.get("gpu_ns", 0) + o.get("gpu_ns", 0) for m, o in both),
    )


def with_cupti(step):
    from cupti import cupti

    records: list[tuple[int, int]] = []

    def requested():
        return 8 * 1024 * 1024, 0

    def completed(activities):
        for a in activities:
            if a.kind == cupti.ActivityKind.CONCURRENT_KERNEL:
                records.append((a.start, a.end))

    cupti.activity_register_callbacks(requested, completed)
    cupti.activity_enable(cupti.ActivityKind.CONCURRENT_KERNEL)
    run(step)
    cupti.activity_flush_all(1)
    cupti.activity_disable(cupti.ActivityKind.CONCURRENT_KERNEL)
    cupti.activity_flush_all(1)
    return len(records), sum(e - s for s, e in records)


def with_torchprof(step):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as p:
        run(step)
    evs = [
        e
        for e in p.events()
        if e.device_type == torch.autograd.DeviceType.CUDA and not e.name.startswith(("Memcpy", "Memset"))
    ]
    return len(evs), int(sum(e.device_time for e in evs) * 1000)  # device_time is in us


if __name__ == "__main__":
    step = build()
    run(step)  # warm-up: cuBLAS handles, allocator, first-launch module loads
    tool = {"dlpt": with_dlpt, "cupti": with_cupti, "torchprof": with_torchprof}[sys.argv[1]]
    n, ns = tool(step)
    print(json.dumps({"tool": sys.argv[1], "kernels": n, "kernel_ns": ns}), flush=True)
