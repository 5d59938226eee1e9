"""The options of ``%dlpt`` and ``%%dlpt``: the command line's capture and render options, plus
``--inline-html``.

``%dlpt [options] statement``: the options come first; the statement starts at the first word
that is not an option (or after ``--``) and is kept exactly as typed. ``%%dlpt [options]``: the
whole line is options and the cell's body is the code.
"""

from __future__ import annotations

import argparse
import io
import shlex
from collections.abc import Iterator
from typing import NoReturn

from dlpt.errors import UsageError
from dlpt.model.processors import METRICS
from dlpt.renderers.terminal.report import VIEWS

__all__ = ["parse_cell", "parse_line"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _parser(prog: str) -> _Parser:
    p = _Parser(prog=prog, add_help=False, allow_abbrev=False)
    p.add_argument("--view", choices=VIEWS, default="tree")
    p.add_argument("--metric", choices=list(METRICS))
    p.add_argument("--threshold", type=float, default=1.0, metavar="PCT")
    p.add_argument("--depth", type=int, metavar="N")
    p.add_argument("--show-all", action="store_true")
    p.add_argument("--ascii", action="store_true")
    p.add_argument("--peak-tflops", type=float, metavar="N")
    p.add_argument("--skip-first", type=int, default=0, metavar="N")
    p.add_argument("--active", type=int, metavar="M")
    p.add_argument("--step-on", metavar="NAME")
    p.add_argument("--no-gpu", action="store_true")
    p.add_argument("--nested-ops", action="store_true")
    p.add_argument("--flops", action="store_true")
    p.add_argument("-o", "--output", metavar="FILE")
    p.add_argument("--html", metavar="FILE")
    p.add_argument("--inline-html", action="store_true")
    p.add_argument("--no-report", action="store_true")
    p.add_argument("-q", "--quiet", action="store_true")
    return p


def _checked(opts: argparse.Namespace) -> argparse.Namespace:
    if not 0.0 <= opts.threshold < 100.0:
        raise UsageError(f"--threshold must be a percentage in [0, 100), got {opts.threshold:g}")
    if opts.depth is not None and opts.depth < 1:
        raise UsageError("--depth must be >= 1")
    if opts.skip_first < 0:
        raise UsageError("--skip-first must be >= 0")
    if opts.active is not None and opts.active < 1:
        raise UsageError("--active must be >= 1")
    if opts.peak_tflops is not None and not 0 < opts.peak_tflops < float("inf"):
        raise UsageError(f"--peak-tflops must be a positive number, got {opts.peak_tflops:g}")
    return opts


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


def parse_line(line: str) -> tuple[argparse.Namespace, list[str], str]:
    """``%dlpt``'s line: (options, the option words, the statement as typed). UsageError for a
    bad option or no statement."""
    parser = _parser("%dlpt")
    takes_value = {s for a in parser._actions if a.nargs is None for s in a.option_strings}
    words: list[str] = []
    start, value_next = len(line), False
    for word, begin, end in _words(line):
        if word is None and value_next:
            raise UsageError(f"cannot split the value of {words[-1]}: no closing quotation")
        if value_next and word is not None:
            words.append(word)
            value_next = False
        elif word == "--":
            start = end
            break
        elif word is None or not word.startswith("-") or word == "-":
            start = begin
            break
        else:
            words.append(word)
            value_next = word in takes_value
    statement = line[start:].strip()
    if not statement:
        raise UsageError("no statement to profile: %dlpt [options] statement (or %%dlpt atop a cell)")
    return _checked(parser.parse_args(words)), words, statement


def parse_cell(line: str) -> tuple[argparse.Namespace, list[str]]:
    """``%%dlpt``'s line: (options, the option words)."""
    try:
        words = shlex.split(line)
    except ValueError as e:
        raise UsageError(f"cannot split the options: {e}") from None
    return _checked(_parser("%%dlpt").parse_args(words)), words


def build_parser(prog: str) -> argparse.ArgumentParser:
    """The magics' parser (``prog``: ``%dlpt`` or ``%%dlpt``), as :func:`parse_line` and
    :func:`parse_cell` use it (tools/gen_cli_reference.py documents it)."""
    return _parser(prog)
