"""Issue 32's targets as per-round quotients of two paired modes, each with a verdict that says
whether the rounds can tell.

Each mode's round ratio (profiled chunk / its own unprofiled chunk) already cancels the host's
slow drift; dividing two modes' ratios of the same round (seconds apart, between the same
neighbours) gives one quotient per round. Their median carries a distribution-free 95% interval
(dlpt.model.stats.median_interval: the order statistics that cover the median), and the verdict
compares the interval, not the median, with the target:

  meets     the whole interval is at or under the target
  misses    the whole interval is above it
  can't tell  the interval straddles it: more rounds, or a quieter host

With fewer than 6 rounds no pair of order statistics reaches 95% and the interval is min-max; with
8 rounds the 95% interval is min-max too (ranks 1 and 8), so a verdict needs 9 or more rounds to be
narrower than the whole spread. Pure Python: tests/unit/test_bench_comparisons.py runs it on the CPU.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from dlpt.model.stats import median_interval


@dataclass(frozen=True)
class Comparison:
    """``mode`` over ``against``, per round; ``target`` is the most the quotient may be. With
    ``added``, the quotient is of the time each adds (ratio - 1; rounds where ``against`` added
    nothing are left out): what a launch costs against what it costs under CUPTI's floor."""

    mode: str
    against: str
    target: float
    meaning: str
    added: bool = False

    @property
    def key(self) -> str:
        return f"{self.mode}{'+' if self.added else ''}/{self.against}{'+' if self.added else ''}"


#: The issue's targets (issue 32): dlpt at most 1.05x CUPTI's floor and under torch.profiler; the
#: host sampler at most +2% (dlpt against dlpt without it); --memory at most +5% over dlpt.
#: Issue 50: the lean op starts (dlpt's GPU default, dlpt_lean named) against the floor, and what
#: they save over exact ones (--exact-ops: dlpt_exact, whose own row against the floor stays).
COMPARISONS = (
    Comparison("dlpt", "cupti_floor", 1.05, "dlpt over CUPTI's floor"),
    Comparison("dlpt", "torchprof", 1.00, "dlpt over torch.profiler"),
    Comparison("dlpt", "dlpt_nosampler", 1.02, "what the host sampler adds"),
    Comparison("dlpt_memory", "dlpt", 1.05, "what --memory adds"),
    Comparison("dlpt_lean", "cupti_floor", 1.05, "lean op starts over CUPTI's floor"),
    Comparison("dlpt_exact", "cupti_floor", 1.05, "--exact-ops over CUPTI's floor"),
    Comparison("dlpt_lean", "dlpt_exact", 1.00, "lean op starts over exact ones"),
    Comparison("dlpt", "dlpt_exact", 1.00, "dlpt's default over --exact-ops"),
    # The tiny-launch loop's target (tiny_add): dlpt's added time per launch within 1.5x of CUPTI's.
    Comparison("dlpt", "cupti_floor", 1.50, "dlpt's added time over the floor's (tiny launches)", added=True),
)


def verdict(lo: float, hi: float, target: float) -> str:
    if hi <= target:
        return "meets"
    if lo > target:
        return "misses"
    return "can't tell"


def quotients(raw: dict, c: Comparison) -> list[float]:
    """``c``'s mode over its against, round by round, from ``raw`` (mode -> {"ratios": [...]},
    rounds in order); empty unless both modes ran. Rounds of different calls are never paired:
    to pool calls, concatenate each call's quotients (bench/pool.py)."""
    if c.mode not in raw or c.against not in raw:
        return []
    pairs = zip(raw[c.mode]["ratios"], raw[c.against]["ratios"], strict=False)
    if c.added:
        return [(a - 1) / (b - 1) for a, b in pairs if b > 1]
    return [a / b for a, b in pairs if b > 0]


def compare(raw: dict, c: Comparison) -> dict | None:
    """The per-round quotients of ``c`` from ``raw`` summarised; None unless both modes ran."""
    return summary(quotients(raw, c), c)


def summary(q: list[float], c: Comparison) -> dict | None:
    """Quotients ``q`` of comparison ``c``: median, 95% interval, verdict; None without any."""
    if not q:
        return None
    lo, hi, how = median_interval(q)
    return {"ratio": statistics.median(q), "lo": lo, "hi": hi, "interval": how, "min": min(q), "max": max(q),
            "rounds": len(q), "target": c.target, "verdict": verdict(lo, hi, c.target),
            "rounds_within_target": sum(x <= c.target for x in q), "per_round": q, "meaning": c.meaning}


def compare_all(raw: dict) -> dict[str, dict]:
    """Every comparison whose two modes ran, by its key (mode and against, joined by a slash)."""
    out = {}
    for c in COMPARISONS:
        s = compare(raw, c)
        if s is not None:
            out[c.key] = s
    return out


def is_comparison(key: str) -> bool:
    return any(key == c.key for c in COMPARISONS)


def row(workload: str, key: str, s: dict) -> str:
    """The table's line for one comparison (bench/paired.py's table)."""
    return (f"| {workload} | | {key}, per round: {s['meaning']} | **{s['ratio']:.3f}x** "
            f"({s['interval']} {s['lo']:.3f}–{s['hi']:.3f}) | {s['min']:.2f}–{s['max']:.2f} | {s['rounds']} "
            f"| target ≤ {s['target']:.2f}x: **{s['verdict']}** ({s['rounds_within_target']} of {s['rounds']} "
            f"rounds within) | |")
