"""``%dlpt`` and ``%%dlpt``: profile a statement or a cell in IPython and Jupyter, and show the
report below it.

The code runs as the cell would (in the user's namespace, IPython syntax such as ``!cmd`` and
other magics included, the last expression's value displayed), under a file of its own that
IPython knows as the cell: its lines keep the cell's line numbers, its text is in
:mod:`linecache` (so tracebacks and the saved source show it), and reports name it ``In [N]``
(:mod:`dlpt.capture.cells`). The frames above the magic (the kernel, IPython, the cell line that
called the magic) are not the profiled code: they are marked library code, so the report starts
at the cell.

Afterwards the report is shown: rich's HTML in Jupyter, the terminal report in a terminal
IPython (rich tells them apart), the HTML report inline with ``--inline-html``. If the code
raised, the profile is still stopped and shown first, then the exception goes on (the cell fails
as it would have, IPython shows its traceback without dlpt's frames), as under ``python -m dlpt``.
"""

from __future__ import annotations

import ast
import linecache
import os
import sys
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import Any

from dlpt.api import profile
from dlpt.capture.cells import cell_labels, cell_number
from dlpt.capture.step_on import instrument_main
from dlpt.errors import DlptError, UsageError
from dlpt.frontend.ending import Ending
from dlpt.frontend.open_report import open_report
from dlpt.frontend.options import RunOptions
from dlpt.frontend.status_line import StatusLine
from dlpt.model.meta import typed_field
from dlpt.model.session import Session
from dlpt.notebook.inline import inline_report
from dlpt.notebook.options import HelpShown, parse_cell, parse_line
from dlpt.views.run import RunView

__all__ = ["fold_frames_above", "run_profiled"]


def _stack_above() -> list[tuple[str, int]]:
    """(file, line) of every frame that called the magic, outermost first."""
    out = []
    f: FrameType | None = sys._getframe(1)
    while f is not None:
        out.append((f.f_code.co_filename, f.f_lineno))
        f = f.f_back
    out.reverse()
    return out


def fold_frames_above(session: Session, stack: list[tuple[str, int]]) -> None:
    """Mark library (in place) the frames of ``session`` that are ``stack``, the frames that
    called the magic: from the root down, a frame node continuing the stack in order."""
    matched: dict[int, int] = {}  # node id -> how many frames of the stack its path used
    for n in session.nodes:
        if n["parent"] < 0:
            matched[n["id"]] = 0
            continue
        used = matched.get(n["parent"])
        if used is None or n["kind"] != "frame":
            continue
        key = (n["file"], n["line"])
        at = next((j for j in range(used, len(stack)) if stack[j] == key), None)
        if at is not None:
            n["x"] = dict(n.get("x") or {}, library=True)
            matched[n["id"]] = at + 1


def _outer_cell(stack: list[tuple[str, int]]) -> tuple[str, int] | None:
    """The cell that called the magic (the innermost caller that is a cell): (file, line)."""
    labels = cell_labels({f for f, _ in stack})
    return next(((f, line) for f, line in reversed(stack) if f in labels), None)


def _cell_number(shell: Any, outer: tuple[str, int] | None) -> int:
    """The number of the running cell: that of the cell file calling the magic (IPython names it
    by the cell's number), else the shell's count, which IPython 8 raises after a cell ran and
    IPython 9 before it runs (so there it is one ahead)."""
    number = cell_number(outer[0]) if outer is not None else None
    return number if number is not None else int(getattr(shell, "execution_count", 0) or 0)


def _compile(
    shell: Any, text: str, shown: list[str], first_line: int, step_on: str | None, number: int
) -> tuple[str, CodeType, CodeType | None]:
    """Compile ``text`` (IPython syntax) as lines ``first_line``... of cell ``number``, whose lines
    are ``shown``: (its file, the code, the last expression, whose value is displayed, or None)."""
    source = "".join(line if line.endswith("\n") else line + "\n" for line in shown)
    file = shell.compile.cache(source, number, raw_code=source)  # linecache + the cell's name
    python = shell.transform_cell(text)
    # IPython drops leading blank lines: the code starts that much further down.
    skipped = _blank_lead(text) - _blank_lead(python)
    try:
        tree = ast.parse(python, file)
    except SyntaxError as e:
        raise _at_users_line(e, file, shown, first_line - 1 + skipped, text) from None
    ast.increment_lineno(tree, first_line - 1 + skipped)
    if step_on is not None:
        tree = instrument_main(tree, step_on)  # defs of the cell are found where defined
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    code = shell.compile(tree, file, "exec")
    value = shell.compile(ast.Expression(body=last.value), file, "eval") if last is not None else None
    return file, code, value


