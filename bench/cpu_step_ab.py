"""What a step boundary costs dlpt on the CPU when a step touches many nodes: the per-node fold at
each step (csrc/cct/epochs.cpp, where the per-step second moments are taken) runs once per node a
step touched. Paired in one process (the pattern of bench/cpu_ab.py): each round runs an
unprofiled chunk of steps and right after it a profiled one (gpu=False, no sampler, no
calibration windows, every step counted); the ratio is the median over rounds.

A step is LINES distinct source lines, each one tiny aten op (so each step touches about
3 x LINES nodes: frame, op, phase), ended by prof.step(). Compare two builds by running this
script with each on PYTHONPATH, alternately, on the same machine.

usage: python bench/cpu_step_ab.py [ROUNDS] [STEPS_PER_CHUNK] [LINES]   prints one RESULT line
"""

import json
import os
import statistics
import sys
import time

import torch

import dlpt


def make_step(lines: int):
    body = "\n".join(f"    t = t + {i}" for i in range(lines))
    ns: dict = {}
    exec(compile(f"def step(t):\n{body}\n    return t\n", "<many_lines>", "exec"), ns)
    return ns["step"]


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    lines = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    torch.set_num_threads(1)
    step, t = make_step(lines), torch.ones(4)
    for _ in range(20):
        step(t)

    def chunk(prof=None) -> float:
        start = time.perf_counter()
        for _ in range(n):
            step(t)
            if prof is not None:
                prof.step()
        return (time.perf_counter() - start) / n

    base, prof_t = [], []
    for _ in range(rounds):
        base.append(chunk())
        with dlpt.profile(gpu=False, sample_hz=0, calibrate=False, skip_first=0) as prof:
            prof_t.append(chunk(prof))
    b, p = statistics.median(base), statistics.median(prof_t)
    ratios = [q / a for a, q in zip(base, prof_t, strict=True)]
    print(
        "RESULT "
        + json.dumps(
            {
                "dlpt": os.path.dirname(os.path.dirname(os.path.abspath(dlpt.__file__))),
                "rounds": rounds,
                "steps_per_chunk": n,
                "lines": lines,
                "base_us": round(b * 1e6, 1),
                "dlpt_us": round(p * 1e6, 1),
                "added_us_per_step": round((p - b) * 1e6, 1),
                "ratio_median_of_rounds": round(statistics.median(ratios), 3),
            }
        )
    )


if __name__ == "__main__":
    main()
