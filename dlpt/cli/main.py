"""Command line: ``python -m dlpt [options] (script.py | -m module | -c code) [args...]``,
``python -m dlpt --load FILE [render options]`` and ``python -m dlpt diff A.json B.json``
(:mod:`dlpt.cli.diff`).

This module is the argument handling and the orchestration of a run: parse and check every
option before the program starts (bad values and unwritable output paths fail at once, not after
an hour-long run), start the profile, run the program as plain ``python`` would
(:mod:`dlpt.cli.launch`), then stop, save and show.

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
import shlex
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any, NoReturn

from dlpt._version import __version__
from dlpt.analysis.ranks.report import rank_report
from dlpt.analysis.view import ViewOptions, build_view
from dlpt.api import profile
from dlpt.capture.host import DEFAULT_SAMPLE_HZ, MAX_SAMPLE_HZ, MAX_TIMELINE_STEPS
from dlpt.capture.pc_sampling import DEFAULT_STEPS as PC_DEFAULT_STEPS
from dlpt.capture.pc_sampling import MAX_STEPS as PC_MAX_STEPS
from dlpt.capture.ranks.env import env_problem, from_env
from dlpt.capture.step_on import parse_spec
from dlpt.cli import outputs, rank_store, report_target
from dlpt.cli.help_text import EXAMPLES
from dlpt.cli.launch import LaunchError, exit_status, install, resolve, run_program
from dlpt.cli.loads import check_one_job
from dlpt.cli.open_report import open_report
from dlpt.cli.own_imports import preload
from dlpt.cli.rank_finish import (
    DEFAULT_TIMEOUT_S,
    REPORT_RANKS,
    Role,
    cross_rank_report,
    gather_ranks,
    publish,
    role_of,
)
from dlpt.cli.report_target import render_kwargs
from dlpt.cli.signals import DEFAULT_GRACE_S, GRACE_ENV, Interrupted, Signals, end_process, grace_s
from dlpt.cli.status_line import StatusLine
from dlpt.cli.stdout_guard import program_output_flushed, report_output, say_line
from dlpt.errors import DlptError, UnsafeFileError, UsageError
from dlpt.finish import Ending
from dlpt.model.processors import METRICS
from dlpt.model.rank_paths import expand_load, rank_path
from dlpt.model.render_limit import check_renderable
from dlpt.model.session import Session
from dlpt.model.write_target import absolute, resolve_target
from dlpt.renderers.terminal.report import (
    VIEWS,  # imported now: the program's sys.path[0] replaces ours later
)

__all__ = ["main", "run", "entry"]

EXIT_USAGE = 2  # bad options, missing program, unreadable session: like python's own exit 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one clear line instead of usage + error
        raise UsageError(message)


def build_parser(prog: str = "dlpt") -> _Parser:
    """The command line's parser: every option of a run and of ``--load``. The notebook magic
    parses its options with it too (:mod:`dlpt.notebook.options`), so the two never differ."""
    p = _Parser(
        prog=prog,
        allow_abbrev=False,  # abbreviations would make the script/option split ambiguous
        usage="dlpt [options] (script.py | -m module | -c code) [args ...]\n"
        "       dlpt --load FILE [FILE ...] [render options]\n"
        "       dlpt diff A.json B.json [--metric M] [--threshold PCT] [--html OUT] [--ascii]"
        if prog == "dlpt"
        else "%(prog)s [options]" + (" statement" if prog == "%dlpt" else "  (atop a cell)"),
        description="Profile a PyTorch program: which line of your code costs how much GPU time.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("-o", "--output", metavar="FILE", help="save the session (JSON) to FILE")
    p.add_argument(
        "--load",
        nargs="+",
        metavar="FILE",
        help="re-render a saved session; runs nothing. Several files or a quoted glob "
        "('run.rank*.json'): the report across ranks",
    )
    p.add_argument("--view", choices=VIEWS, default="tree", help="report view (default: tree)")
    p.add_argument(
        "--metric",
        choices=list(METRICS),
        help="metric to rank and prune by (default: gpu if there is GPU time, else cpu)",
    )
    p.add_argument(
        "--threshold",
        type=float,
        default=1.0,
        metavar="PCT",
        help="hide nodes below PCT percent of the total (default: 1)",
    )
    p.add_argument("--depth", type=int, metavar="N", help="show at most N levels below the root")
    p.add_argument("--show-all", action="store_true", help="show library frames too")
    p.add_argument("--ascii", action="store_true", help="draw with ASCII characters only")
    p.add_argument(
        "--verbose",
        action="store_true",
        help="the whole report: every header line (sampler, threads, unused GPUs, versions, "
        "dlpt's cost) and the work outside steps unfolded",
    )
    p.add_argument("--no-report", action="store_true", help="save only, print no report")
    p.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no status line while profiling and no 'saved ...' lines (errors and the report still show)",
    )
    outputs.add_arguments(p)
    outputs.add_force(p)
    report_target.add_arguments(p)
    p.add_argument("--open", action="store_true", help="open the HTML report (--html) in a web browser")
    p.add_argument(
        "--skip-first",
        type=int,
        metavar="N",
        help="count steps from step N+1: the first N are warm-up, reported apart as once-work "
        "(default: until two steps in a row take the same time)",
    )
    p.add_argument(
        "--active",
        type=int,
        metavar="M",
        help="count M steps, then run the rest untraced (measured, not traced)",
    )
    p.add_argument(
        "--calibrate",
        choices=("on", "off"),
        default="on",
        help="run a few steps untraced to measure the step time without dlpt's cost, which the "
        "derived figures use (default: on)",
    )
    p.add_argument(
        "--step-on",
        metavar="NAME",
        help="each outermost call of NAME is a step (function, Class.method, module:function): "
        "steps for inference loops, which have no optimizer step",
    )
    p.add_argument(
        "--no-source", action="store_true", help="do not save the profiled lines' source text in the session"
    )
    p.add_argument("--no-gpu", action="store_true", help="CPU-side attribution only")
    p.add_argument(
        "--nested-ops",
        action="store_true",
        help="also record ops inside ops (aten::mm under aten::matmul); slower",
    )
    p.add_argument(
        "--flops",
        action="store_true",
        help="record op shapes for FLOPs, TFLOP/s and MFU per line (costs time on every op)",
    )
    p.add_argument(
        "--memory",
        action="store_true",
        help="record memory per line: allocations, what each line holds at each step's peak, what "
        "was live when an allocation failed (costs time on every allocation)",
    )
    p.add_argument(
        "--sample-hz",
        type=int,
        metavar="N",
        help=f"sample every Python thread's stack N times a second for host time per line and the "
        f"lines the GPU waited for (default {DEFAULT_SAMPLE_HZ}; 0: off)",
    )
    p.add_argument(
        "--timeline",
        type=int,
        metavar="N",
        help="keep the events of N counted steps, after the warm-up, for a timeline (HTML report, "
        "--export perfetto)",
    )
    p.add_argument(
        "--pc-sampling",
        action="store_true",
        help="CUPTI PC sampling for a few steps after the warm-up: hot lines inside kernels, stall "
        "reasons, fused kernels split across model lines (docs/pc-sampling.md)",
    )
    p.add_argument(
        "--pc-sampling-steps",
        type=int,
        metavar="N",
        help=f"steps --pc-sampling samples (default {PC_DEFAULT_STEPS})",
    )
    p.add_argument(
        "--kernel-lines",
        metavar="NAME",
        help="with --load: the sampled source lines of the kernels named NAME (or containing it)",
    )
    p.add_argument(
        "--peak-tflops",
        type=float,
        metavar="N",
        help="the GPU's dense peak TFLOP/s for MFU and %% of peak (default: datasheet table)",
    )
    p.add_argument(
        "--report-ranks",
        choices=REPORT_RANKS,
        help="under torchrun and other launchers: which ranks print (default 0: rank 0 prints, "
        "the report across ranks when -o saved every rank's session)",
    )
    p.add_argument(
        "--rank-timeout",
        type=float,
        metavar="S",
        help=f"how long rank 0 waits for the other ranks' sessions (default {DEFAULT_TIMEOUT_S:g} s)",
    )
    p.add_argument(
        "--signal-grace",
        metavar="S",
        help="after SIGTERM, SIGHUP or Ctrl-C, how long dlpt may take to save before the process "
        f"dies of the signal (default: ${GRACE_ENV} or {DEFAULT_GRACE_S:g} s)",
    )
    p.add_argument("-V", "--version", action="version", version=f"dlpt {__version__}")
    return p


def _split(parser: _Parser, argv: list[str]) -> tuple[list[str], list[str]]:
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


def _parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = build_parser()
    opts_part, program = _split(parser, argv)
    opts = parser.parse_args(opts_part)
    opts.outputs = outputs.collect(opts)
    if opts.load is not None:
        if program:
            raise UsageError("--load re-renders a saved session and runs no program")
        for flag, bad in (
            ("-o", opts.output is not None),
            ("--no-report", opts.no_report and not opts.outputs),
            ("--skip-first", opts.skip_first is not None),
            ("--active", opts.active is not None),
            ("--calibrate", opts.calibrate != "on"),
            ("--no-gpu", opts.no_gpu),
            ("--nested-ops", opts.nested_ops),
            ("--step-on", opts.step_on is not None),
            ("--no-source", opts.no_source),
            ("--flops", opts.flops),
            ("--memory", opts.memory),
            ("--sample-hz", opts.sample_hz is not None),
            ("--timeline", opts.timeline is not None),
            ("--pc-sampling", opts.pc_sampling or opts.pc_sampling_steps is not None),
            ("--report-ranks", opts.report_ranks is not None),
            ("--rank-timeout", opts.rank_timeout is not None),
            ("--signal-grace", opts.signal_grace is not None),
        ):
            if bad:
                raise UsageError(f"{flag} applies when running a program, not with --load")
        opts.load = expand_load(opts.load)
        if len(opts.load) > 1:
            exports = [o for o in opts.outputs if o.kind != "html"]
            if exports:
                raise UsageError(
                    f"{exports[0].flag} writes one session's data: give one --load file "
                    "(several make the report across ranks, in the terminal and with --html)"
                )
            if opts.view != "tree":
                raise UsageError("--view applies to one session; the report across ranks has one view")
    elif not program:
        raise UsageError("no program given: expected script.py, -m module or -c code (see --help)")
    check_values(opts)
    if opts.no_report and opts.output is None and not opts.outputs:
        raise UsageError("--no-report without -o FILE, --html or --export would throw the profile away")
    if opts.open and opts.html is None:
        raise UsageError("--open opens the HTML report: give --html FILE too")
    if opts.no_report and opts.report_file is not None:
        raise UsageError("--no-report prints no report: --report-file would stay empty")
    others = [("-o", opts.output), *(("--load", p) for p in opts.load or [])]
    opts.report = report_target.from_options(opts, [*others, *((o.flag, o.path) for o in opts.outputs)])
    opts.signal_grace = grace_s(opts.signal_grace) if opts.load is None else None
    opts.report_ranks = opts.report_ranks or "0"
    opts.rank_timeout = DEFAULT_TIMEOUT_S if opts.rank_timeout is None else opts.rank_timeout
    _check_outputs(opts, program)
    return opts, program


def check_values(opts: argparse.Namespace) -> None:
    """UsageError for an option value out of its range (the command line's and the notebook
    magic's options; ``opts.outputs`` collected): checked as the renderer and the profile would,
    so a bad value fails before a long run, not after it."""
    if not 0.0 <= opts.threshold < 100.0:
        raise UsageError(f"--threshold must be a percentage in [0, 100), got {opts.threshold:g}")
    if opts.depth is not None and opts.depth < 1:
        raise UsageError("--depth must be >= 1")
    if opts.peak_tflops is not None and not 0 < opts.peak_tflops < float("inf"):
        raise UsageError(f"--peak-tflops must be a positive number, got {opts.peak_tflops:g}")
    if opts.skip_first is not None and opts.skip_first < 0:
        raise UsageError("--skip-first must be >= 0")
    if opts.active is not None and opts.active < 1:
        raise UsageError("--active must be >= 1")
    if opts.step_on is not None:
        parse_spec(opts.step_on)
    if opts.sample_hz is not None and not 0 <= opts.sample_hz <= MAX_SAMPLE_HZ:
        raise UsageError(f"--sample-hz must be from 0 (off) to {MAX_SAMPLE_HZ}, got {opts.sample_hz}")
    if opts.kernel_lines is not None and opts.load is None:
        raise UsageError("--kernel-lines shows a saved session's PC samples: give --load FILE")
    if opts.pc_sampling_steps is not None:
        if not opts.pc_sampling:
            raise UsageError("--pc-sampling-steps applies with --pc-sampling")
        if not 1 <= opts.pc_sampling_steps <= PC_MAX_STEPS:
            raise UsageError(
                f"--pc-sampling-steps must be from 1 to {PC_MAX_STEPS}, got {opts.pc_sampling_steps}"
            )
    if opts.timeline is not None and not 1 <= opts.timeline <= MAX_TIMELINE_STEPS:
        raise UsageError(
            f"--timeline must be a number of steps from 1 to {MAX_TIMELINE_STEPS}, got {opts.timeline}"
        )
    if opts.load is None and opts.timeline is None:
        for out in opts.outputs:
            if out.kind == "perfetto":
                raise UsageError("--export perfetto writes the timeline: give --timeline N (steps to keep)")
    if opts.rank_timeout is not None and not 0 <= opts.rank_timeout < float("inf"):
        raise UsageError(f"--rank-timeout must be a number of seconds >= 0, got {opts.rank_timeout:g}")


def _check_outputs(opts: argparse.Namespace, program: list[str]) -> None:
    """Every output path must be writable before the program runs (dlpt.model.safe_files): a
    new name, a file dlpt wrote, this process's stdout or stderr, or anything with --force;
    never the profiled script without --force."""
    opts.protected = {}
    if program and not program[0].startswith("-"):
        opts.protected[os.path.realpath(program[0])] = "the profiled script"
    # Under a launcher every rank writes its own file (dlpt.model.rank_paths): check that one.
    problem = env_problem()
    if problem:
        _say(f"{problem}; profiling as a single process")
    env = from_env()
    size = env.world_size if env is not None else 1
    mine = (lambda p: rank_path(p, env.rank, env.world_size)) if env else (lambda p: rank_path(p, 0, 1))
    named = [(out.path, out.flag) for out in opts.outputs]
    if opts.output is not None:
        named.append((opts.output, "-o"))
    for path, flag in named:
        if size > 1 and _is_stream(path):
            raise UsageError(f"{flag} {path}: each of the {size} ranks writes a file of its own; name a file")
        outputs.check_writable(mine(path), flag, opts.force, opts.protected)
    if opts.report.path is not None:
        report_target.check(mine(opts.report.path), opts.force, opts.protected)
    if opts.output is not None:
        # The program may chdir; the file goes where the user meant when typing the command.
        opts.output_abs = absolute(opts.output)


def _is_stream(path: str) -> bool:
    try:
        return resolve_target(path).stream is not None
    except UnsafeFileError:
        return False


def _finish(prof: profile, opts: argparse.Namespace, signals: Signals) -> bool:
    """Stop, save and show the profile through the run's one ending (:class:`CliEnding`);
    report dlpt's own failures without hiding the program's outcome. Returns whether everything
    worked.

    Signals are held while stopping and saving (at most the grace: dlpt.cli.signals); they cut
    the report short. This may run on dlpt's signal thread while the main thread is stuck in
    the program (SIGTERM, SIGHUP): then no rank waits for the others."""
    signals.remaining = [
        "stopping the profile",
        *([f"the session ({opts.output})"] if opts.output is not None else []),
        *(f"the {o.what} ({o.path})" for o in opts.outputs),
        *([] if opts.no_report else ["the report"]),
    ]
    ending = CliEnding(opts, signals)
    ok = ending.run(prof)
    role = ending.role
    if role is not None and opts.open and role.chatty:
        _open_html([ending.own(o) for o in opts.outputs])
    return ok


class CliEnding(Ending):
    """The command line's part in the run's one ending (:class:`dlpt.finish.Ending`): signals
    held while stopping and saving, the status line put away, and one of several ranks' own
    files, voice, summary to rank 0 and, on rank 0, the report and page across ranks
    (:mod:`dlpt.cli.rank_finish`)."""

    def __init__(self, opts: argparse.Namespace, signals: Signals) -> None:
        super().__init__(
            session_file=opts.output,
            session_abspath=getattr(opts, "output_abs", None),
            files=opts.outputs,
            report=opts.report,
            render=render_kwargs(opts),
            force=opts.force,
            protected=opts.protected,
            say=_say,
            inform=_inform,
        )
        self.opts, self.signals = opts, signals
        self.role: Role | None = None
        self.store: rank_store.RankStore | None = None

    def held(self) -> contextlib.AbstractContextManager[object]:
        return self.signals.deferred()

    def stopped(self) -> None:
        _stop_status_line()

    def step_done(self) -> None:
        self.signals.remaining.pop(0)

    def placed(self, session: Session) -> None:
        # One of several ranks: its own files, its own voice (dlpt.cli.rank_finish), and its
        # summary to rank 0 through torchrun's store when there is one.
        role = self.role = role_of(session, self.opts.report_ranks)
        _prefix[0] = role.prefix
        if not role.chatty:
            self.inform = _say_failures  # a quiet rank says only what went wrong
        self.store = rank_store.connect() if role.distributed and role.report_ranks != "none" else None
        if self.store is not None and role.rank:
            publish(self.store, role, session, _say_failures)

    def path_of(self, path: str) -> str:
        return self.role.path(path) if self.role is not None else path

    def writes_later(self, o: outputs.Output) -> bool:
        # One page for the job, from rank 0 once it has the others (finish_report).
        return self.role is not None and outputs.rank_page(o, self.role.distributed)

    def _pages(self) -> list[outputs.Output]:
        """The pages across ranks this process writes (rank 0's)."""
        role = self.role
        assert role is not None
        return [o for o in self.opts.outputs if self.writes_later(o)] if role.rank == 0 else []

    def finish_report(self, session: Session) -> bool:
        role, opts = self.role, self.opts
        assert role is not None
        across = role.gathers(bool(self.saved), self.store is not None)
        if not ((not opts.no_report and role.prints_own) or across or self._pages()):
            return True  # nothing to write
        target = opts.report.for_path(role.path)
        try:
            with target.open() as where:
                ok = self._report(session, where)
            if target.path is not None:
                self.inform(f"wrote the text report to {target.path}")
        except (OSError, DlptError) as e:
            _say(f"could not write the text report to {target.path}: {e}")
            ok = False
        return ok

    def _report(self, session: Session, where: dict[str, Any]) -> bool:
        """Print what this rank prints (to ``where``: the report file or stdout, and the width):
        its own report, and on rank 0 of a job whose ranks send or save their sessions the
        report across ranks."""
        role, opts, signals, store = self.role, self.opts, self.signals, self.store
        assert role is not None
        ok = True
        across = role.gathers(bool(self.saved), store is not None)
        if role.distributed and role.rank == 0 and not across and role.report_ranks == "0":
            _inform(
                "this is rank 0's report only: torchrun's store cannot be reached, and -o FILE saves "
                f"each of the {role.world_size} ranks' sessions for a report across ranks"
            )
        if (role.prints_own or across) and not program_output_flushed():
            # The program's own output cannot be written: python reports that at exit (status
            # 120, as without dlpt); dlpt's report would only be lost on top of it.
            _say("not printing the report: stdout cannot take the program's own output")
            return ok
        pages = self._pages()
        if pages and not across:  # no other rank to be had: rank 0's own page where the job's was asked
            say = _say if not opts.quiet else _say_failures
            ok = (
                outputs.write_all(
                    self.viewed(session), pages, opts.metric, opts.show_all, say, opts.peak_tflops, opts.force
                )
                and ok
            )
        if opts.no_report and not across:
            return ok
        if role.prints_own and not opts.no_report and not (across and role.report_ranks == "0"):
            try:
                check_renderable(len(session.nodes), "the text report")  # dlpt.model.render_limit
            except DlptError as e:
                _say(f"not printing the report: {e}")
                return False
            try:
                # stdout may be a pipe whose reader left: one line, never a traceback (a file is ours).
                guard = report_output(_say) if where.get("file") is None else contextlib.nullcontext()
                with signals.interruptible(), guard:
                    self.render_report(session, where)
            except Interrupted as e:
                _say(
                    f"report interrupted ({e}); the profile was saved"
                    if opts.output or opts.outputs
                    else f"report interrupted ({e})"
                )
            except Exception as e:  # noqa: BLE001
                _say(f"could not render the report: {type(e).__name__}: {e}")
                ok = False
        if across:
            try:
                with signals.interruptible(), report_output(_say, "the report across ranks"):
                    rs = gather_ranks(
                        opts.output_abs if self.saved else None,
                        role,
                        self.saved,
                        session,
                        0.0 if signals.ending else opts.rank_timeout,  # after SIGTERM: what is there
                        _inform,
                        store,
                    )
                    rep = rank_report(rs, opts.metric, opts.show_all)
                    if not opts.no_report:
                        cross_rank_report(rep, render_kwargs(opts), where)
                ok = (
                    outputs.write_rank_pages(
                        rep, pages, _say if not opts.quiet else _say_failures, opts.force
                    )
                    and ok
                )
            except Interrupted as e:
                _say(f"report across ranks interrupted ({e}); the profile was saved")
            except Exception as e:  # noqa: BLE001 - this rank's session is saved: say it, keep the status
                _say(f"could not render the report across ranks: {type(e).__name__}: {e}")
                ok = False
        return ok


def _open_html(written: list[outputs.Output]) -> None:
    """--open: the HTML report in a browser, if it was written (never a failure)."""
    for o in written:
        if o.kind == "html" and os.path.isfile(o.abspath):
            open_report(o.abspath, _say)


_prefix = ["dlpt"]  # "dlpt[rank 3]" on ranks other than 0 (set once the rank is known)


# The run's status line (None when it does not draw) and --quiet, set by _run and main.
_status_line: list[StatusLine | None] = [None]
_quiet = [False]


def _say(msg: str) -> None:
    """One line on stderr (never sharing a row with the status line); control characters of
    paths and session strings escaped."""
    line = _status_line[0]
    if line is not None:
        line.clear()
    say_line(_prefix[0], msg)


def _inform(msg: str) -> None:
    """What dlpt did (saved, wrote, waits): silenced by --quiet; failures go through _say."""
    if not _quiet[0]:
        _say(msg)


def _stop_status_line() -> None:
    line, _status_line[0] = _status_line[0], None
    if line is not None:
        line.stop()


def _say_failures(msg: str) -> None:
    """For quiet ranks: only what went wrong."""
    if msg.startswith("could not"):
        _say(msg)


def _run(opts: argparse.Namespace, program: list[str]) -> int:
    try:
        prog = resolve(program, opts.step_on)
    except LaunchError as e:  # what python says in one line, with python's status
        _say(str(e))
        return e.status
    except UsageError as e:
        _say(str(e))
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
        _status_line[0] = StatusLine(prof.status).start()
    try:
        prof.start()
    except DlptError as e:
        _stop_status_line()
        _say(f"cannot start profiling: {e}")
        return EXIT_USAGE
    except BaseException:
        _stop_status_line()
        raise
    signals = Signals(_say, opts.signal_grace)
    signals.terminate_with(lambda: _finish(prof, opts, signals))
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
    _finish(prof, opts, signals)  # what failed there was said; the status stays the program's
    status = exit_status(outcome)
    # The interpreter's shutdown (joining the program's non-daemon threads) sees the handlers
    # plain python would: Ctrl-C ends the wait, SIGTERM kills.
    signals.restore(prog.sigint_at_end if holds else signal.getsignal(signal.SIGINT))
    if signals.status is not None:  # a signal arrived while dlpt finished: die of it (end_process)
        return signals.status
    return status


def _load(opts: argparse.Namespace) -> int:
    from dlpt.model.session import Session
    from dlpt.renderers.terminal.report import print_report

    if len(opts.load) > 1:
        return _load_ranks(opts)
    try:
        session = Session.load(opts.load[0])
    except DlptError as e:
        _say(str(e))
        return EXIT_USAGE
    if opts.kernel_lines is not None:
        from dlpt.renderers.terminal.kernel_lines import render_kernel_lines

        try:
            print(render_kernel_lines(session.meta, opts.kernel_lines))
        except DlptError as e:
            _say(str(e))
            return EXIT_USAGE
        return 0
    # Folded and analysed once for the report and every file (dlpt.analysis.view).
    view = build_view(session, ViewOptions(show_all=opts.show_all, peak_tflops=opts.peak_tflops))
    if not opts.no_report:
        try:
            check_renderable(len(session.nodes), "the text report")  # dlpt.model.render_limit
        except DlptError as e:
            _say(f"not printing the report: {e}")
            return EXIT_USAGE
        if not _print_loaded(opts, print_report, view, **render_kwargs(opts)):
            return EXIT_USAGE
    say = _say_failures if opts.quiet else _say
    ok = outputs.write_all(view, opts.outputs, opts.metric, opts.show_all, say, opts.peak_tflops, opts.force)
    if opts.open:
        _open_html(opts.outputs)
    return 0 if ok else EXIT_USAGE


def _load_ranks(opts: argparse.Namespace) -> int:
    """Several sessions: the report across ranks (dlpt.renderers.terminal.ranks)."""
    from dlpt.analysis.ranks.merge import rank_set
    from dlpt.model.session import Session
    from dlpt.renderers.terminal.ranks import print_ranks

    try:
        loaded = [(path, Session.load(path)) for path in opts.load]
        check_one_job(loaded)
        rs = rank_set(loaded)
    except DlptError as e:
        _say(str(e))
        return EXIT_USAGE
    kw = render_kwargs(opts)
    rep = rank_report(rs, kw["metric"], kw["show_all"])
    ok = opts.no_report or _print_loaded(
        opts, print_ranks, rs, threshold=kw["threshold"], depth=kw["depth"], ascii=kw["ascii"], report=rep
    )
    ok = outputs.write_rank_pages(rep, opts.outputs, _say_failures if opts.quiet else _say, opts.force) and ok
    if opts.open:
        _open_html(opts.outputs)
    return 0 if ok else EXIT_USAGE


def _print_loaded(opts: argparse.Namespace, printer: Any, *args: Any, **kwargs: Any) -> bool:
    """Print a loaded session's report to ``opts``' target (stdout or ``--report-file``);
    whether it worked."""
    # stdout may be a pipe whose reader left: one line, never a traceback (a file is ours).
    guard = report_output(_say) if opts.report.path is None else contextlib.nullcontext()
    try:
        with guard:
            report_target.print_with(opts.report, printer, *args, **kwargs)
    except (OSError, DlptError) as e:
        _say(f"could not write the text report to {opts.report.path}: {e}" if opts.report.path else str(e))
        return False
    if opts.report.path is not None:
        _inform(f"wrote the text report to {opts.report.path}")
    return True


def entry() -> NoReturn:
    """The ``dlpt`` command and ``python -m dlpt``: the command line, then end as it says (death
    by a signal where plain python would die of it: dlpt.cli.signals.end_process)."""
    sys.exit(end_process(run()))


def main(argv: Sequence[str] | None = None) -> int:
    """The command line as a function: the exit status a shell would show (the program's own
    status when a program was run; 128 + N where the process would die of signal N)."""
    status = run(argv)
    return 128 - status if status < 0 else status


def run(argv: Sequence[str] | None = None) -> int:
    """The command line; returns the exit status (the program's own status when a program was
    run), ``-N`` where the process must die of signal N (:func:`dlpt.cli.signals.end_process`)."""
    args = list(sys.argv[1:] if argv is None else argv)
    _quiet[0], _status_line[0] = False, None
    if args[:1] == ["diff"]:  # the subcommand; a script named diff runs as ./diff
        from dlpt.cli.diff import main as diff_main

        return diff_main(args[1:])
    try:
        opts, program = _parse(args)
    except UsageError as e:
        _say(f"error: {e}")
        return EXIT_USAGE
    except SystemExit as e:  # --help and --version print and "exit"
        return e.code if isinstance(e.code, int) else 0
    _quiet[0] = opts.quiet
    if opts.load is not None:
        return _load(opts)
    return _run(opts, program)
