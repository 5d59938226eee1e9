"""Command line: ``python -m dlpt [options] (script.py | -m module | -c code) [args...]``,
``python -m dlpt --load FILE [render options]`` and ``python -m dlpt diff A.json B.json``
(:mod:`dlpt.cli.diff`).

This module is the orchestration of a run: parse and check every option before the program
starts (:mod:`dlpt.cli.options`: bad values and unwritable output paths fail at once, not after
an hour-long run), start the profile, run the program as plain ``python`` would
(:mod:`dlpt.cli.launch`), then stop, save and show (:mod:`dlpt.cli.ending`), speaking on stderr
through :mod:`dlpt.cli.voice`; and ``--load``, which shows saved sessions.

Whatever way the program ends (normal end, ``sys.exit``, exception, Ctrl-C, SIGTERM), the profile
is first stopped, saved (``-o``, ``--html``, ``--export``) and shown; only then does the
program's traceback / exit status follow (:mod:`dlpt.cli.signals` says how signals are handled). A
forked child that returns from the program exits with the program's status and reports nothing:
the profile is its parent's.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from dlpt.analysis.ranks.report import rank_report
from dlpt.analysis.view import ViewOptions, build_view
from dlpt.api import profile
from dlpt.capture.host import DEFAULT_SAMPLE_HZ
from dlpt.capture.pc_sampling import DEFAULT_STEPS as PC_DEFAULT_STEPS
from dlpt.cli import outputs, report_target, voice
from dlpt.cli.ending import finish_run, open_html, steps_of
from dlpt.cli.launch import LaunchError, exit_status, install, resolve, run_program
from dlpt.cli.loads import check_one_job
from dlpt.cli.options import parse_command_line
from dlpt.cli.own_imports import preload
from dlpt.cli.process_end import Death, end_process
from dlpt.cli.report_target import render_kwargs
from dlpt.cli.signals import Signals
from dlpt.cli.status_line import StatusLine
from dlpt.cli.stdout_guard import Printed, report_output
from dlpt.errors import DlptError, UsageError
from dlpt.model.render_limit import check_sessions
from dlpt.model.session import Session

__all__ = ["main", "run", "entry"]

SUBCOMMANDS = ("query", "verify", "mcp")  # like diff: a script of that name runs as ./query
EXIT_USAGE = 2  # bad options, missing program, unreadable session: like python's own exit 2


def _run(opts: argparse.Namespace, program: list[str]) -> int:
    try:
        prog = resolve(program, opts.step_on)
    except LaunchError as e:  # what python says in one line, with python's status
        voice.say(str(e))
        return e.status
    except UsageError as e:
        voice.say(str(e))
        return EXIT_USAGE
    except BaseException as e:  # noqa: BLE001 - the program's package failed to import, or a SyntaxError
        return exit_status(e)
    # Before the program's sys.path[0] and modules take over (a local html.py): dlpt.cli.own_imports.
    preload(html=any(o.kind == "html" for o in opts.outputs))
    install(prog)
    # joinable: a dlpt.profile() the program starts (@dlpt.profile() on its main) joins this one.
    prof = profile(
        skip_first=opts.skip_first,
        active=opts.active,
        calibrate=opts.calibrate == "on",
        gpu=not opts.no_gpu,
        nested_ops=opts.nested_ops,
        exact_ops=True if opts.exact_ops else None,
        step_on=opts.step_on,
        sources=not opts.no_source,
        flops=opts.flops,
        memory=opts.memory,
        joinable=True,
        sample_hz=DEFAULT_SAMPLE_HZ if opts.sample_hz is None else opts.sample_hz,
        timeline=opts.timeline or 0,
        pc_sampling=(opts.pc_sampling_steps or PC_DEFAULT_STEPS) if opts.pc_sampling else False,
    )
    if StatusLine.wanted(opts.quiet):
        voice.STATUS_LINE[0] = StatusLine(prof.status).start()
    try:
        prof.start()
    except UsageError as e:  # an environment switch's value (DLPT_FLOOR, DLPT_SUSPEND)
        voice.stop_status_line()
        voice.say(f"error: {e}")
        return EXIT_USAGE
    except DlptError as e:
        voice.stop_status_line()
        voice.say(f"cannot start profiling: {e}")
        return EXIT_USAGE
    except BaseException:
        voice.stop_status_line()
        raise
    signals = Signals(voice.say, opts.signal_grace, prefix=lambda: voice.PREFIX[0])
    signals.remaining = steps_of(opts)  # what the grace names if it runs out before any of it
    signals.terminate_with(lambda: finish_run(prof, opts, signals))
    pid = os.getpid()
    # Ctrl-C is held once the program ends, unless it is ignored (a background job) or cannot be
    # handled here (dlpt.cli.main called from a thread other than the main one).
    holds = threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) not in (
        signal.SIG_IGN,
        None,
    )
    outcome = run_program(prog, signals.note if holds else None)
    if os.getpid() != pid:  # a forked child returned: the profile and the report are the parent's
        return exit_status(outcome)
    sigint_at_end = prog.sigint_at_end if holds else signal.getsignal(signal.SIGINT)
    signals.program_ended(sigint_at_end)  # this thread finishes (or waits for the one that does)
    finish_run(prof, opts, signals)  # what failed there was said; the status stays the program's
    status = exit_status(outcome)
    # The interpreter's shutdown (joining the program's non-daemon threads) sees the handlers
    # plain python would: Ctrl-C ends the wait, SIGTERM kills.
    signals.restore(sigint_at_end)
    if signals.status is not None:  # a signal arrived while dlpt finished: die of it (end_process)
        return signals.status
    late = signals.deliver_to_program()  # what the program's own handlers were held for meanwhile
    return exit_status(late) if late is not None else status


def _load(opts: argparse.Namespace) -> int:
    from dlpt.renderers.terminal.report import print_report

    if len(opts.load) > 1:
        return _load_ranks(opts)
    try:
        session = Session.load(opts.load[0])
    except DlptError as e:
        voice.say(str(e))
        return EXIT_USAGE
    if opts.kernel_lines is not None:
        from dlpt.renderers.terminal.kernel_lines import render_kernel_lines

        try:
            print(render_kernel_lines(session.meta, opts.kernel_lines))
        except DlptError as e:
            voice.say(str(e))
            return EXIT_USAGE
        return 0
    try:  # before the view, which is as large: dlpt.model.render_limit
        check_sessions("the text report" if not opts.no_report else "a report", session)
    except DlptError as e:
        voice.say(f"not printing the report: {e}" if not opts.no_report else f"not writing the files: {e}")
        return EXIT_USAGE
    # Folded and analysed once for the report and every file (dlpt.analysis.view).
    view = build_view(session, ViewOptions(show_all=opts.show_all, peak_tflops=opts.peak_tflops))
    if not opts.no_report and not _print_loaded(opts, print_report, view, **render_kwargs(opts)):
        return EXIT_USAGE
    say = voice.say_failures if opts.quiet else voice.say
    ok = outputs.write_all(view, opts.outputs, opts.metric, opts.show_all, say, opts.peak_tflops, opts.force)
    if opts.open:
        open_html(opts.outputs)
    return 0 if ok else EXIT_USAGE


def _load_ranks(opts: argparse.Namespace) -> int:
    """Several sessions: the report across ranks (dlpt.renderers.terminal.ranks)."""
    from dlpt.analysis.ranks.merge import rank_set
    from dlpt.renderers.terminal.ranks import print_ranks

    try:
        loaded = [(path, Session.load(path)) for path in opts.load]
        check_one_job(loaded)
        rs = rank_set(loaded)
    except DlptError as e:
        voice.say(str(e))
        return EXIT_USAGE
    kw = render_kwargs(opts)
    rep = rank_report(rs, kw["metric"], kw["show_all"])
    ok = opts.no_report or _print_loaded(
        opts, print_ranks, rs, threshold=kw["threshold"], depth=kw["depth"], ascii=kw["ascii"], report=rep
    )
    ok = (
        outputs.write_rank_pages(
            rep, opts.outputs, voice.say_failures if opts.quiet else voice.say, opts.force
        )
        and ok
    )
    if opts.open:
        open_html(opts.outputs)
    return 0 if ok else EXIT_USAGE


def _print_loaded(opts: argparse.Namespace, printer: Any, *args: Any, **kwargs: Any) -> bool:
    """Print a loaded session's report to ``opts``' target (stdout or ``--report-file``);
    whether it worked."""
    # stdout may be a pipe whose reader left: one line, never a traceback (a file is ours).
    guard = report_output(voice.say) if opts.report.path is None else contextlib.nullcontext(Printed())
    try:
        with guard as printed:
            report_target.print_with(opts.report, printer, *args, **kwargs)
        if printed.failed:  # said; stdout could not take it (a full disk): dlpt's own failure
            return False
    except (OSError, DlptError) as e:
        voice.say(
            f"could not write the text report to {opts.report.path}: {e}" if opts.report.path else str(e)
        )
        return False
    if opts.report.path is not None:
        voice.inform(f"wrote the text report to {opts.report.path}")
    return True


def entry() -> NoReturn:
    """The ``dlpt`` command and ``python -m dlpt``: the command line, then end as it says (death
    by a signal where plain python would die of it: dlpt.cli.process_end.end_process)."""
    sys.exit(end_process(run()))


def main(argv: Sequence[str] | None = None) -> int:
    """The command line as a function: the exit status a shell would show (the program's own
    status when a program was run; 128 + N where the process would die of signal N)."""
    status = run(argv)
    return 128 + int(status) if isinstance(status, Death) else status


def run(argv: Sequence[str] | None = None) -> int:
    """The command line; returns the exit status (the program's own status when a program was
    run, as python's exit gives it: 0-255), or a :class:`~dlpt.cli.process_end.Death` where the
    process must die of a signal (:func:`dlpt.cli.process_end.end_process`)."""
    args = list(sys.argv[1:] if argv is None else argv)
    voice.QUIET[0], voice.STATUS_LINE[0] = False, None
    if args[:1] == ["diff"]:  # the subcommand; a script named diff runs as ./diff
        from dlpt.cli.diff import main as diff_main

        return _interruptible(lambda: diff_main(args[1:]))
    if args[:1] and args[0] in SUBCOMMANDS:  # query, verify, mcp: dlpt.cli.commands
        from dlpt.cli.commands import run_subcommand

        return _interruptible(lambda: run_subcommand(args[0], args[1:]))
    try:
        opts, program = parse_command_line(args)
    except UsageError as e:
        voice.say(f"error: {e}")
        return EXIT_USAGE
    except SystemExit as e:  # --help and --version print and "exit"
        return e.code if isinstance(e.code, int) else 0
    voice.QUIET[0] = opts.quiet
    if opts.load is not None:
        return _interruptible(lambda: _load(opts))
    return _run(opts, program)


def _interruptible(command: Callable[[], int]) -> int:
    """One of dlpt's own commands (``--load``, ``dlpt diff``): Ctrl-C ends it as it ends a plain
    command, by SIGINT, without a traceback of dlpt's frames."""
    try:
        return command()
    except KeyboardInterrupt:
        return Death(signal.SIGINT)
