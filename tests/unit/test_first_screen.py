"""The report ends on what matters (issue 33): a compact header (at most 10 lines at 80 columns:
the run, its steps, the step time, GPU busy/idle, the top finding, warnings), the details behind
``verbose``; the per-step tree, then its hottest lines, last, so that the terminal shows them when
the run ends; the work outside steps folded to its top rows; no line said twice; an unused GPU in
one line."""

from __future__ import annotations

import re
from typing import Any

from dlpt.analysis.report import build_report
from dlpt.model.session import Session
from dlpt.renderers.terminal.header import COMPACT_LINES
from dlpt.renderers.terminal.report import OUTSIDE_ROWS, render
from tests.unit.test_calibrated_report import calibrated


def _header(text: str) -> list[str]:
    lines = text.splitlines()
    end = next(i for i, ln in enumerate(lines) if ln.startswith(("╰", "+")) and i > 0)
    return lines[: end + 1]


def test_the_compact_header_fits_ten_lines_at_80_columns(h: Any) -> None:
    for session in (calibrated(h, outside=True), h.build_gpu().session(h.gpu_meta())):
        text = h.render_text(render(session), width=80)
        head = _header(text)
        # A line more for each flag's headline (the calibrated session has --flops's).
        asked = len(build_report(session).headlines)
        assert len(head) <= COMPACT_LINES + asked, "\n".join(head)
        assert all(len(ln) <= 80 for ln in head)
        body = "\n".join(head)
        assert "step wall" in body and "GPU 0: busy" in body and "--verbose" in body
        # Sampler diagnostics, versions and dlpt's own cost are details.
        assert "python 3.11.7" not in body and "torch 2.13.0" not in body
        verbose = "\n".join(_header(h.render_text(render(session, verbose=True), width=80)))
        assert "python 3.11.7" in verbose and len(verbose.splitlines()) > len(head)


def test_the_top_finding_is_in_the_compact_header(h: Any) -> None:
    text = h.render_text(render(h.build_gpu().session(h.gpu_meta())), width=120)
    head = "\n".join(_header(text))
    assert "top finding: -1.24ms/step train.py:40 train_step: Host-to-device copies" in head


def test_the_per_step_tree_then_the_hottest_lines_are_last(h: Any) -> None:
    session = calibrated(h, outside=True)
    text = h.render_text(render(session), width=100)
    tree = text.index("Top-down (callees below their callers)")
    for before in ("Suggestions", "GPU kernels", "Outside steps (once", "values: "):
        assert before in text and text.index(before) < tree, before
    # After the tree's rows, the report ends with the hottest lines (issue 48).
    hot = text.index("Hottest lines")
    assert tree < hot and "─ " in text[tree:hot]
    last = [ln for ln in text.splitlines() if ln.strip()][-3:]
    assert all("─ " not in ln and re.search(r"\d%", ln) for ln in last), last
    # Verbose keeps the same order.
    verbose = h.render_text(render(session, verbose=True), width=100)
    assert verbose.index("Suggestions") < verbose.index("Top-down (callees below their callers)")


def test_the_work_outside_steps_is_folded_unless_verbose(h: Any) -> None:
    session = calibrated(h, outside=True)
    folded = h.render_text(render(session, threshold=0.0), width=120)
    whole = h.render_text(render(session, threshold=0.0, verbose=True), width=120)

    def outside_rows(text: str) -> list[str]:
        part = text.split("Outside steps (once", 1)[1].split("\n\n", 1)[0]
        return [ln for ln in part.splitlines()[3:] if ln.strip()]

    rows, all_rows = outside_rows(folded), outside_rows(whole)
    assert len(all_rows) > OUTSIDE_ROWS + 1, "the fixture must have more rows than are shown"
    assert len(rows) == OUTSIDE_ROWS + 1 and "more rows" in rows[-1] and "--verbose" in rows[-1]
    assert rows[:OUTSIDE_ROWS] == all_rows[:OUTSIDE_ROWS]  # the top rows, the same as unfolded
    hidden = int(rows[-1].split("... ", 1)[1].split(" more", 1)[0])
    assert hidden == len(all_rows) - OUTSIDE_ROWS


def test_no_line_is_said_twice(h: Any) -> None:
    text = h.render_text(render(calibrated(h, outside=True), verbose=True), width=4000)
    flat = " ".join(text.split())
    assert flat.count("outside steps (once)") == 1
    lines = [ln.strip("│ ") for ln in _header(text)]
    assert len(lines) == len(set(lines))


def test_a_gpu_the_program_never_used_is_one_short_line(h: Any) -> None:
    meta = h.gpu_meta()
    meta["devices"].append({"index": 1, "name": "NVIDIA H100 80GB HBM3", "capability": "9.0"})
    session: Session = h.build_gpu().session(meta)
    verbose = h.render_text(render(session, verbose=True), width=200)
    gpu1 = [ln for ln in verbose.splitlines() if "GPU 1" in ln]
    assert [ln.strip("│ ") for ln in gpu1] == ["GPU 1: unused"]
    assert "no busy time recorded" not in verbose
    compact = "\n".join(_header(h.render_text(render(session), width=80)))
    assert "GPU 1" not in compact and "GPU 0: busy 77.5%" in compact
