"""CPU overhead of dlpt, measured as an interleaved A/B in one process.

On a small shared CPU machine, two separate unprofiled runs of the CPU example differ by up to
30% (see bench/results/cpu-*.md), more than the overhead being measured. Alternating unprofiled
and profiled chunks in one process (one intra-op thread) cancels most of that drift.

usage: python bench/cpu_ab.py [ROUNDS] [STEPS_PER_CHUNK]   prints one RESULT line (JSON)
"""
import json
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch

import dlpt

from workloads import BUILDERS


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    torch.set_num_threads(1)
    _, step = BUILDERS["cpu_example"]()
    for _ in range(5):
        step()

    def chunk() -> float:
        t = time.perf_counter()
        for _ in range(n):
            step()
        return (time.perf_counter() - t) / n

    base, prof = [], []
    for _ in range(rounds):
        base.append(chunk())
        with dlpt.profile(gpu=False):
            prof.append(chunk())
    b, p = statistics.median(base), statistics.median(prof)
    print("RESULT " + json.dumps({"workload": "cpu_example", "machine": platform.processor() or platform.machine(),
                                  "cpus": os.cpu_count(), "torch": torch.__version__, "rounds": rounds,
                                  "steps_per_chunk": n, "base_ms": round(b * 1e3, 3),
                                  "dlpt_ms": round(p * 1e3, 3), "ratio": round(p / b, 3)}))


if __name__ == "__main__":
    main()
