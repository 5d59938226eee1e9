"""``python -m dlpt verify BASE.json [options] -- COMMAND...``: run the command again under dlpt
with the options the base session was recorded with, compare line by line with ``dlpt diff``'s
verdicts, and end with the decision as the exit status (:mod:`dlpt.query.gate`): 0 no line
significantly slower, 1 one is (or an ``--expect-faster`` line did not get faster), 2 bad input
(or the command failed), 3 the data cannot decide (a line that matters is "can't tell"; with
``--runs N`` the command runs again, up to N times, until a run decides). docs/agents.md says how
to use it as a CI gate.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from dlpt.cli.stdout_guard import report_output, say_line
from dlpt.errors import DlptError, UsageError
from dlpt.model.metrics import METRICS
from dlpt.query.gate import CANT_TELL_STATUS, USAGE

if TYPE_CHECKING:
    from dlpt.model.session import Session

__all__ = ["VerifyOptions", "main", "build_parser", "parse", "split_command", "verify_once", "run_verify"]

#: How many runs ``--runs`` may ask for (each is a whole run of the program).
MAX_RUNS = 10


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    """``dlpt verify``'s parser (tools/gen_cli_reference.py documents it)."""
    p = _Parser(
        prog="dlpt verify",
        allow_abbrev=False,
        usage="dlpt verify BASE.json [options] -- COMMAND...",
        description="Run COMMAND (script.py args, -m module, -c code) under dlpt as BASE.json was "
        "recorded, compare each line with dlpt diff's verdicts and exit 0 when no line is significantly "
        "slower, 1 when one is, 2 on bad input, 3 when the runs cannot decide (docs/agents.md).",
    )
    p.add_argument(
        "base", metavar="BASE.json", help="the session to compare against (python -m dlpt -o BASE.json)"
    )
    p.add_argument(
        "-o", "--output", metavar="NEW.json", help="where the new session goes (default: BASE.new.json)"
    )
    p.add_argument(
        "--max-regression",
        type=float,
        metavar="PCT",
        help="the regression tolerated: a slower line fails only past PCT%%, and a pass needs every line's "
        "interval to rule out more (default: fail past 10%%, pass when 1.5x is ruled out)",
    )
    p.add_argument(
        "--expect-faster",
        action="append",
        default=[],
        metavar="FILE:LINE",
        help="fail unless this line got faster",
    )
    p.add_argument(
        "--runs",
        type=int,
        default=1,
        metavar="N",
        help="run again while the verdict is can't tell, N runs at most",
    )
    p.add_argument(
        "--allow-cant-tell", action="store_true", help="exit 0, not 3, when the runs cannot decide"
    )
    p.add_argument(
        "--time-limit",
        type=float,
        metavar="S",
        help="stop each run after S seconds (what it captured is kept)",
    )
    p.add_argument(
        "--metric", choices=list(METRICS), help="what to compare (default: gpu if either has any, else cpu)"
    )
    p.add_argument("--top", type=int, default=10, metavar="N", help="lines shown (default: 10)")
    p.add_argument("--json", action="store_true", help="print the decision and the comparison as JSON")
    return p


@dataclass(frozen=True)
class VerifyOptions:
    """``dlpt verify``'s options (before the command): the base session, where the new one goes
    (None: BASE.new.json), the regression tolerated in percent (None: the gate's default), the
    lines that must get faster, how many runs at most, whether "can't tell" passes, each run's
    time limit in seconds (None: none), the metric compared (None: GPU time if either session
    has any, else CPU time), the lines shown and the answer as JSON. Checked by
    :func:`run_verify`."""

    base: str
    output: str | None = None
    max_regression: float | None = None
    expect_faster: tuple[str, ...] = ()
    runs: int = 1
    allow_cant_tell: bool = False
    time_limit: float | None = None
    metric: str | None = None
    top: int = 10
    json: bool = False


def parse(argv: Sequence[str]) -> VerifyOptions:
    """verify's own arguments (those before ``--``) as options; UsageError for what argparse
    refuses, SystemExit after ``--help``."""
    ns = build_parser().parse_args(list(argv))
    return VerifyOptions(
        base=ns.base,
        output=ns.output,
        max_regression=ns.max_regression,
        expect_faster=tuple(ns.expect_faster),
        runs=ns.runs,
        allow_cant_tell=ns.allow_cant_tell,
        time_limit=ns.time_limit,
        metric=ns.metric,
        top=ns.top,
        json=ns.json,
    )


