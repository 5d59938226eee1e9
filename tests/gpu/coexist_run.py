"""Coexistence scenarios, each in a fresh process (whoever subscribes to CUPTI first keeps it).

usage: python -m tests.gpu.coexist_run {profiler_first,dlpt_first}
Prints one JSON line with what each tool saw.
"""

from __future__ import annotations

import json
import sys
import warnings

import torch
from torch.profiler import ProfilerActivity, profile

import dlpt


def work(a):
    return (a @ a).sum()  # @coexist


def cuda_events(p) -> int:
    return sum(1 for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA)


if __name__ == "__main__":
    a = torch.randn(1024, 1024, device="cuda")
    work(a)
    torch.cuda.synchronize()
    res: dict = {}
    if sys.argv[1] == "profiler_first":
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as tp:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                with dlpt.profile() as prof:
                    work(a)
            work(a)
            torch.cuda.synchronize()
        res["warnings"] = [str(w.message) for w in caught]
        res["dlpt_gpu"] = prof.session.meta["gpu"]
        res["dlpt_ops"] = sorted({n["name"] for n in prof.session.nodes if n["kind"] == "op"})
        res["torch_cuda_events"] = cuda_events(tp)
    else:
        with dlpt.profile() as prof:
            work(a)
        res["dlpt_kernels"] = sum(n["m"].get("kernels", 0) for n in prof.session.nodes)
        with profile(activities=[ProfilerActivity.CUDA]) as tp:
            work(a)
            torch.cuda.synchronize()
        res["torch_cuda_events"] = cuda_events(tp)
        with dlpt.profile() as prof2:  # and dlpt again after torch.profiler let go
            work(a)
        res["dlpt_again_gpu"] = prof2.session.meta["gpu"]["enabled"]
    print(json.dumps(res), flush=True)
