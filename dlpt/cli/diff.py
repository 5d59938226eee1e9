"""``python -m dlpt diff A.json B.json [--metric M] [--threshold PCT] [--html OUT] [--ascii]``.

``diff`` as the first argument of ``python -m dlpt`` is this subcommand (a script literally
named ``diff`` is run as ``./diff``). Bad input (a missing or corrupt session, a bad option)
gives one line on stderr and exit status 2, like the rest of the command line.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

from dlpt.cli.stdout_guard import Printed, report_output, say_line
from dlpt.errors import DlptError, UsageError
from dlpt.frontend import report_target
from dlpt.frontend.outputs import add_force, check_writable
from dlpt.model.metrics import METRICS

if TYPE_CHECKING:
    from dlpt.views.diff import DiffView

__all__ = ["DiffOptions", "main", "parse"]

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one clear line instead of usage + error
        raise UsageError(message)


def _parser() -> _Parser:
    p = _Parser(
        prog="dlpt diff",
        allow_abbrev=False,
        description="Compare two saved profiles line by line (lines matched by file name, function "
        "and line text, so moved lines still match).",
    )
    p.add_argument("a", metavar="A.json", help="the baseline session (python -m dlpt -o A.json ...)")
    p.add_argument("b", metavar="B.json", help="the session to compare with it")
    p.add_argument(
        "--metric",
        choices=list(METRICS),
        help="what to compare (default: gpu if either has GPU time, else cpu)",
    )
    p.add_argument(
        "--threshold",
        type=float,
        default=1.0,
        metavar="PCT",
        help="hide lines below PCT percent of the larger total (default: 1)",
    )
    p.add_argument("--html", metavar="OUT", help="also write the comparison as a self-contained HTML page")
    p.add_argument("--ascii", action="store_true", help="draw with ASCII characters only")
    report_target.add_arguments(p)
    p.add_argument("-q", "--quiet", action="store_true", help="no 'wrote ...' lines (errors still show)")
    add_force(p)
    return p


def _say(msg: str) -> None:
    say_line("dlpt", msg)


@dataclass(frozen=True)
class DiffOptions:
    """``dlpt diff``'s options: the sessions compared, the metric (None: GPU time when either has
    any, else CPU op time), the threshold (a fraction of the larger total), the page, ASCII, and
    where the comparison goes (``target``)."""

    a: str
    b: str
    metric: str | None
    threshold: float
    html: str | None
    ascii: bool
    target: report_target.ReportTarget
    quiet: bool = False
    force: bool = False


def parse(argv: list[str]) -> DiffOptions:
    """The options of ``dlpt diff``, checked (UsageError says what is wrong; SystemExit after
    ``--help``)."""
    ns = _parser().parse_args(argv)
    if not 0.0 <= ns.threshold < 100.0:
        raise UsageError(f"--threshold must be a percentage in [0, 100), got {ns.threshold:g}")
    if ns.html is not None:
        if os.path.realpath(ns.html) in (os.path.realpath(ns.a), os.path.realpath(ns.b)):
            raise UsageError(f"--html {ns.html}: is one of the sessions compared; it would be overwritten")
        check_writable(ns.html, "--html", ns.force)
    others = [("A.json", ns.a), ("B.json", ns.b), ("--html", ns.html)]
    target = report_target.target(ns.report_file, ns.width, bool(ns.force), others)
    if target.path is not None:
        report_target.check(target.path, ns.force)
    return DiffOptions(
        ns.a, ns.b, ns.metric, ns.threshold / 100.0, ns.html, ns.ascii, target, ns.quiet, ns.force
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``dlpt diff``; returns the exit status."""
    try:
        opts = parse(list(sys.argv[1:] if argv is None else argv))
    except UsageError as e:
        _say(f"diff: {e}")
        return EXIT_USAGE
    except SystemExit as e:  # --help
        return e.code if isinstance(e.code, int) else 0
    from dlpt.model.render_limit import TooLargeToRender, check_sessions
    from dlpt.model.session import Session
    from dlpt.views.diff import diff_view

    try:
        a, b = Session.load(opts.a), Session.load(opts.b)
        check_sessions("a comparison", a, b)  # both: dlpt.model.render_limit
    except DlptError as e:
        _say(f"diff: {e}" if isinstance(e, TooLargeToRender) else str(e))
        return EXIT_USAGE
    d = diff_view(a, b, opts.a, opts.b, opts.metric)
    if not _print(d, opts):
        return EXIT_USAGE
    return 0 if opts.html is None or _write_html(d, opts) else EXIT_USAGE


def _print(d: DiffView, opts: DiffOptions) -> bool:
    """The comparison to its target (stdout or ``--report-file``); whether it worked."""
    from rich.console import Console

    from dlpt.renderers.terminal.diff import render_diff
    from dlpt.renderers.terminal.output import print_to

    target = opts.target
    try:
        # stdout may be a pipe whose reader left: one line, never a traceback (a file is ours).
        guard = (
            report_output(_say, "the comparison")
            if target.path is None
            else contextlib.nullcontext(Printed())
        )
        with target.open() as where, guard as printed:
            ascii = opts.ascii or Console(file=where.file).options.ascii_only  # the encoding's
            print_to(
                render_diff(d, opts.threshold, ascii), file=where.file, width=where.width, color=where.color
            )
        if printed.failed:  # said; stdout could not take it (a full disk)
            return False
    except (OSError, DlptError) as e:
        _say(f"could not write the text report to {target.path}: {e}")
        return False
    if target.path is not None and not opts.quiet:
        _say(f"wrote the text report to {target.path}")
    return True


def _write_html(d: DiffView, opts: DiffOptions) -> bool:
    from dlpt.renderers.html.diff_page import write_diff_html

    assert opts.html is not None
    try:
        write_diff_html(d, opts.html, force=opts.force)
    except (OSError, DlptError) as e:
        _say(f"could not write the HTML diff to {opts.html}: {e}")
        return False
    if not opts.quiet:
        _say(f"wrote HTML diff to {opts.html}")
    return True


def build_parser() -> argparse.ArgumentParser:
    """``dlpt diff``'s parser, as :func:`main` uses it (tools/gen_cli_reference.py documents it)."""
    return _parser()
