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
from typing import NoReturn

from dlpt.cli import report_target
from dlpt.cli.outputs import add_force, check_writable
from dlpt.cli.stdout_guard import Printed, report_output, say_line
from dlpt.errors import DlptError, UsageError
from dlpt.model.metrics import METRICS

__all__ = ["main"]

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


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``dlpt diff``; returns the exit status."""
    try:
        opts = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    except UsageError as e:
        _say(f"diff: {e}")
        return EXIT_USAGE
    except SystemExit as e:  # --help
        return e.code if isinstance(e.code, int) else 0
    if not 0.0 <= opts.threshold < 100.0:
        _say(f"diff: --threshold must be a percentage in [0, 100), got {opts.threshold:g}")
        return EXIT_USAGE
    if opts.html is not None:
        if os.path.realpath(opts.html) in (os.path.realpath(opts.a), os.path.realpath(opts.b)):
            _say(f"diff: --html {opts.html}: is one of the sessions compared; it would be overwritten")
            return EXIT_USAGE
        try:
            check_writable(opts.html, "--html", opts.force)
        except UsageError as e:
            _say(f"diff: {e}")
            return EXIT_USAGE
    try:
        others = [("A.json", opts.a), ("B.json", opts.b), ("--html", opts.html)]
        target = report_target.from_options(opts, others)
        if target.path is not None:
            report_target.check(target.path, opts.force)
    except UsageError as e:
        _say(f"diff: {e}")
        return EXIT_USAGE

    from rich.console import Console

    from dlpt.model.render_limit import TooLargeToRender, check_sessions
    from dlpt.model.session import Session
    from dlpt.renderers.terminal.diff import render_diff
    from dlpt.renderers.terminal.output import print_to
    from dlpt.views.diff import diff_view

    try:
        a, b = Session.load(opts.a), Session.load(opts.b)
        check_sessions("a comparison", a, b)  # both: dlpt.model.render_limit
    except DlptError as e:
        _say(f"diff: {e}" if isinstance(e, TooLargeToRender) else str(e))
        return EXIT_USAGE
    d = diff_view(a, b, opts.a, opts.b, opts.metric)
    try:
        # stdout may be a pipe whose reader left: one line, never a traceback (a file is ours).
        guard = (
            report_output(_say, "the comparison")
            if target.path is None
            else contextlib.nullcontext(Printed())
        )
        with target.open() as where, guard as printed:
            ascii = opts.ascii or Console(file=where.get("file")).options.ascii_only  # the encoding's
            print_to(render_diff(d, opts.threshold / 100.0, ascii), **where)
        if printed.failed:  # said; stdout could not take it (a full disk)
            return EXIT_USAGE
    except (OSError, DlptError) as e:
        _say(f"could not write the text report to {target.path}: {e}")
        return EXIT_USAGE
    if target.path is not None and not opts.quiet:
        _say(f"wrote the text report to {target.path}")
    if opts.html is not None:
        from dlpt.renderers.html.diff_page import write_diff_html

        try:
            write_diff_html(d, opts.html, force=opts.force)
        except (OSError, DlptError) as e:
            _say(f"could not write the HTML diff to {opts.html}: {e}")
            return EXIT_USAGE
        if not opts.quiet:
            _say(f"wrote HTML diff to {opts.html}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """``dlpt diff``'s parser, as :func:`main` uses it (tools/gen_cli_reference.py documents it)."""
    return _parser()
