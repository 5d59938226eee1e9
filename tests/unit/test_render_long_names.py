"""Rendering costs what is shown, not the length of the names: a name is cut to what a row can show
before anything processes it (escaping, measuring cells), so 200 names of 100 kB render about as
fast as 200 names of 1 kB (it was 40x slower: 39 s for 400 names with ``--view all``)."""

from __future__ import annotations

import io
import random
import time

import pytest
from rich.console import Console

from dlpt.model.session import Session
from dlpt.renderers.terminal.format import MAX_SHOWN_CHARS, Fmt
from dlpt.renderers.terminal.output import MAX_WIDTH
from dlpt.renderers.terminal.report import render
from tests.big_sessions import wide_session

HOSTILE = "ab\x1b\x07é漢字;<> "  # escapes, wide characters, markup-looking text


def _session(name_chars: int) -> Session:
    rnd = random.Random(1)
    d = wide_session(2000)
    renamed = 0
    for n in d["nodes"]:
        if renamed < 200 and n["kind"] in ("kernel", "op", "frame"):
            n["name"] += "_" + "".join(rnd.choice(HOSTILE) for _ in range(name_chars))
            renamed += 1
    return Session.from_dict(d)


def _render_s(session: Session, view: str) -> float:
    best = float("inf")
    for _ in range(2):  # the better of two: a busy machine slows one run, rarely both
        t = time.perf_counter()
        Console(file=io.StringIO(), width=120, color_system=None).print(render(session, view=view))
        best = min(best, time.perf_counter() - t)
    return best


@pytest.mark.parametrize("view", ["tree", "all"])
def test_long_names_render_about_as_fast_as_short_ones(view: str) -> None:
    short, long = _render_s(_session(1_000), view), _render_s(_session(100_000), view)
    assert long < 5 * short + 0.3, (short, long)  # 30-45x before names were cut first


def test_a_name_is_cut_to_what_a_row_can_show_and_the_cut_is_marked() -> None:
    assert MAX_SHOWN_CHARS >= 2 * MAX_WIDTH  # never cuts what the widest report could show
    name = "\x1b" * 50_000 + "kernel"
    for ascii, mark in ((False, "…"), (True, "...")):
        cleaned = Fmt(ascii=ascii).clean(name)
        assert cleaned.endswith(mark) and "\x1b" not in cleaned
        assert len(cleaned) <= MAX_SHOWN_CHARS * len("\\x1b") + len(mark)
    assert Fmt().clean("x" * MAX_SHOWN_CHARS) == "x" * MAX_SHOWN_CHARS  # not cut: shown as is
