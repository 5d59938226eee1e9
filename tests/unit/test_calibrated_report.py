"""Figures a user can act on: with untraced steps measured in the same run, the header shows the
untraced step beside the traced one, and the GPU idle share, the idle split, MFU and every
suggested gain use the untraced step (GPU busy time stays the traced steps': kernel times are the
GPU's own). Work outside counted steps is reported apart, once, never divided by the steps."""

from __future__ import annotations

from typing import Any

import pytest

from dlpt.analysis.finding import Finding
from dlpt.analysis.idle import step_idle
from dlpt.analysis.inputs import analyze
from dlpt.analysis.mfu import mfu
from dlpt.analysis.report import build_report
from dlpt.analysis.suggest import bounded, derive
from dlpt.model.session import Session
from dlpt.renderers.html.data import build_model
from dlpt.renderers.terminal.report import render
from dlpt.views.diff import DiffView
from tests.unit.test_suggestions_view import FWD, STEPS, flops_session

MS = 1_000_000
TRACED, UNTRACED = 40 * MS, 37 * MS


def _times(median: int, n: int) -> dict[str, int]:
    return {
        "n": n,
        "median_ns": median,
        "mean_ns": median,
        "min_ns": median,
        "max_ns": median,
        "p10_ns": median,
        "p90_ns": median,
    }


