"""What the host sampler and the timeline cost on the CPU, measured paired in one process (the
pattern of bench/cpu_ab.py): each round runs, for every mode, an unprofiled chunk of steps and
right after it a profiled chunk; a mode's ratio is the median over rounds of those pairs.

Modes: dlpt_nosampler (dlpt.profile(gpu=False, sample_hz=0)), dlpt (the default: the sampler at
1 kHz), dlpt_timeline (timeline=1000: every event of the chunk kept, its budget permitting).
The sampler's own cost is dlpt over dlpt_nosampler.

Workloads: cpu_example (examples/mlp_train.py's training step: ops, shallow Python) and
python_prep (a step that spends most of its time in Python under a 40-frame stack, then a few
ops: the sampler's worst case, a deep stack that changes all the time).

usage: python bench/cpu_host_ab.py [ROUNDS] [STEPS_PER_CHUNK]   prints a table and RESULT lines
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

MODES = {
    "dlpt_nosampler": dict(gpu=False, sample_hz=0),
    "dlpt": dict(gpu=False),
    "dlpt_timeline": dict(gpu=False, timeline=1000),
}


def python_prep():
    w = torch.randn(64, 64)

    def tokenize(depth, n):
        if depth:
            return tokenize(depth - 1, n)
        return sum(hash(str(i)) & 7 for i in range(n))

    def step():
        tokenize(40, 3000)
        (torch.randn(16, 64) @ w).relu().sum()

    return "python_prep", step


def measure(step, n, rounds):
    for _ in range(5):
        step()

    def chunk():
        t = time.perf_counter()
        for _ in range(n):
            step()
        return (time.perf_counter() - t) / n

    ratios = {m: [] for m in MODES}
    base_ms = []
    for _ in range(rounds):
        for m, kw in MODES.items():
            a = chunk()
            with dlpt.profile(**kw):
                b = chunk()
            ratios[m].append(b / a)
            base_ms.append(a * 1e3)
    return statistics.median(base_ms), {m: (statistics.median(r), min(r), max(r)) for m, r in ratios.items()}


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    torch.set_num_threads(1)
    rows = []
    for name, build in (("cpu_example", BUILDERS["cpu_example"]), ("python_prep", python_prep)):
        _, step = build()
        base, r = measure(step, n, rounds)
        rows.append((name, base, r))
        print("RESULT " + json.dumps({"workload": name, "base_ms": round(base, 3), "rounds": rounds,
                                      "steps_per_chunk": n, "cpus": os.cpu_count(), "torch": torch.__version__,
                                      "machine": platform.processor() or platform.machine(),
                                      **{m: round(v[0], 3) for m, v in r.items()}}), flush=True)
    print("| workload | base ms/step | mode | ratio (median) | min-max |")
    print("|---|---|---|---|---|")
    for name, base, r in rows:
        for m, (med, lo, hi) in r.items():
            print(f"| {name} | {base:.2f} | {m} | **{med:.3f}x** | {lo:.2f}-{hi:.2f} |")
        print(f"| {name} | | sampler alone (dlpt / dlpt_nosampler) | **{r['dlpt'][0] / r['dlpt_nosampler'][0]:.3f}x** | |")


if __name__ == "__main__":
    main()
