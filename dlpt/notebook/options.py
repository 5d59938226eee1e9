"""The options of ``%dlpt`` and ``%%dlpt``: every option of the command line, parsed by the
command line's own parser (:func:`dlpt.frontend.parser.build_parser`, so the two never differ), plus
``--inline-html``, into one :class:`~dlpt.frontend.options.RunOptions`, checked before the code
runs (the files it names can be written).

``%dlpt [options] statement``: the options come first; the statement starts at the first word
that is not an option (or after ``--``) and is kept exactly as typed. ``%%dlpt [options]``: the
whole line is options and the cell's body is the code.

Two defaults differ from the command line's: ``--skip-first`` is 0 (a cell is often a single
step: with the automatic warm-up it would count none), and the options about a program's ranks
(``--report-ranks``, ``--rank-timeout``) and ``--load`` are refused with a clear message (a
cell is one process that runs its own code).
"""

from __future__ import annotations

import argparse
import io
import os
import shlex
from collections.abc import Iterator

from dlpt._version import __version__
from dlpt.errors import UsageError
from dlpt.frontend import report_target
from dlpt.frontend.options import RunOptions
from dlpt.frontend.outputs import check_writable
from dlpt.frontend.parser import build_parser as run_parser
from dlpt.frontend.parser import (
    check_report,
    check_values,
    collect_outputs,
    report_target_of,
    run_options,
)

__all__ = ["parse_cell", "parse_line", "HelpShown"]

#: Command-line options a cell has no use for, and why.
_NOT_HERE = {
    "--load": "re-renders a saved session: use python -m dlpt --load FILE (or dlpt.Session.load)",
    "--report-ranks": "applies to a program run under a launcher, one process per rank",
    "--rank-timeout": "applies to a program run under a launcher, one process per rank",
    "--kernel-lines": "shows a saved session's PC samples: use python -m dlpt --load FILE --kernel-lines K",
}


class HelpShown(Exception):
    """``-h`` or ``--version``: printed; nothing to run."""


def _parser(prog: str) -> argparse.ArgumentParser:
    p = run_parser(prog)
    p.add_argument(
        "--inline-html", action="store_true", help="show the HTML report in the notebook, below the cell"
    )
    p.set_defaults(skip_first=0)
    return p


def _parse(prog: str, words: list[str]) -> argparse.Namespace:
    parser = _parser(prog)
    if any(w in ("-h", "--help") for w in words):
        print(parser.format_help())
        raise HelpShown
    if any(w in ("-V", "--version") for w in words):
        print(f"dlpt {__version__}")
        raise HelpShown
    ns = parser.parse_args(words)
    for flag, why in _NOT_HERE.items():
        if getattr(ns, flag.lstrip("-").replace("-", "_")) is not None:
            raise UsageError(f"{flag} {why}; not an option of {prog}")
    check_values(ns, collect_outputs(ns))
    check_report(ns)
    return ns


def _checked(ns: argparse.Namespace) -> RunOptions:
    """The cell's options, every file they name checked writable before the code runs (as the
    command line does): the session (-o), the HTML report and exports, the text report."""
    force, files = bool(ns.force), collect_outputs(ns)
    if ns.output is not None:
        check_writable(ns.output, "-o", force)
    for o in files:
        check_writable(o.path, o.flag, force)
        if ns.output is not None and os.path.realpath(o.path) == os.path.realpath(ns.output):
            raise UsageError(f"{o.flag} {o.path}: the same file as -o")
    target = report_target_of(ns, [("-o", ns.output)], files)
    if target.path is not None:
        report_target.check(target.path, force)
    return run_options(ns, files, target)


def _words(line: str) -> Iterator[tuple[str | None, int, int]]:
    """(word, offset of its start, offset just past it) for each shell word of ``line``, read
    lazily: the statement after the options may hold anything. A word that does not split (an
    unbalanced quote) comes as None, and ends the words."""
    stream = io.StringIO(line)
    lexer = shlex.shlex(stream, posix=True, punctuation_chars=False)
    lexer.whitespace_split = True
    lexer.commenters = ""
    while True:
        begin = len(line) - len(line[stream.tell() :].lstrip())
        try:
            word = lexer.get_token()
        except ValueError:
            yield None, begin, len(line)
            return
        if word is None or word == lexer.eof:
            return
        yield word, begin, stream.tell()


def parse_line(line: str) -> tuple[RunOptions, list[str], str]:
    """``%dlpt``'s line: (options, the option words, the statement as typed). UsageError for a
    bad option or no statement; HelpShown after ``-h`` or ``-V``."""
    parser = _parser("%dlpt")
    # How many values each option takes (--export FMT FILE: two).
    values = {
        s: (a.nargs if isinstance(a.nargs, int) else 1) for a in parser._actions for s in a.option_strings
    }
    words: list[str] = []
    start, value_next = len(line), 0
    for word, begin, end in _words(line):
        if word is None and value_next:
            raise UsageError(f"cannot split the value of {words[-1]}: no closing quotation")
        if value_next and word is not None:
            words.append(word)
            value_next -= 1
        elif word == "--":
            start = end
            break
        elif word is None or not word.startswith("-") or word == "-":
            start = begin
            break
        else:
            words.append(word)
            value_next = 0 if "=" in word else values.get(word, 0)
    statement = line[start:].strip()
    ns = _parse("%dlpt", words)
    if not statement:
        raise UsageError("no statement to profile: %dlpt [options] statement (or %%dlpt atop a cell)")
    return _checked(ns), words, statement


def parse_cell(line: str) -> tuple[RunOptions, list[str]]:
    """``%%dlpt``'s line: (options, the option words)."""
    try:
        words = shlex.split(line)
    except ValueError as e:
        raise UsageError(f"cannot split the options: {e}") from None
    return _checked(_parse("%%dlpt", words)), words


def build_parser(prog: str) -> argparse.ArgumentParser:
    """The magics' parser (``prog``: ``%dlpt`` or ``%%dlpt``), as :func:`parse_line` and
    :func:`parse_cell` use it (tools/gen_cli_reference.py documents it)."""
    return _parser(prog)