def calibrated(h: Any, untraced: bool = True, outside: bool = False) -> Session:
    """The FLOPs session with its steps measured traced (40 ms) and untraced (37 ms); the GPU is
    busy 31 ms per step and idles 8 ms before each step's first kernel while traced."""
    d = flops_session(h).to_dict()
    row = {"span_ns": TRACED, "busy_ns": 31 * MS, "idle_before_ns": 8 * MS, "idle_after_ns": MS // 2}
    d["meta"]["gpu_steps"] = {"0": [dict(row) for _ in range(STEPS)]}
    d["meta"]["step_time"] = {
        "calibrate": untraced,
        "switches": 2,
        "dropped": 2,
        "counted_ns": TRACED * STEPS,
        "traced": _times(TRACED, STEPS),
    }
    if untraced:
        d["meta"]["step_time"]["untraced"] = _times(UNTRACED, 5)
        # Three windows against their traced neighbours agree: dlpt's cost is measured.
        d["meta"]["step_time"]["paired"] = [
            {
                "steps": [10 + 40 * i, 14 + 40 * i],
                "untraced_ns": UNTRACED,
                "untraced_n": 5,
                "traced_ns": TRACED,
            }
            for i in range(3)
        ]
    d["meta"]["steps"].update(
        untraced=6,
        warmup={
            "steps": 2,
            "walls_ns": [9000 * MS, 60 * MS],
            "auto": True,
            "reason": "until two steps in a row took the same time",
        },
    )
    if outside:
        d["meta"]["steps"]["outside"] = {"before_ns": 9100 * MS, "after_ns": 300 * MS}
        for n in d["nodes"]:
            if n["kind"] == "kernel":  # the same kernels ran once in the warm-up
                n["o"] = {"gpu_ns": 250 * MS, "kernels": 1}
    return Session.from_dict(d)


def _text(h: Any, session: Session, **kw: Any) -> str:
    return " ".join(h.render_text(render(session, threshold=0.0, verbose=True, **kw), width=400).split())


def test_the_header_shows_the_untraced_step_beside_the_traced_one(h: Any) -> None:
    text = _text(h, calibrated(h))
    assert (
        "step wall 37.00ms untraced (median of 5) · 40.00ms traced (median of 4) · "
        "dlpt's cost 1.08x (1.08\u20131.08, min-max, 3 windows)" in text
    )
    assert "(optimizer steps; 6 seen: 2 warm-up, 6 untraced)" in text
    assert "warm-up: the first 2 steps (9.00s, 60.00ms), until two steps in a row took the same time" in text
    # GPU busy per step against the untraced step: the idle share a user can act on.
    assert "busy 31.00ms of the 37.00ms untraced step (83.8%), idle 16.2% (traced: 77.5% of 40.00ms)" in text


def test_without_untraced_steps_the_figures_say_they_are_as_traced(h: Any) -> None:
    text = _text(h, calibrated(h, untraced=False))
    assert "step wall 40.00ms traced (median of 4); no untraced step measured (--calibrate off)" in text
    assert "step figures are as traced" in text
    assert "busy 31.00ms of the 40.00ms traced step (77.5%)" in text


def test_idle_split_is_scaled_to_the_untraced_step(h: Any) -> None:
    (s,) = step_idle(analyze(calibrated(h)))
    assert s.traced is not None and s.traced.before_ns == 8 * MS
    assert s.busy_ns == 31 * MS and s.span_ns == UNTRACED  # busy is the GPU's own; idle what is left
    assert s.idle_ns == pytest.approx(6 * MS)
    assert s.before_ns == pytest.approx(8 * MS * 6 / 9)  # traced proportions
    text = _text(h, calibrated(h))
    assert "scaled to the untraced step (traced: 8.00ms before" in text


def test_mfu_uses_the_untraced_step(h: Any) -> None:
    a = analyze(calibrated(h))
    m = mfu(a)
    assert m is not None and m.step_wall_ns == UNTRACED
    assert m.value == pytest.approx(2 * 3 * FWD / 37e-3 / 989.5e12)
    text = _text(h, calibrated(h))
    traced = 100 * 2 * 3 * FWD / 40e-3 / 989.5e12
    assert f"{traced:.1f}% over the 40.00ms traced step" in text


def test_suggested_gains_come_from_the_untraced_step_and_show_the_traced_one(h: Any) -> None:
    found = {f.rule: f for f in derive(analyze(calibrated(h)))}
    stall = found["data_loader_stall"]
    assert stall.gain_ns == round(8 * MS * 6 / 9) and stall.numbers["traced_gain_ns"] == 8 * MS
    assert "(8.00ms traced)" in stall.evidence and "scaled to the step time measured untraced" in stall.basis
    report = build_report(calibrated(h))
    (s,) = [s for s in report.suggestions if s.finding.rule == "data_loader_stall"]
    assert s.gain == "-5.33ms/step (-8.00ms traced)"
    # The same session without untraced steps: the traced gain, no second number.
    traced = {f.rule: f for f in derive(analyze(calibrated(h, untraced=False)))}
    assert (
        traced["data_loader_stall"].gain_ns == 8 * MS
        and "traced_gain_ns" not in traced["data_loader_stall"].numbers
    )


def test_no_gain_exceeds_the_untraced_step(h: Any) -> None:
    a = analyze(calibrated(h))
    big = Finding("x", "t", "e", "a", "from the traced step", gain_ns=60 * MS)
    capped = bounded(big, a)
    assert capped.gain_ns == UNTRACED and capped.numbers["unbounded_gain_ns"] == 60 * MS
    assert capped.basis.endswith("at most the whole untraced step")
    once = Finding("x", "t", "e", "a", "b", gain_ns=60 * MS, per_step=False)
    assert bounded(once, a) is once  # a one-off gain is not a step's


def test_work_outside_steps_is_reported_once_and_kept_out_of_per_step_figures(h: Any) -> None:
    inside, both = calibrated(h), calibrated(h, outside=True)
    assert build_report(both).totals == build_report(inside).totals  # per-step totals unchanged
    text = _text(h, both)
    assert "Outside steps (once: set-up, warm-up and the end of the run; totals, not per step)" in text
    kernels = sum(1 for n in both.nodes if n["kind"] == "kernel")
    verbose = " ".join(h.render_text(render(both, view="tree", verbose=True), width=4000).split())
    assert f"work outside steps: GPU {kernels * 250 / 1000:.2f}s" in verbose  # not divided by the steps
    assert "outside steps (once): 9.10s before the first counted step, 300.00ms after the last" in verbose
    assert verbose.count("outside steps (once)") == 1, "one line, not two (issue 33)"
    page = dict(build_model(both)["header"]["facts"])
    assert f"work outside steps: GPU {kernels * 250 / 1000:.2f}s" in page["outside steps"]


def test_dlpt_diff_compares_the_programs_own_step_times(h: Any) -> None:
    from dlpt.analysis.diff import diff_sessions
    from dlpt.model.metrics import METRICS
    from dlpt.renderers.html.diff_page import render_diff_html
    from dlpt.renderers.terminal.diff import render_diff

    a = calibrated(h)
    d = calibrated(h).to_dict()
    d["meta"]["step_time"]["untraced"] = _times(30 * MS, 5)
    diff = diff_sessions(a, Session.from_dict(d))
    assert (diff.a.step_ns, diff.a.step_kind, diff.b.step_ns) == (UNTRACED, "untraced", 30 * MS)
    text = " ".join(h.render_text(render_diff(DiffView(diff, METRICS["gpu"])), width=200).split())
    assert "step A 37.00ms untraced B 30.00ms untraced delta -7.00ms" in text
    assert "37.00ms untraced step" in render_diff_html(DiffView(diff, METRICS["gpu"]))


def test_step_mfu_and_idle_carry_their_spread(h: Any) -> None:
    d = calibrated(h).to_dict()
    d["meta"]["step_time"]["untraced"].update(median_lo_ns=36 * MS, median_hi_ns=38 * MS)
    d["meta"]["step_time"]["traced"].update(median_lo_ns=39 * MS, median_hi_ns=41 * MS)
    text = _text(h, Session.from_dict(d))
    assert "37.00ms (36.00ms\u201338.00ms) untraced (median of 5)" in text
    assert "40.00ms (39.00ms\u201341.00ms) traced (median of 4)" in text
    lo, hi = (100 * 2 * 3 * FWD / s / 989.5e12 for s in (38e-3, 36e-3))
    assert f"({lo:.1f}\u2013{hi:.1f}%) = model FLOPs" in text
    # Busy 31 ms of a 36-38 ms untraced step: idle 13.9-18.4%.
    assert f"idle {100 * (1 - 31 / 38):.1f}\u2013{100 * (1 - 31 / 36):.1f}%" in text


def test_an_unmeasured_cost_leaves_the_figures_as_traced(h: Any) -> None:
    d = calibrated(h).to_dict()
    d["meta"]["step_time"]["paired"] = d["meta"]["step_time"]["paired"][:2]  # 2 windows: too few
    session = Session.from_dict(d)
    text = _text(h, session)
    assert "dlpt's cost not measured well enough: 1.08x" in text and "step figures are as traced" in text
    m = mfu(analyze(session))
    assert m is not None and m.step_wall_ns == TRACED  # not the untraced step
