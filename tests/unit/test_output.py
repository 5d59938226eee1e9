"""Where a printed report goes and how wide it is (dlpt.renderers.terminal.output): off a
terminal as wide as its content, so nothing is cut; no trailing spaces, styles kept."""

from __future__ import annotations

import io

from rich.console import Console

from dlpt.model.session import Session
from dlpt.renderers.terminal.output import MAX_WIDTH, MIN_WIDTH, content_width, print_to, trim
from dlpt.renderers.terminal.report import render
from tests import sessions as S

LONG = "        h = F.gelu(h, approximate='tanh')  # " + "a long comment, " * 20


def _session(line: str | None = None) -> Session:
    raw = S.gpt_eager()
    if line is not None:
        raw["meta"]["sources"][S.GPT_PY]["44"] = line
    return Session.from_dict(raw)


def _lines(renderable: object, width: int) -> list[str]:
    console = Console(width=width, file=io.StringIO(), color_system=None, record=True)
    console.print(renderable)
    return console.export_text().splitlines()


def test_content_width_fits_the_longest_line_whole() -> None:
    renderable = render(_session(LONG))
    width = content_width(renderable)
    assert MIN_WIDTH < width < MAX_WIDTH
    lines = _lines(renderable, width)
    assert any(LONG.strip() in line for line in lines)  # the source line, not cut
    assert max(len(line.rstrip()) for line in lines) == width  # and no wider than needed
    assert not any(LONG.strip() in line for line in _lines(renderable, width - 10))


def test_print_to_a_file_trims_and_sizes() -> None:
    out = io.StringIO()
    print_to(render(_session(LONG)), file=out)
    text = out.getvalue()
    assert LONG.strip() in text and "\x1b" not in text
    assert all(line == line.rstrip() for line in text.splitlines())


def test_trim_keeps_styles() -> None:
    assert trim("a  \x1b[0m\nb \n  c") == "a\x1b[0m\nb\n  c"
    assert trim("x \x1b[2m  \x1b[0m") == "x\x1b[2m\x1b[0m" and trim("   ") == ""