def _at_users_line(e: SyntaxError, file: str, shown: list[str], shift: int, text: str) -> SyntaxError:
    """The SyntaxError of compiling the user's code, placed as python would place it in the cell:
    its line of the cell (``shown``, whose code starts ``shift`` lines down), that line's text as
    typed (``%dlpt`` and all) and the column on it. Marked for :func:`shown_as_the_cells` (no
    traceback through dlpt's frames)."""
    lineno = (e.lineno or 1) + shift
    typed = shown[lineno - 1] if 0 < lineno <= len(shown) else (e.text or "")
    own = text.splitlines()[(e.lineno or 1) - 1] if e.lineno and e.lineno <= len(text.splitlines()) else ""
    lead = len(typed.rstrip("\n")) - len(own) if own and typed.rstrip("\n").endswith(own) else 0
    fixed = SyntaxError(
        e.msg,
        (
            file,
            lineno,
            (e.offset or 0) + lead if e.offset is not None else None,
            typed,
            (e.end_lineno or e.lineno or 1) + shift if e.end_lineno is not None else None,
            (e.end_offset or 0) + lead if e.end_offset is not None else None,
        ),
    )
    fixed.dlpt_cell = True  # type: ignore[attr-defined]
    return fixed


def shown_as_the_cells(e: SyntaxError) -> bool:
    """Whether ``e`` is the SyntaxError of compiling the user's code (:func:`_at_users_line`),
    to be raised without dlpt's frames: IPython shows a SyntaxError with every frame of its
    traceback, which would be dlpt's. One the code raises as it runs keeps its traceback."""
    return bool(getattr(e, "dlpt_cell", False))


def _blank_lead(text: str) -> int:
    n = 0
    for line in text.splitlines():
        if line.strip():
            break
        n += 1
    return n


def run_profiled(
    shell: Any,
    opts: RunOptions,
    argv: list[str],
    text: str,
    shown: list[str],
    first_line: int,
    stack: list[tuple[str, int]],
) -> None:
    """Profile ``text`` as lines ``first_line``... of the cell ``shown`` (``stack``: the frames
    that called the magic), then finish as every run does (:class:`dlpt.frontend.ending.Ending`: the
    session, the files, the text report) and show what only a notebook shows."""
    __tracebackhide__ = True  # IPython leaves dlpt's frames out of the cell's traceback
    outer = _outer_cell(stack)
    step_on = opts.capture.step_on
    file, code, last = _compile(shell, text, shown, first_line, step_on, _cell_number(shell, outer))
    prof = profile.of(opts.capture)

    def tidy(session: Session) -> None:  # before the suggestions read it
        fold_frames_above(session, stack)
        _drop_outer_source(session, outer)
        session.set_meta("argv", argv)

    ending = CellEnding(
        opts,
        inform=(lambda _m: None) if opts.quiet else _to_stderr,
        tidy=tidy,
        prefer=(file,),
        line=StatusLine(prof.status).start() if StatusLine.wanted(opts.quiet) else None,
    )
    failed: tuple[Any, ...] | None = None
    value: Any = None
    try:
        prof.start()
    except BaseException:
        ending.stopped()
        raise
    try:
        exec(code, shell.user_global_ns, shell.user_ns)
        if last is not None:  # evaluated in the profile, shown (its repr computed) after it
            value = eval(last, shell.user_global_ns, shell.user_ns)
    except BaseException:  # noqa: BLE001 - raised again after the report
        failed = sys.exc_info()
    ending.run(prof)  # what failed there was said; the cell's own outcome follows
    if ending.view is not None:  # None: the stop failed (said), or it joined a running profile
        _show(ending.view, opts)
    if failed is not None:  # the cell fails as it would have (a notebook's "run all" stops)
        raise failed[1].with_traceback(failed[2])
    if value is not None:
        shell.displayhook(value)  # Out[N], as the cell would have shown it


