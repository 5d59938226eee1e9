"""What ``--memory`` costs on the CPU, measured paired in one process (bench/cpu_ab.py's pattern).

Two workloads: the CPU example's training step (examples/mlp_train.py), and the worst case for
memory capture, a loop of tiny elementwise ops (each allocates its output and frees the
previous one: one allocation and one free per op). Each round runs three chunks back to back: unprofiled,
``dlpt.profile(gpu=False)`` and ``dlpt.profile(gpu=False, memory=True)``; the table gives the
medians of the per-round ratios (memory against plain dlpt is what memory capture adds), and the
added time per allocator event and per op record from the sessions' own counts. On the CPU every
tensor allocation and free goes through torch's CPU allocator reporter (its mutex and size table)
and dlpt's tracker; on a GPU only CUDA allocations do (bench/paired.py, mode dlpt_memory).

usage: python bench/cpu_memory_ab.py [ROUNDS] [STEPS_PER_CHUNK]   prints a RESULT line (JSON) per workload
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


TINY_OPS = 1000


def tiny_ops():
    x = torch.ones(16)
    for _ in range(TINY_OPS):
        x = x + 1  # one allocation, and the previous x freed


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    torch.set_num_threads(1)
    run("cpu_example", BUILDERS["cpu_example"]()[1], rounds, n)
    run("tiny_ops", tiny_ops, rounds, n)


def run(workload, step, rounds, n) -> None:
    for _ in range(5):
        step()

    def chunk() -> float:
        t = time.perf_counter()
        for _ in range(n):
            step()
        return (time.perf_counter() - t) / n

    base, prof, mem, events, records = [], [], [], [], []
    for _ in range(rounds):
        base.append(chunk())
        with dlpt.profile(gpu=False):
            prof.append(chunk())
        with dlpt.profile(gpu=False, memory=True) as p:
            mem.append(chunk())
        events.append(p.session.meta["memory"]["events"] / n)
        records.append(p.session.meta["capture"]["op_records"] / n)
    b, d, m = statistics.median(base), statistics.median(prof), statistics.median(mem)
    ev, rec = statistics.median(events), statistics.median(records)
    ratio_mem_dlpt = statistics.median(x / y for x, y in zip(mem, prof))
    delta = statistics.median(x - y for x, y in zip(mem, prof))  # paired, per round
    print("RESULT " + json.dumps({
        "workload": workload, "machine": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(), "torch": torch.__version__, "rounds": rounds, "steps_per_chunk": n,
        "base_ms": round(b * 1e3, 3), "dlpt_ms": round(d * 1e3, 3), "dlpt_memory_ms": round(m * 1e3, 3),
        "ratio_dlpt": round(statistics.median(x / y for x, y in zip(prof, base)), 3),
        "ratio_memory": round(statistics.median(x / y for x, y in zip(mem, base)), 3),
        "ratio_memory_over_dlpt": round(ratio_mem_dlpt, 3),
        "allocator_events_per_step": round(ev, 1), "op_records_per_step": round(rec, 1),
        "memory_ns_per_event": round(delta * 1e9 / ev, 1) if ev else None,
        "memory_ns_per_op_record": round(delta * 1e9 / rec, 1) if rec else None,
    }))


if __name__ == "__main__":
    main()