def split_command(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(verify's own arguments, the command after ``--``); a leading ``python`` is dropped (dlpt
    runs the program in its own interpreter)."""
    args = list(argv)
    if "--" not in args:
        return args, []  # main says so after --help had its chance
    i = args.index("--")
    command = args[i + 1 :]
    if command and os.path.basename(command[0]).startswith("python") and len(command) > 1:
        command = command[1:]
    return args[:i], command


def _check(opts: VerifyOptions) -> None:
    if not 1 <= opts.runs <= MAX_RUNS:
        raise UsageError(f"--runs must be 1 to {MAX_RUNS}, got {opts.runs}")
    if opts.max_regression is not None and not 0 <= opts.max_regression < 1000:
        raise UsageError(f"--max-regression must be a percentage >= 0, got {opts.max_regression:g}")
    if opts.time_limit is not None and not opts.time_limit > 0:
        raise UsageError(f"--time-limit must be positive, got {opts.time_limit:g}")
    if not 0 <= opts.top <= 200:
        raise UsageError(f"--top must be 0 to 200, got {opts.top}")


def verify_once(base: Session, base_path: str, new_path: str, opts: VerifyOptions) -> dict[str, Any]:
    """Compare ``base`` with the session at ``new_path``: the verdict answer (docs/query-format.md)."""
    from dlpt.model.session import Session
    from dlpt.query.compare import compare_answer, diff_metric, judged, larger_total
    from dlpt.query.gate import decide
    from dlpt.query.predictions import predictions
    from dlpt.views.diff import diff_view

    new = Session.load(new_path)
    d = diff_view(base, new, base_path, new_path).diff
    metric = diff_metric(d, opts.metric)
    shift, changes = judged(d, metric)
    pct = opts.max_regression / 100 if opts.max_regression is not None else None
    dec = decide(
        changes,
        d.tested,
        max_regression=pct,
        expect_faster=opts.expect_faster,
        allow_cant_tell=opts.allow_cant_tell,
        total=larger_total(d, metric),
    )
    return {
        "status": dec.status,
        "decision": {0: "not slower", 1: "slower", 3: "can't tell"}[dec.status],
        "reasons": dec.reasons,
        "compare": compare_answer(d, metric, shift, changes, opts.top, (base_path, new_path)),
        "predictions": predictions(base, d, shift, changes),
    }


def run_verify(opts: VerifyOptions, command: list[str], cwd: str | None = None) -> dict[str, Any]:
    """Every run until one decides (``--runs``); the answer of the last, with the runs listed
    (DlptError for bad options or input, OSError when the command cannot start)."""
    _check(opts)
    from dlpt.cli.base_flags import flags_of
    from dlpt.cli.bounded_run import run_bounded
    from dlpt.frontend.outputs import check_writable
    from dlpt.model.session import Session

    base = Session.load(opts.base)
    new_path = opts.output or os.path.splitext(opts.base)[0] + ".new.json"
    if os.path.realpath(new_path) == os.path.realpath(opts.base):
        raise UsageError(f"-o {new_path}: is the base session; it would be overwritten")
    check_writable(new_path, "-o", True)
    flags = flags_of(base.typed_meta)
    runs: list[dict[str, Any]] = []
    answer: dict[str, Any] = {}
    for i in range(opts.runs):
        r = run_bounded(command, new_path, flags, time_limit=opts.time_limit, cwd=cwd)
        runs.append(
            {"session": new_path, "exit": r.status, "stopped": r.stopped, "seconds": round(r.seconds, 1)}
        )
        if not r.saved or (r.status != 0 and r.stopped is None):
            lost = " without a session" if not r.saved else ""
            raise UsageError(f"the command exited {r.status}{lost}: {r.output[-500:].strip()}")
        answer = verify_once(base, opts.base, new_path, opts)
        runs[-1]["decision"] = answer["decision"]
        if answer["status"] != CANT_TELL_STATUS or i == opts.runs - 1:
            break
        say_line("dlpt", f"verify: can't tell from run {i + 1}; running again ({i + 2} of {opts.runs})")
    return {"format": "dlpt-verify", "version": 1, "base": opts.base, "flags": flags, **answer, "runs": runs}


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``dlpt verify``; returns the exit status."""
    try:
        own, command = split_command(list(sys.argv[1:] if argv is None else argv))
        opts = parse(own)
        if not command:
            raise UsageError("the command goes after --: dlpt verify BASE.json -- train.py args")
        answer = run_verify(opts, command)
    except SystemExit as e:  # --help
        return e.code if isinstance(e.code, int) else 0
    except (DlptError, OSError) as e:
        say_line("dlpt", f"verify: {e}")
        return USAGE
    from dlpt.cli.query import dumps
    from dlpt.query.text import verify_text

    with report_output(lambda m: say_line("dlpt", m), "the verdict") as printed:
        print(dumps(answer) if opts.json else verify_text(answer))
    return USAGE if printed.failed else int(answer["status"])
