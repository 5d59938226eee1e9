"""The GPU part of the known-answer harness (bench/verdicts.py), run on the device: dlpt diff on
real GPU workloads (the paired bench's compiled small GPT and HF GPT-2 decode) with a known extra
matmul on one line (LINE-EXTRA: K bf16 matmuls of 2048x2048 per step in A, 1.5K or 2K in B).
WORKLOAD runs one of them.
Each profile is one run, in one process per workload (rebuilding a compiled model per run would
spend the device time on compilation), alternating A, A', B x1.5 and B x2 for ROUNDS rounds;
bench/verdicts.py judge-gpu reads them back here.

    python bench/verdict_gpu.py OUT_DIR [ROUNDS] [WORKLOAD]      # on the GPU machine
"""

from __future__ import annotations

import os
import sys
import tarfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import dlpt  # noqa: E402
import paired_workloads  # noqa: E402

#: Matmuls on LINE-EXTRA per step in A, per workload: about 15-25% of the step's GPU time (a
#: decode step is a 64-token generate call: ~240 launches of its own).
CONFIGS = [("a1", 1.0), ("a2", 1.0), ("b15", 1.5), ("b2", 2.0)]


K = {"small_gpt_compiled": 8, "decode": 240}


def with_extra(step, k: int):
    x = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16) / 64

    def run() -> None:
        step()
        y = x
        for _ in range(k): y = torch.tanh(y @ w)  # LINE-EXTRA  # noqa: E701
    return run


def main() -> None:
    out = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    only = sys.argv[3] if len(sys.argv) > 3 else None
    os.makedirs(out, exist_ok=True)
    builders = {  # workload: (builder, steps per run: a decode step is a 64-token generate call)
        "small_gpt_compiled": (lambda: paired_workloads.small_gpt(compiled=True), 40),
        "decode": (paired_workloads.decode, 12),
    }
    for wl, (build, steps) in builders.items():
        if only is not None and wl != only:
            continue
        _, step, _ = build()
        for _ in range(3):  # compile, autotune, load kernels before any profile
            step()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for r in range(rounds):
            for name, k in CONFIGS:
                run = with_extra(step, round(K[wl] * k))
                with dlpt.profile() as prof:
                    for _ in range(steps):
                        run()
                        prof.step()
                prof.save(os.path.join(out, f"{wl}-{name}-{r}.json"))
            print(f"{wl}: round {r + 1}/{rounds} done ({time.perf_counter() - t0:.0f} s)", flush=True)
    with tarfile.open(os.path.join(out, "gpu-verdicts.tar.gz"), "w:gz") as tar:
        for f in sorted(os.listdir(out)):
            if f.endswith(".json"):
                tar.add(os.path.join(out, f), arcname=f)


if __name__ == "__main__":
    main()
