"""``dlpt diff``'s verdicts as an answer (the MCP tool ``compare``, ``dlpt verify --json``): each
line's own cost per step in both runs, its change after the run shift with a 95% interval, and
its verdict (slower, faster, same, can't tell, with what a "can't tell" rests on), the run shift
and the step times (docs/query-format.md, "compare"; the rule: docs/numbers.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dlpt.analysis.diff import Change, LineCost, LineDiff, SessionDiff, Side, default_diff_metric
from dlpt.analysis.diff_test import CANT_TELL, FASTER, SAME, SLOWER, RunShift
from dlpt.model.metrics import Metric, get_metric
from dlpt.query.lines import place, same_file

__all__ = ["COMPARE_FORMAT", "LineChange", "judged", "compare_answer", "diff_metric", "larger_total"]

COMPARE_FORMAT = "dlpt-compare"
VERDICTS = (SLOWER, FASTER, SAME, CANT_TELL)


@dataclass(frozen=True)
class LineChange:
    """A matched line, its per-step values in A and B and its judged change (None: the sessions
    cannot be tested, saved without per-step spreads)."""

    row: LineDiff
    a: float
    b: float
    change: Change | None

    @property
    def cost(self) -> LineCost:
        one = self.row.a or self.row.b
        assert one is not None  # a row is in one session at least
        return one

    @property
    def verdict(self) -> str | None:
        return self.change.verdict if self.change is not None else None

    def at(self, file: str, line: int) -> bool:
        """Whether this is the line ``file``:``line`` of A (or of B, for a line new in B)."""
        for cost in (self.row.a, self.row.b):
            if cost is not None and cost.line == line and same_file(cost.file, file):
                return True
        return False


def diff_metric(d: SessionDiff, name: str | None) -> Metric:
    """``name``'s metric, else diff's default (GPU time when either run has any, else CPU)."""
    return get_metric(name) if name is not None else default_diff_metric(d)


def larger_total(d: SessionDiff, metric: Metric) -> float:
    """The larger run's total of ``metric`` per step (what a line's share is of)."""
    return max(d.total(metric, "a"), d.total(metric, "b"))


def judged(d: SessionDiff, metric: Metric) -> tuple[RunShift | None, list[LineChange]]:
    """The run shift and every line with a value of ``metric``, judged, in diff's order
    (significant changes first, then by the size of the change)."""
    shift, changes = d.judge(metric)
    rows = d.ranked(metric, changes)
    return shift, [
        LineChange(r, d.value(metric, r, "a"), d.value(metric, r, "b"), changes.get(r.key)) for r in rows
    ]


def _finite(x: float) -> float | None:
    """JSON has no infinity: a line new in B has no ratio."""
    return round(x, 4) if math.isfinite(x) else None


def line_answer(c: LineChange) -> dict[str, Any]:
    cost = c.cost
    out = place(cost.file, cost.line, cost.function, cost.text)
    out.update(a=round(c.a), b=round(c.b))
    ch = c.change
    if ch is not None:
        out.update(ratio=_finite(ch.ratio), lo=_finite(ch.lo), hi=_finite(ch.hi), p=round(ch.p, 6))
        out["verdict"] = ch.verdict
        if ch.why:
            out["why"] = ch.why
        if ch.basis:
            out["basis"] = ch.basis
    return out


def _side(s: Side, path: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"path": path, "program": s.program, "steps": s.steps}
    if s.step_kind:
        out.update(step_ns=round(s.step_ns), step_kind=s.step_kind)
    if s.wait is not None:
        out["waited_share"] = round(s.wait.share, 4)
    return out


def _fastest(shift: RunShift) -> dict[str, float] | None:
    """The run shift at the ops' fastest calls (CPU op time only)."""
    if shift.fastest is None:
        return None
    factor, lo, hi = shift.fastest
    return {"factor": round(factor, 4), "lo": round(lo, 4), "hi": round(hi, 4)}


def _shift(shift: RunShift | None) -> dict[str, Any] | None:
    if shift is None:
        return None
    return {
        "factor": round(shift.factor, 4),
        "lo": round(shift.lo, 4),
        "hi": round(shift.hi, 4),
        "lines": shift.lines,
        "verdict": shift.verdict,
        "why": shift.why or None,
        "comparable": shift.known and shift.comparable,
        "fastest": _fastest(shift),
        "basis": shift.basis or None,
    }


def compare_answer(
    d: SessionDiff,
    metric: Metric,
    shift: RunShift | None,
    changes: list[LineChange],
    top: int = 20,
    paths: tuple[str | None, str | None] = (None, None),
) -> dict[str, Any]:
    """The comparison as an answer: the ``top`` lines in diff's order and every verdict counted."""
    counts = dict.fromkeys(VERDICTS, 0)
    for c in changes:
        if c.verdict is not None:
            counts[c.verdict] += 1
    return {
        "format": COMPARE_FORMAT,
        "version": 1,
        "a": _side(d.a, paths[0]),
        "b": _side(d.b, paths[1]),
        "metric": {"name": metric.name, "label": metric.label, "unit": metric.unit},
        "matched_by": d.match_by,
        "note": d.note,
        "tested": d.tested,
        "run_shift": _shift(shift),
        "step_change": d.step_change() or None,
        "verdicts": counts,
        "lines": [line_answer(c) for c in changes[:top]],
        "lines_compared": len(changes),
    }
