"""The command line's options: argv split into dlpt's options and the program's part, each
command's own checks (``load`` refuses what only a run does; a run's output paths must be
writable before the program starts, one file per rank under a launcher), and what they become:
:class:`~dlpt.frontend.options.RunOptions` for a run, :class:`~dlpt.frontend.options.LoadOptions`
for ``load``. The options themselves are the notebook magic's too (:mod:`dlpt.frontend.parser`).
"""

from __future__ import annotations

import argparse
import os
import shlex

from dlpt.capture.ranks.env import env_problem, from_env
from dlpt.cli import voice
from dlpt.errors import UnsafeFileError, UsageError
from dlpt.files.rank_paths import expand_load, rank_path
from dlpt.files.write_target import resolve_target
from dlpt.frontend import outputs, report_target
from dlpt.frontend.grace import grace_s
from dlpt.frontend.options import LoadOptions, Output, RunOptions
from dlpt.frontend.parser import (
    Parser,
    build_parser,
    check_report,
    check_values,
    collect_outputs,
    load_options,
    report_target_of,
    run_options,
)

__all__ = ["build_parser", "parse_command_line", "parse_load", "split_program"]


def split_program(parser: Parser, argv: list[str]) -> tuple[list[str], list[str]]:
    """Split argv into dlpt's options and the program part, which starts at the script, ``-m``
    or ``-c``; everything after that belongs to the program, untouched (as with python)."""
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            return argv[:i], argv[i + 1 :]
        if not tok.startswith("-") or tok == "-":
            return argv[:i], argv[i:]
        if not tok.startswith("--") and tok[1] in "mc":
            return argv[:i], argv[i:]
        # Options with a separate value consume the next token, so that `-o p.json x.py`
        # does not take p.json for the script.
        if "=" not in tok and (len(tok) == 2 or tok.startswith("--")):
            action = parser._option_string_actions.get(tok)
            if action is not None and action.nargs == "+":
                # --load A B ...: up to the next option, or a script (--load runs none: said later)
                if i + 1 < len(argv) and argv[i + 1].endswith(".py") and not argv[i + 1].startswith("-"):
                    raise UsageError(
                        f"{tok} {argv[i + 1]}: a Python script, not a saved session; "
                        f"to profile it: dlpt {shlex.quote(argv[i + 1])}"
                    )
                while (
                    i + 1 < len(argv) and not argv[i + 1].startswith("-") and not argv[i + 1].endswith(".py")
                ):
                    i += 1
            elif action is not None and action.nargs != 0:
                i += action.nargs if isinstance(action.nargs, int) else 1
        i += 1
    return argv, []


def parse_command_line(argv: list[str]) -> RunOptions | LoadOptions:
    """The options of ``dlpt [options] PROGRAM`` (a run) or ``dlpt --load FILE ...`` (the
    ``load`` command), checked; UsageError says what is wrong, SystemExit after ``--help``."""
    parser = build_parser()
    opts_part, program = split_program(parser, argv)
    ns = parser.parse_args(opts_part)
    files = collect_outputs(ns)
    if ns.load is not None:
        return _load(ns, files, program)
    if not program:
        raise UsageError("no program given: expected script.py, -m module or -c code (see --help)")
    _check_common(ns, files)
    target = report_target_of(ns, [("-o", ns.output)], files)
    signal_grace = grace_s(ns.signal_grace)
    protected = _check_outputs(ns, files, target, program)
    return run_options(
        ns, files, target, program=program, protected=protected, joinable=True, signal_grace=signal_grace
    )


def parse_load(argv: list[str]) -> LoadOptions:
    """The options of ``dlpt load FILE ... [options]``: ``dlpt --load FILE ... [options]``."""
    options = parse_command_line(["--load", *argv])
    assert isinstance(options, LoadOptions)
    return options


def _load(ns: argparse.Namespace, files: tuple[Output, ...], program: list[str]) -> LoadOptions:
    """``--load``'s own checks: it runs nothing, so the options of a run are refused."""
    if program:
        raise UsageError("--load re-renders a saved session and runs no program")
    for flag, bad in (
        ("-o", ns.output is not None),
        ("--no-report", ns.no_report and not files),
        ("--skip-first", ns.skip_first is not None),
        ("--active", ns.active is not None),
        ("--calibrate", ns.calibrate != "on"),
        ("--no-gpu", ns.no_gpu),
        ("--nested-ops", ns.nested_ops),
        ("--exact-ops", ns.exact_ops),
        ("--step-on", ns.step_on is not None),
        ("--no-source", ns.no_source),
        ("--flops", ns.flops),
        ("--memory", ns.memory),
        ("--sample-hz", ns.sample_hz is not None),
        ("--timeline", ns.timeline is not None),
        ("--pc-sampling", ns.pc_sampling or ns.pc_sampling_steps is not None),
        ("--report-ranks", ns.report_ranks is not None),
        ("--rank-timeout", ns.rank_timeout is not None),
        ("--signal-grace", ns.signal_grace is not None),
    ):
        if bad:
            raise UsageError(f"{flag} applies when running a program, not with --load")
    ns.load = expand_load(ns.load)
    if len(ns.load) > 1:
        exports = [o for o in files if o.kind != "html"]
        if exports:
            raise UsageError(
                f"{exports[0].flag} writes one session's data: give one --load file "
                "(several make the report across ranks, in the terminal and with --html)"
            )
        if ns.view != "tree":
            raise UsageError("--view applies to one session; the report across ranks has one view")
    _check_common(ns, files)
    target = report_target_of(ns, [("-o", ns.output), *(("--load", p) for p in ns.load)], files)
    _check_outputs(ns, files, target, [])
    return load_options(ns, files, target)


def _check_common(ns: argparse.Namespace, files: tuple[Output, ...]) -> None:
    check_values(ns, files)
    if ns.no_report and ns.output is None and not files:
        raise UsageError("--no-report without -o FILE, --html or --export would throw the profile away")
    check_report(ns)


def _check_outputs(
    ns: argparse.Namespace, files: tuple[Output, ...], target: report_target.ReportTarget, program: list[str]
) -> dict[str, str]:
    """Every output path must be writable before the program runs (dlpt.files.safe_files): a
    new name, a file dlpt wrote, this process's stdout or stderr, or anything with --force;
    never the profiled script without --force. The files protected so (by real path)."""
    protected = {}
    if program and not program[0].startswith("-"):
        protected[os.path.realpath(program[0])] = "the profiled script"
    # Under a launcher every rank writes its own file (dlpt.files.rank_paths): check that one.
    problem = env_problem()
    if problem:
        voice.say(f"{problem}; profiling as a single process")
    env = from_env()
    size = env.world_size if env is not None else 1
    mine = (lambda p: rank_path(p, env.rank, env.world_size)) if env else (lambda p: rank_path(p, 0, 1))
    named = [(out.path, out.flag) for out in files]
    if ns.output is not None:
        named.append((ns.output, "-o"))
    for path, flag in named:
        if size > 1 and _is_stream(path):
            raise UsageError(f"{flag} {path}: each of the {size} ranks writes a file of its own; name a file")
        outputs.check_writable(mine(path), flag, ns.force, protected)
    if target.path is not None:
        report_target.check(mine(target.path), ns.force, protected)
    return protected


def _is_stream(path: str) -> bool:
    try:
        return resolve_target(path).stream is not None
    except UnsafeFileError:
        return False
