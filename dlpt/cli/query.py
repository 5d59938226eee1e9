"""``python -m dlpt query SESSION [RANK.json ...] [--json] [--line FILE:LINE] [--top N]``: what the
report shows, as an answer for scripts and agents (docs/query-format.md), or as short text.

Several sessions are the ranks of one job: the answer is about the first, with the report across
ranks under ``ranks.across``. Bad input (a missing or corrupt session, a line the session does
not hold, a bad option) gives one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from dlpt.cli.stdout_guard import report_output, say_line
from dlpt.errors import DlptError, UsageError
from dlpt.model.metrics import METRICS

__all__ = ["QueryOptions", "main", "build_parser", "parse", "dumps"]

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one clear line instead of usage + error
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    """``dlpt query``'s parser (tools/gen_cli_reference.py documents it)."""
    p = _Parser(
        prog="dlpt query",
        allow_abbrev=False,
        description="Answer what a saved profile's report shows, for scripts and agents: the header "
        "with the basis of each fact, the top lines by own cost per step with their 95% intervals, one "
        "line's detail, the suggestions and the ranks (docs/query-format.md).",
    )
    p.add_argument(
        "sessions", nargs="+", metavar="SESSION", help="a saved session (several: ranks of one job)"
    )
    p.add_argument("--json", action="store_true", help="print the answer as JSON (docs/query-format.md)")
    p.add_argument(
        "--line", metavar="FILE:LINE", help="also one line's detail (file name or path, line number)"
    )
    p.add_argument("--top", type=int, default=20, metavar="N", help="how many lines (default: 20)")
    p.add_argument(
        "--metric",
        choices=list(METRICS),
        help="rank lines by (default: gpu if the run has GPU time, else cpu)",
    )
    p.add_argument("--indent", type=int, metavar="N", help="with --json: indent by N (default: one line)")
    return p


@dataclass(frozen=True)
class QueryOptions:
    """``dlpt query``'s options: the sessions (several: the ranks of one job, the answer about the
    first), the answer as JSON (indented by ``indent``, None: one line) or as text, one line's
    detail (``FILE:LINE``), how many lines, and the metric they are ranked by (None: GPU time if
    the run has any, else CPU time)."""

    sessions: tuple[str, ...]
    json: bool = False
    line: str | None = None
    top: int = 20
    metric: str | None = None
    indent: int | None = None


def parse(argv: Sequence[str]) -> QueryOptions:
    """The options of ``dlpt query``, checked (UsageError says what is wrong; SystemExit after
    ``--help``)."""
    ns = build_parser().parse_args(list(argv))
    if ns.indent is not None and not 0 <= ns.indent <= 8:
        raise UsageError(f"--indent must be 0 to 8, got {ns.indent}")
    return QueryOptions(tuple(ns.sessions), ns.json, ns.line, ns.top, ns.metric, ns.indent)


def dumps(answer: Any, indent: int | None = None) -> str:
    """An answer as JSON: UTF-8 text as it is (control characters escaped, as JSON requires)."""
    seps = (",", ":") if indent is None else (",", ": ")
    return json.dumps(answer, ensure_ascii=False, indent=indent, separators=seps)


def answer_of(opts: QueryOptions) -> dict[str, Any]:
    """The answer the options ask for (DlptError for bad input)."""
    from dlpt.cli.loads import check_one_job
    from dlpt.model.render_limit import check_sessions
    from dlpt.model.session import Session
    from dlpt.query import load, query
    from dlpt.query.ranks import across
    from dlpt.views.ranks import rank_set, ranks_view

    loaded = [load(path) for path in opts.sessions]
    check_sessions("an answer", *loaded)  # as large as a report: dlpt.model.render_limit
    first = loaded[0]
    answer = query(first.view(), top=opts.top, line=opts.line, metric=opts.metric, path=first.path)
    if len(loaded) > 1:
        pairs: list[tuple[str, Session]] = [(s.path or "", s) for s in loaded]
        check_one_job(pairs)
        rep = ranks_view(rank_set(pairs), opts.metric)
        answer["ranks"] = {**(answer["ranks"] or {}), "across": across(rep)}
    return answer


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``dlpt query``; returns the exit status."""
    try:
        opts = parse(sys.argv[1:] if argv is None else argv)
        answer = answer_of(opts)
    except SystemExit as e:  # --help
        return e.code if isinstance(e.code, int) else 0
    except DlptError as e:
        say_line("dlpt", f"query: {e}")
        return EXIT_USAGE
    from dlpt.query.text import answer_text

    text = dumps(answer, opts.indent) if opts.json else answer_text(answer)
    with report_output(lambda m: say_line("dlpt", m), "the answer") as printed:
        print(text)
    return EXIT_USAGE if printed.failed else 0
