"""Where a profiled chunk's extra time goes, step by step: the first steps of a session vs later.

    python bench/session_steps.py [--workloads small_gpt ...] [--modes dlpt cupti_floor ...]
                                  [--steps 60] [--rounds 5]

bench/paired.py times chunks of 20 steps, each in a fresh session. A cost paid once per session
(attaching CUPTI, building the tree, learning which ops get RecordFunction windows) then reads as
a per-step cost. Here every step is timed on its own (synchronized), in an unprofiled run and a
profiled run of the same length, alternated for a few rounds; the table gives, per step bucket,
the median of (profiled step / unprofiled step of the same index). Step 0 includes everything a
session's first step pays; "steady" is the tail a long profile runs at.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time

import paired  # bench/paired.py: workloads and profiler modes
import torch

BUCKETS = ((0, 1), (1, 2), (2, 3), (3, 5), (5, 10), (10, 20), (20, None))


def timed_steps(step, n: int) -> list[float]:
    out = []
    torch.cuda.synchronize()
    for _ in range(n):
        t = time.perf_counter()
        step()
        torch.cuda.synchronize()
        out.append(time.perf_counter() - t)
    return out


def label(lo: int, hi: int | None) -> str:
    if hi is None:
        return f"{lo}+"
    return str(lo) if hi == lo + 1 else f"{lo}-{hi - 1}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", nargs="+", default=["small_gpt"])
    ap.add_argument("--modes", nargs="+", default=["aa", "dlpt", "cupti_floor", "rf_floor", "dlpt_nogpu"])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    for w in args.workloads:
        name, step, _ = paired.build(w)
        for _ in range(5):
            step()
        # Proton attaches once per process and must come before any other CUPTI user.
        modes = sorted(args.modes, key=lambda m: m != "proton")
        ratios: dict = {m: [[] for _ in range(args.steps)] for m in modes}
        totals: dict = {m: [] for m in modes}
        base_ms: list[float] = []
        for _ in range(args.rounds):
            for m in modes:
                a = timed_steps(step, args.steps)
                with contextlib.nullcontext() if m == "aa" else paired.profiler(m):
                    b = timed_steps(step, args.steps)
                base_ms.append(statistics.median(a) * 1e3)
                totals[m].append(sum(b) / sum(a))
                for i in range(args.steps):
                    ratios[m][i].append(b[i] / a[i])
        paired.Proton.finalize()
        cols = [(lo, hi) for lo, hi in BUCKETS if lo < args.steps]
        print(f"\n{name}: {args.steps} synchronized steps per session, {args.rounds} rounds, "
              f"base {statistics.median(base_ms):.2f} ms/step; median ratio per step index")
        print("| mode | " + " | ".join(label(lo, hi) for lo, hi in cols) + " | whole session |")
        print("|---|" + "---|" * (len(cols) + 1))
        for m in modes:
            cells = []
            for lo, hi in cols:
                vals = [r for i in range(lo, min(hi or args.steps, args.steps)) for r in ratios[m][i]]
                cells.append(f"{statistics.median(vals):.3f}")
            cells.append(f"{statistics.median(totals[m]):.3f}")
            print(f"| {m} | " + " | ".join(cells) + " |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
