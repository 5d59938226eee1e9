"""Typed reads of a session's ``meta``: the values every stage looks up, read defensively once
here (a loaded session may hold anything where an old or hand-edited file differs; the schema
checks types at load, but old sessions and in-memory edits still reach the readers).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "int_of",
    "obj",
    "profiled_steps",
    "program_argv",
    "step_walls",
    "wall_ns",
    "StepTime",
    "step_time",
]


def int_of(v: object) -> int:
    """``v`` if it is an int (not a bool), else 0."""
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def obj(v: object) -> dict[str, Any]:
    """``v`` if it is a dict, else {} (an absent or malformed meta object)."""
    return v if isinstance(v, dict) else {}


def profiled_steps(meta: Mapping[str, Any]) -> int:
    """How many steps the per-step figures are divided by (0: no steps, values per run)."""
    n = int_of(obj(meta.get("steps")).get("profiled"))
    return n if n > 0 else 0


def step_walls(meta: Mapping[str, Any]) -> list[int]:
    """Wall times of the profiled steps (ns), those that are positive integers."""
    raw = meta.get("step_wall_ns")
    return [w for w in raw if int_of(w) > 0] if isinstance(raw, list) else []


def program_argv(meta: Mapping[str, Any]) -> list[str]:
    """The profiled program's argv as reports name it: ``argv[0]`` relative to the directory the
    program ran in (``meta.cwd``) when it lies below it, as a script typed on the command line
    reads (``python -m pkg.run`` makes it absolute); [] when the session has no argv."""
    argv = meta.get("argv")
    if not isinstance(argv, list) or not argv:
        return []
    out = [str(a) for a in argv]
    cwd = meta.get("cwd")
    if isinstance(cwd, str) and os.path.isabs(cwd) and os.path.isabs(out[0]):
        try:
            rel = os.path.relpath(out[0], cwd)
        except ValueError:  # another drive (Windows)
            return out
        if rel != os.curdir and not rel.startswith(os.pardir + os.sep) and rel != os.pardir:
            out[0] = rel
    return out


def wall_ns(meta: Mapping[str, Any]) -> int:
    """Wall time of the profiled window (ns)."""
    return int_of(meta.get("wall_ns"))


@dataclass(frozen=True)
class StepTime:
    """Wall times of one kind of step (``meta.step_time.traced`` / ``.untraced``), in ns."""

    n: int
    median_ns: float
    mean_ns: float
    min_ns: float
    max_ns: float
    p10_ns: float
    p90_ns: float
    # The median's interval (95% from 6 steps on, else min-max); None in sessions saved before it.
    median_lo_ns: float | None = None
    median_hi_ns: float | None = None

    def spread(self) -> str:
        """How wide the median is known, as the text beside it: "9.98-10.4 ms" style is up to
        the caller; this gives the relative half-width, "+-1.9%", or "" without an interval."""
        if self.median_lo_ns is None or self.median_hi_ns is None or self.median_ns <= 0:
            return ""
        half = max(self.median_ns - self.median_lo_ns, self.median_hi_ns - self.median_ns)
        return f"\u00b1{100 * half / self.median_ns:.1f}%"


def _summary(d: Mapping[str, Any]) -> StepTime | None:
    n = int_of(d.get("n"))
    keys = ("median_ns", "mean_ns", "min_ns", "max_ns", "p10_ns", "p90_ns")
    vals = [d.get(k) for k in keys]
    nums = [float(v) for v in vals if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0]
    if n <= 0 or len(nums) != len(keys):
        return None
    median, mean, lo, hi, p10, p90 = nums
    bounds = [d.get(k) for k in ("median_lo_ns", "median_hi_ns")]
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in bounds):
        return StepTime(n, median, mean, lo, hi, p10, p90, float(bounds[0]), float(bounds[1]))  # type: ignore[arg-type]
    return StepTime(n, median, mean, lo, hi, p10, p90)


def step_time(meta: Mapping[str, Any], kind: str = "traced") -> StepTime | None:
    """The ``traced`` or ``untraced`` step times of a session; for a session saved before dlpt
    measured untraced steps, its traced ones from ``step_wall_ns`` (the mean as its median: what
    its figures used)."""
    saved = obj(obj(meta.get("step_time")).get(kind))
    if saved:
        return _summary(saved)
    walls = step_walls(meta) if kind == "traced" else []
    if not walls:
        return None
    mean = sum(walls) / len(walls)
    return StepTime(len(walls), mean, mean, min(walls), max(walls), min(walls), max(walls))
