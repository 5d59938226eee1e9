"""Rendering scales with what is shown, not with what was recorded: a million-node session renders
its default view (a few dozen rows above the threshold), and a runaway recursion 100,000 frames
deep prints a bounded number of lines with a row that says how many levels it hides. What is
shown is checked, not how long it took (tools/render_scale.py measures that)."""

from __future__ import annotations

import re

import pytest

from dlpt.model.session import Session
from dlpt.renderers.terminal.report import render
from tests.big_sessions import NODES_PER_LINE, deep_session, wide_session


@pytest.fixture(scope="module")
def million() -> tuple[dict, Session]:
    d = wide_session(1_000_000)
    return d, Session.from_dict(d)


def test_a_million_nodes_render_the_lines_that_matter(h, million: tuple[dict, Session]) -> None:
    d, session = million
    text = h.render_text(render(session), width=140).split("Hottest lines")[0]  # the tree
    n_lines = (len(d["nodes"]) - 2) // NODES_PER_LINE
    heavy = [i for i in range(n_lines) if i % 20_000 == 0]
    shown = set(re.findall(r"(mod\d+\.py:\d+) step\d+", text))
    assert shown == {f"mod{i % 499}.py:{10 + i}" for i in heavy}
    # Each heavy line calls its model line (torch's module frames folded away), forward and
    # backward beneath it.
    assert text.count("Model.forward") == len(heavy)
    assert text.count("<backward>") == len(heavy) and text.count("AddmmBackward0") == len(heavy)
    total = sum(n["m"].get("gpu_ns", 0) for n in d["nodes"])
    assert f"totals: GPU {total / 1e9:.2f}s" in text
    assert len(text.splitlines()) < 200


def test_a_runaway_recursion_prints_a_bounded_tree() -> None:
    from tests.unit.conftest import render_text

    session = Session.from_dict(deep_session(100_000))
    text = render_text(render(session), width=120)
    lines = text.splitlines()
    assert len(lines) < 200
    tree = text.split("Hottest lines")[0].splitlines()  # the hottest lines follow the tree
    rows = [ln for ln in tree if "rec.py:" in ln]
    assert len(rows) == 100  # the first 100 levels below the root
    marker = next(ln for ln in lines if "more levels" in ln)
    # Below them: the other 99,900 frames, the op and its kernel.
    assert "... 99,902 more levels" in marker
