"""Where a console report goes, how wide it is and whether it is coloured: one rule for every
printed report (one session's, ``dlpt diff``'s, the report across ranks).

Width, first that applies:

1. the width asked for (``--width N``, ``width=``);
2. ``COLUMNS`` in the environment (what the user set; rich reads it);
3. the terminal's width, when printing to a terminal;
4. otherwise (a pipe, a file, ``--report-file``) the report's own width: every line as long as
   its content needs, so nothing is cut (a source line, a kernel name) and nothing wraps (a
   header fact), at least :data:`MIN_WIDTH` and at most :data:`MAX_WIDTH` columns. A pipe or a
   file has no width of its own; whoever reads it (``less -S``, an editor, ``grep``) scrolls or
   searches, so cutting a line to a guessed 80 columns would only lose what they came for. The
   cap keeps a pathological name (sessions are untrusted) from making megabyte-long lines.

Colour only on a terminal: ``NO_COLOR`` turns it off, ``FORCE_COLOR`` turns it on for a pipe
(rich honours both); a report file never has any. Trailing spaces (rich pads table cells and
titles) are stripped from every line.
"""

from __future__ import annotations

import io
import os
import re
import sys
from collections.abc import Callable, Iterable
from typing import IO

from rich.console import Console, RenderableType
from rich.measure import Measurement

from dlpt.model.gc_pause import gc_paused

__all__ = ["MIN_WIDTH", "MAX_WIDTH", "content_width", "is_terminal", "make_console", "print_to", "trim"]

MIN_WIDTH = 80
MAX_WIDTH = 1000


def is_terminal(file: IO[str] | None) -> bool:
    """Whether ``file`` is a terminal (False for anything that cannot say, or is closed)."""
    isatty = getattr(file, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except (ValueError, OSError):
        return False


def _columns() -> int | None:
    text = os.environ.get("COLUMNS", "")
    return int(text) if text.isdigit() and int(text) > 0 else None


def content_width(renderable: RenderableType) -> int:
    """The width ``renderable`` needs so that no line is cut or wrapped, within
    [MIN_WIDTH, MAX_WIDTH]."""
    probe = Console(width=MAX_WIDTH, file=io.StringIO(), color_system=None)
    with gc_paused():
        measured = Measurement.get(probe, probe.options, renderable).maximum
    return max(MIN_WIDTH, min(MAX_WIDTH, measured))


def make_console(
    file: IO[str] | None = None,
    width: int | None = None,
    renderable: RenderableType | None = None,
    color: bool | None = None,
) -> Console:
    """A Console for a report written to ``file`` (stdout when None) by the rules above.
    ``renderable`` is what will be printed (its content width is the default off a terminal);
    ``color=False`` never colours (report files), None lets the terminal rules decide."""
    out = sys.stdout if file is None else file
    if width is None:
        width = _columns()
    if width is None and not is_terminal(out):
        width = content_width(renderable) if renderable is not None else MIN_WIDTH
    if color is False:
        return Console(file=out, width=width, color_system=None, force_terminal=False)
    return Console(file=out, width=width)


_SGR = re.compile(r"\x1b\[[0-9;]*m")


def _trim_line(line: str) -> str:
    """``line`` without the spaces at its end, the style codes among them kept (a coloured
    report pads styled cells): one pass from the end, linear in what it removes."""
    end, codes = len(line), []
    while end:
        if line[end - 1] == " ":
            end -= 1
            continue
        start = line.rfind("\x1b[", 0, end) if line[end - 1] == "m" else -1
        if start < 0 or not _SGR.fullmatch(line, start, end):
            break
        codes.append(line[start:end])
        end = start
    return line[:end] + "".join(reversed(codes))


def trim(text: str) -> str:
    """``text`` without spaces at the ends of its lines (the style codes among them kept)."""
    return "\n".join(_trim_line(line) if line.endswith((" ", "m")) else line for line in text.split("\n"))


def print_to(
    renderable: RenderableType,
    console: Console | None = None,
    *,
    file: IO[str] | None = None,
    width: int | None = None,
    color: bool | None = None,
    pieces: Callable[[RenderableType, Console], Iterable[RenderableType]] | None = None,
) -> None:
    """Print ``renderable`` on ``console`` as it is (the caller's console, the caller's rules), or
    on a console made by :func:`make_console` for ``file``, ``width`` and ``color``, without
    trailing spaces (in Jupyter rich shows its own output, in a ``<pre>`` of its own).

    ``pieces`` splits ``renderable`` into parts printed one after the other with the same output
    (rich renders all of one ``print`` into memory first: a report of a million rows is printed
    a thousand lines at a time)."""
    with gc_paused():  # views lay out their rows while printing
        if console is None:
            console = make_console(file, width, renderable, color)
            trimmed = not console.is_jupyter
        else:
            trimmed = False
        if console.is_jupyter and _jupyter_display(renderable, console):
            return
        # In Jupyter every print is an output cell of its own: one print, the report whole.
        split = pieces is not None and not console.is_jupyter
        for piece in pieces(renderable, console) if split and pieces is not None else (renderable,):
            if not trimmed:
                console.print(piece)
                continue
            with console.capture() as captured:
                console.print(piece)
            console.file.write(trim(captured.get()))
        if trimmed:
            console.file.flush()


def _jupyter_display(renderable: RenderableType, console: Console) -> bool:
    """Show ``renderable`` in Jupyter as one output: rich's HTML, and a ``text/plain`` part
    without the terminal's colour codes (rich's own display puts ANSI sequences there, which a
    notebook saved as text, nbconvert's text output or a log then shows raw: issue 33). False
    when this rich has no such display (then rich shows it its own way)."""
    try:
        from IPython.display import display
        from rich.jupyter import JupyterRenderable, _render_segments
    except ImportError:
        return False
    segments = list(console.render(renderable, console.options))
    text = "".join(seg.text for seg in segments if not seg.control)
    display(JupyterRenderable(_render_segments(segments), text))  # type: ignore[no-untyped-call]
    return True
