"""The command line's options: the parser (which the notebook magic shares, so the two never
differ: :mod:`dlpt.notebook.options`), the split of argv into dlpt's options and the program's
part, and every check that can fail before the program starts (values out of range, options
that do not go together, output paths that cannot be written), so that a bad option fails at
once, not after an hour-long run.
"""

from __future__ import annotations

import argparse
import os
import shlex
from typing import NoReturn

from dlpt._version import __version__
from dlpt.capture.host import DEFAULT_SAMPLE_HZ, MAX_SAMPLE_HZ, MAX_TIMELINE_STEPS
from dlpt.capture.pc_sampling import DEFAULT_STEPS as PC_DEFAULT_STEPS
from dlpt.capture.pc_sampling import MAX_STEPS as PC_MAX_STEPS
from dlpt.capture.ranks.env import env_problem, from_env
from dlpt.capture.step_on import parse_spec
from dlpt.cli import outputs, report_target, voice
from dlpt.cli.grace import DEFAULT_GRACE_S, GRACE_ENV, grace_s
from dlpt.cli.help_text import EXAMPLES
from dlpt.cli.rank_finish import (
    DEFAULT_TIMEOUT_S,
    REPORT_RANKS,
)
from dlpt.errors import UnsafeFileError, UsageError
from dlpt.model.processors import METRICS
from dlpt.model.rank_paths import expand_load, rank_path
from dlpt.model.write_target import absolute, resolve_target
from dlpt.renderers.terminal.report import (
    VIEWS,  # imported now: the program's sys.path[0] replaces ours later
)

__all__ = ["build_parser", "check_values", "parse_command_line", "split_program"]


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
        "       dlpt diff A.json B.json [--metric M] [--threshold PCT] [--html OUT] [--ascii]\n"
        "       dlpt query FILE [--json] [--line FILE:LINE] [--top N]\n"
        "       dlpt verify BASE.json [options] -- (script.py | -m module | -c code) [args ...]\n"
        "       dlpt mcp"
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
        "--exact-ops",
        action="store_true",
        help="walk the Python stack at every op start, so the CPU time of every op lands on its "
        "line; without it, on GPU runs, ops that launch nothing get theirs from the host sampler "
        "(kernels keep exact lines either way; slower on launch-bound loops)",
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


def split_program(parser: _Parser, argv: list[str]) -> tuple[list[str], list[str]]:
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


def parse_command_line(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = build_parser()
    opts_part, program = split_program(parser, argv)
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
            ("--exact-ops", opts.exact_ops),
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
        voice.say(f"{problem}; profiling as a single process")
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
