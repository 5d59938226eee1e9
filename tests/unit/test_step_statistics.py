"""One statistic per figure family (issue 48): the header's per-step totals are means over the
counted steps (their sums divided by the steps), so they sit beside the counted steps' mean wall
time and say "mean"; the step wall line's figures are medians and say "median". A reader never
compares a median step with a mean op time unknowingly."""

from __future__ import annotations

from typing import Any

from dlpt.model.session import Session
from dlpt.renderers.html.data import build_model
from dlpt.renderers.terminal.report import render
from tests.unit.test_calibrated_report import TRACED, calibrated
from tests.unit.test_suggestions_view import STEPS

MS = 1_000_000


def outliers(h: Any) -> Session:
    """The calibrated session (traced median 40 ms) whose counted steps include slow outliers:
    their mean wall time is 55 ms."""
    d = calibrated(h).to_dict()
    d["meta"]["step_time"]["counted_ns"] = 55 * MS * STEPS
    return Session.from_dict(d)


def _header(h: Any, session: Session, verbose: bool = False) -> list[str]:
    text = h.render_text(render(session, verbose=verbose), width=200)
    return [ln.strip("│ ") for ln in text.split("╯", 1)[0].splitlines()]


def test_totals_are_named_means_beside_the_mean_step_wall(h: Any) -> None:
    for verbose in (False, True):
        head = _header(h, outliers(h), verbose)
        totals = next(ln for ln in head if ln.startswith("per step"))
        assert totals.startswith(f"per step (mean of {STEPS}): step wall 55.00ms · GPU ")
        step = next(ln for ln in head if ln.startswith("step wall"))
        assert f"{TRACED / MS:.2f}ms" in step and "traced (median of" in step and "mean" not in step


def test_the_page_names_the_mean_too(h: Any) -> None:
    page = build_model(outliers(h))["header"]
    assert page["totals_label"] == f"per step (mean of {STEPS})"
    assert page["totals"][0] == ["step wall", "55.00ms"]


def test_a_session_without_counted_wall_time_keeps_its_totals(h: Any) -> None:
    d = calibrated(h).to_dict()
    del d["meta"]["step_time"]["counted_ns"]
    totals = next(ln for ln in _header(h, Session.from_dict(d)) if ln.startswith("per step"))
    assert totals.startswith(f"per step (mean of {STEPS}): GPU ")
