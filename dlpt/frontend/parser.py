"""The options of a run: one parser for the command line and the notebook magic (so the two
never differ), every check that can fail before the program starts (values out of range, options
that do not go together), and what they become: a frozen :class:`~dlpt.frontend.options.RunOptions`
or :class:`~dlpt.frontend.options.LoadOptions`. The ``argparse`` namespace never leaves this
module: each front end splits its own words (:mod:`dlpt.cli.options`, :mod:`dlpt.notebook.options`),
parses them here and gets typed options back.
"""

from __future__ import annotations

import argparse
import os
from typing import NoReturn

from dlpt._version import __version__
from dlpt.capture.host import DEFAULT_SAMPLE_HZ
from dlpt.capture.options import CaptureOptions
from dlpt.capture.pc_sampling import DEFAULT_STEPS as PC_DEFAULT_STEPS
from dlpt.errors import UsageError
from dlpt.files.write_target import absolute
from dlpt.frontend import outputs, report_target
from dlpt.frontend.checks import check_report, check_values
from dlpt.frontend.grace import DEFAULT_GRACE_S, GRACE_ENV
from dlpt.frontend.help_text import EXAMPLES
from dlpt.frontend.options import (
    DEFAULT_TIMEOUT_S,
    REPORT_RANKS,
    LoadOptions,
    Output,
    OutputOptions,
    ReportOptions,
    RunOptions,
)
from dlpt.frontend.report_target import ReportTarget
from dlpt.model.metrics import METRICS
from dlpt.renderers.exports import FORMATS as EXPORT_FORMATS
from dlpt.renderers.terminal.report import VIEWS
from dlpt.views.run import ViewOptions

__all__ = [
    "Parser",
    "build_parser",
    "collect_outputs",
    "check_values",
    "check_report",
    "report_target_of",
    "capture_options",
    "run_options",
    "load_options",
]


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one clear line instead of usage + error
        raise UsageError(message)


