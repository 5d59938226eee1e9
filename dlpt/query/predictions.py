"""A suggestion's predicted gain against what the next run measured (``dlpt verify``): for each
suggestion of the base run placed on a line, the gain it predicted per step, the line's measured
change (its own cost per step, raw and after the run shift) with its verdict, and the step's.

The prediction is a wall-time gain per step; the line's change is in the metric compared (GPU
time, or CPU op time on a CPU run): what a fix on that line removes shows there first, and the
step time, which also moves with the host, is given beside it."""

from __future__ import annotations

from typing import Any

from dlpt.analysis.diff import SessionDiff
from dlpt.analysis.diff_test import RunShift
from dlpt.analysis.inputs import analyze
from dlpt.analysis.suggest import findings
from dlpt.model.session import Session
from dlpt.query.compare import LineChange

__all__ = ["predictions"]


def predictions(
    base: Session, d: SessionDiff, shift: RunShift | None, changes: list[LineChange]
) -> list[dict[str, Any]]:
    """Predicted against measured, for each per-step suggestion of ``base`` placed on a line."""
    factor = shift.factor if shift is not None and shift.known else 1.0
    step = round(d.a.step_ns - d.b.step_ns) if d.a.step_kind and d.b.step_kind else None
    out = []
    for f in findings(analyze(base)):
        if not f.file or not f.per_step or f.gain_ns <= 0:
            continue
        c = next((c for c in changes if c.at(f.file, f.line)), None)
        row: dict[str, Any] = {"rule": f.rule, "where": f"{f.file.rsplit('/', 1)[-1]}:{f.line}"}
        row["predicted_ns"] = f.gain_ns
        if c is None:
            row["measured"] = "the line has no cost in either run"
        else:
            row["measured_ns"] = round(c.a - c.b)
            row["measured_after_shift_ns"] = round(c.a - c.b / factor)
            row["verdict"] = c.verdict
            row["realised"] = round((c.a - c.b / factor) / f.gain_ns, 3)
        if step is not None:
            row["step_change_ns"] = step
        out.append(row)
    return out
