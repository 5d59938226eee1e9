"""A suggestion's predicted gain against what the next run measured (``dlpt verify``): for each
suggestion of the base run placed on a line, the gain it predicted per step, the line's measured
change with its verdict, and the step's.

The prediction is a wall-time gain per step. The closest measure of it on one line is the line's
sampled host time (the thread's wall time at the line: the host sampler, on by default), which
also holds the Python between ops that several rules predict removing; the line's change in the
metric compared (GPU time, or CPU op time on a CPU run) is given beside it, raw and after the run
shift, with its verdict. ``realised`` is the measured gain over the predicted one, from host time
where both runs sampled it, else from the metric after the run shift."""

from __future__ import annotations

from typing import Any

from dlpt.analysis.diff import SessionDiff
from dlpt.analysis.diff_test import RunShift
from dlpt.analysis.inputs import analyze
from dlpt.analysis.suggest import findings
from dlpt.model.metrics import METRICS
from dlpt.model.session import Session
from dlpt.query.compare import LineChange

__all__ = ["predictions"]

HOST = METRICS["host"]


def _measured(d: SessionDiff, c: LineChange, factor: float, predicted: int) -> dict[str, Any]:
    row: dict[str, Any] = {
        "measured_ns": round(c.a - c.b),
        "measured_after_shift_ns": round(c.a - c.b / factor),
        "verdict": c.verdict,
    }
    gain = c.a - c.b / factor
    sampled = d.total(HOST, "a") > 0 and d.total(HOST, "b") > 0
    if sampled:
        host = d.value(HOST, c.row, "a") - d.value(HOST, c.row, "b")
        row["host_ns"] = round(host)
        gain = host
    row["realised"] = round(gain / predicted, 3)
    row["realised_from"] = "host" if sampled else "metric"
    return row


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
            row.update(_measured(d, c, factor, f.gain_ns))
        if step is not None:
            row["step_change_ns"] = step
        out.append(row)
    return out