def _to_stderr(msg: str) -> None:
    print(f"dlpt: {msg}", file=sys.stderr, flush=True)


@dataclass
class CellEnding(Ending):
    """The run's one ending (:class:`dlpt.frontend.ending.Ending`) with the status line the cell drew
    while it ran, put away once the profile stopped."""

    line: StatusLine | None = None

    def stopped(self) -> None:
        if self.line is not None:
            self.line.stop()
            self.line = None


def _show(view: RunView, opts: RunOptions) -> None:
    """What a notebook adds to the ending: the HTML report in the notebook (``--inline-html``)
    and in a browser (``--open``)."""
    if opts.inline_html:
        from IPython.display import HTML, display

        v = opts.view
        display(
            HTML(
                inline_report(view, metric=opts.report.metric, show_all=v.show_all, peak_tflops=v.peak_tflops)
            )
        )
    if opts.outputs.open:
        for o in opts.outputs.files:
            if o.kind == "html" and os.path.isfile(o.abspath):
                open_report(o.abspath, _to_stderr if not opts.quiet else (lambda _m: None))


def _drop_outer_source(session: Session, outer: tuple[str, int] | None) -> None:
    """The calling cell's line is IPython's rewrite of the magic (``get_ipython().run_cell_magic(
    ...)``): keep the typed text (the code's own file has it) rather than the rewrite."""
    if outer is None:
        return
    sources = typed_field(session.meta, "sources")  # not typed_meta: the session is still changing
    if sources is not None and outer[0] in sources:
        lines = {k: v for k, v in sources[outer[0]].items() if k != str(outer[1])}
        session.set_meta("sources", {**sources, outer[0]: lines})


def line_magic(shell: Any, line: str, stack: list[tuple[str, int]]) -> None:
    """``%dlpt [options] statement``."""
    __tracebackhide__ = True
    opts, words, statement = parse_line(line)
    outer = _outer_cell(stack)
    if outer is not None and outer[0] in linecache.cache:
        # The calling cell's lines, with the magic's line as typed: the statement is profiled
        # at its line of the cell.
        entry: Any = linecache.cache[outer[0]]  # (size, mtime, lines, name)
        shown = [str(x) for x in entry[2]]
        at = outer[1]
        while len(shown) < at:
            shown.append("\n")
        shown[at - 1] = f"%dlpt {line.strip()}\n"
    else:
        shown, at = [f"%dlpt {line.strip()}\n"], 1
    run_profiled(shell, opts, ["%dlpt", *words, statement], statement, shown, at, stack)


def cell_magic(shell: Any, line: str, cell: str, stack: list[tuple[str, int]]) -> None:
    """``%%dlpt [options]`` atop a cell: the cell's body, from its line 2."""
    __tracebackhide__ = True
    opts, words = parse_cell(line)
    shown = [f"%%dlpt {line.strip()}".rstrip() + "\n", *cell.splitlines(keepends=True)]
    run_profiled(shell, opts, ["%%dlpt", *words], cell, shown, 2, stack)


def _usage(e: DlptError) -> None:
    from IPython.core.error import UsageError as IPythonUsageError

    raise IPythonUsageError(f"dlpt: {e}") from None


def magic(shell: Any, line: str, cell: str | None = None) -> None:
    """The ``dlpt`` line and cell magic (registered by :func:`dlpt.load_ipython_extension`)."""
    __tracebackhide__ = True
    stack = _stack_above()
    try:
        if cell is None:
            line_magic(shell, line, stack)
        else:
            cell_magic(shell, line, cell, stack)
    except HelpShown:
        return
    except UsageError as e:
        _usage(e)
    except SyntaxError as e:
        if not shown_as_the_cells(e):
            raise  # raised by the code as it ran: its traceback as it is
        raise e.with_traceback(None) from None