def build_parser(prog: str = "dlpt") -> Parser:
    """The parser of every option of a run and of ``load``. The notebook magic parses its
    options with it too (:mod:`dlpt.notebook.options`), so the two never differ."""
    p = Parser(
        prog=prog,
        allow_abbrev=False,  # abbreviations would make the script/option split ambiguous
        usage="dlpt [run] [options] (script.py | -m module | -c code) [args ...]\n"
        "       dlpt load FILE [FILE ...] [render options]    (also: dlpt --load FILE ...)\n"
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
    _report_and_files(p)
    _steps(p)
    _recording(p)
    _the_rest(p)
    return p


def _report_and_files(p: Parser) -> None:
    """Where the results go and what the text report shows."""
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


def _steps(p: Parser) -> None:
    """Which steps are counted."""
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


def _recording(p: Parser) -> None:
    """What a run records besides the tree."""
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


def _the_rest(p: Parser) -> None:
    """Saved PC samples, the MFU's peak, ranks, signals, the version."""
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


# -- what was parsed: checked, then typed ------------------------------------------------------


def collect_outputs(ns: argparse.Namespace) -> tuple[Output, ...]:
    """The files ``ns`` asks for besides the session (``--html``, ``--export``); UsageError on
    an unknown format or a file given twice (``-o`` and ``--load``'s sessions included; a
    symlink and its target are the same file)."""
    out = []
    if getattr(ns, "html", None) is not None:
        out.append(Output("html", ns.html, absolute(ns.html)))
    for fmt, path in getattr(ns, "export", None) or []:
        if fmt not in EXPORT_FORMATS:
            raise UsageError(f"--export: unknown format {fmt!r}; choose one of: {', '.join(EXPORT_FORMATS)}")
        out.append(Output(fmt, path, absolute(path)))
    seen: dict[str, str] = {}
    loads = getattr(ns, "load", None) or []
    for flag, given in (*(("--load", p) for p in loads), ("-o", getattr(ns, "output", None))):
        if given:
            seen[os.path.realpath(given)] = flag
    for o in out:
        real = os.path.realpath(o.abspath)
        if real in seen:
            raise UsageError(f"{o.flag} {o.path}: the same file as {seen[real]}")
        seen[real] = o.flag
    return tuple(out)


def report_target_of(
    ns: argparse.Namespace, others: list[tuple[str, str | None]], files: tuple[Output, ...]
) -> ReportTarget:
    """Where the text report goes (``--report-file``, ``--width``); UsageError when its file is
    one of the command's others (``others``: (flag, path) besides the ``files``)."""
    return report_target.target(
        ns.report_file, ns.width, bool(ns.force), [*others, *((o.flag, o.path) for o in files)]
    )


def capture_options(ns: argparse.Namespace, joinable: bool = False) -> CaptureOptions:
    """What the profile records (``joinable``: a ``dlpt.profile()`` the program starts joins it)."""
    return CaptureOptions(
        skip_first=ns.skip_first,
        active=ns.active,
        calibrate=ns.calibrate == "on",
        gpu=not ns.no_gpu,
        nested_ops=ns.nested_ops,
        exact_ops=True if ns.exact_ops else None,
        step_on=ns.step_on,
        sources=not ns.no_source,
        flops=ns.flops,
        memory=ns.memory,
        joinable=joinable,
        sample_hz=DEFAULT_SAMPLE_HZ if ns.sample_hz is None else ns.sample_hz,
        timeline=ns.timeline or 0,
        pc_sampling=(ns.pc_sampling_steps or PC_DEFAULT_STEPS) if ns.pc_sampling else False,
    )


def _report(ns: argparse.Namespace, target: ReportTarget) -> ReportOptions:
    return ReportOptions(
        view=ns.view,
        metric=ns.metric,
        threshold=ns.threshold / 100.0,
        depth=ns.depth,
        ascii=ns.ascii,
        verbose=ns.verbose,
        shown=not ns.no_report,
        target=target,
    )


def _outputs(ns: argparse.Namespace, files: tuple[Output, ...], protected: dict[str, str]) -> OutputOptions:
    return OutputOptions(
        session=ns.output,
        session_abspath=absolute(ns.output) if ns.output is not None else None,
        files=files,
        open=ns.open,
        force=bool(ns.force),
        protected=tuple(protected.items()),
    )


def run_options(
    ns: argparse.Namespace,
    files: tuple[Output, ...],
    target: ReportTarget,
    *,
    program: list[str] | None = None,
    protected: dict[str, str] | None = None,
    joinable: bool = False,
    signal_grace: float = DEFAULT_GRACE_S,
) -> RunOptions:
    """The options of a profiled run, from what was parsed and checked."""
    return RunOptions(
        capture=capture_options(ns, joinable),
        view=ViewOptions(show_all=ns.show_all, peak_tflops=ns.peak_tflops),
        report=_report(ns, target),
        outputs=_outputs(ns, files, protected or {}),
        quiet=ns.quiet,
        program=tuple(program or ()),
        report_ranks=ns.report_ranks or "0",
        rank_timeout=DEFAULT_TIMEOUT_S if ns.rank_timeout is None else ns.rank_timeout,
        signal_grace=signal_grace,
        inline_html=bool(getattr(ns, "inline_html", False)),
    )


def load_options(ns: argparse.Namespace, files: tuple[Output, ...], target: ReportTarget) -> LoadOptions:
    """The ``load`` command's options, from what was parsed and checked (``ns.load``: the
    sessions, their globs expanded)."""
    return LoadOptions(
        sessions=tuple(ns.load),
        view=ViewOptions(show_all=ns.show_all, peak_tflops=ns.peak_tflops),
        report=_report(ns, target),
        outputs=_outputs(ns, files, {}),
        quiet=ns.quiet,
        kernel_lines=ns.kernel_lines,
    )
