"""The report ends with the hottest lines by own cost (issue 48): each line's own cost per step,
its share and its source text, which is shortened from the middle (or given a row of its own),
never cut at its end; the section follows the tree and the threshold."""

from __future__ import annotations

from typing import Any

from dlpt.model.session import Session
from dlpt.renderers.terminal.report import render

SRC = "/home/u/proj/model.py"
LONG = "hidden = self.attention_projection(normalised_inputs, attention_mask=mask) + residual_stream"


def session(h: Any) -> Session:
    """A caller line (no own ops) over a long line (3 ms of its own) and a short one (1 ms)."""
    b = h.Builder()
    top = b.frame(0, SRC, 10, "step")
    b.op(b.frame(top, SRC, 20, "forward"), "aten::mm", calls=1, cpu_ns=3_000_000)
    b.op(b.frame(top, SRC, 21, "forward"), "aten::add", calls=1, cpu_ns=1_000_000)
    sources = {SRC: {"10": "    loss = model(x)", "20": f"        {LONG}", "21": "        out = hidden + 1"}}
    return b.session({"sources": sources, "steps": {"profiled": 0, "seen": 0}})


def hot_rows(text: str) -> list[str]:
    section = text.split("Hottest lines", 1)[1]
    return [ln for ln in section.splitlines()[3:] if ln.strip()]


def test_the_report_ends_with_the_hottest_lines_by_own_cost(h: Any) -> None:
    text = h.render_text(render(session(h)), width=200)
    assert text.index("Top-down") < text.index("Hottest lines")
    rows = hot_rows(text)
    # The caller (line 10) has no own cost: only the two lines with ops, largest first.
    assert len(rows) == 2 and "model.py:20 forward" in rows[0] and "model.py:21 forward" in rows[1]
    assert rows[0].split()[:2] == ["3.00ms", "75.0%"] and rows[1].split()[:2] == ["1.00ms", "25.0%"]
    assert LONG in rows[0]  # room enough: the whole source text


def test_long_source_text_is_shortened_from_the_middle(h: Any) -> None:
    text = h.render_text(render(session(h)), width=80)
    row = hot_rows(text)[0]
    assert len(row) <= 80
    start, end = row.split("model.py:20 forward  ", 1)[1].split("…")
    assert LONG.startswith(start) and LONG.endswith(end) and len(end) >= 3
    # The tree's row of that line keeps both ends of it too.
    tree_row = next(ln for ln in text.split("Hottest lines")[0].splitlines() if "model.py:20" in ln)
    assert tree_row.rstrip().endswith(LONG[-3:])


def test_a_narrow_terminal_gives_the_source_a_row_of_its_own(h: Any) -> None:
    text = h.render_text(render(session(h)), width=44)
    rows = hot_rows(text)
    assert "model.py:20" in rows[0] and "hidden" not in rows[0]
    head, _, tail = rows[1].strip().partition("…")
    assert LONG.startswith(head) and LONG.endswith(tail) and len(head) >= 5


def test_the_threshold_applies(h: Any) -> None:
    rows = hot_rows(h.render_text(render(session(h), threshold=0.3), width=200))
    assert len(rows) == 1 and "model.py:20" in rows[0]
