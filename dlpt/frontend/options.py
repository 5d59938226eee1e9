"""A run's options, typed and frozen: what the command line or the notebook magic's line asked
for (:mod:`dlpt.frontend.parser` makes them; nothing past it sees an ``argparse`` namespace).

:class:`RunOptions` (a program or a cell profiled) holds what each part of a run needs, apart:
``capture`` (:class:`~dlpt.capture.options.CaptureOptions`, the arguments of ``dlpt.profile``),
``view`` (:class:`~dlpt.views.run.ViewOptions`, what changes the numbers), ``report``
(:class:`ReportOptions`: the text report's view, metric, threshold, depth, drawing and where it
goes) and ``outputs`` (:class:`OutputOptions`: the session file, the HTML report and exports, the
rules they are written by), then what one front end alone needs (ranks and signals on the
command line, ``--inline-html`` in a notebook). :class:`LoadOptions` are the ``load`` command's:
saved sessions shown again, with the same view, report and outputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dlpt.capture.options import CaptureOptions
from dlpt.frontend.grace import DEFAULT_GRACE_S
from dlpt.frontend.report_target import ReportTarget
from dlpt.views.run import ViewOptions

__all__ = [
    "REPORT_RANKS",
    "DEFAULT_TIMEOUT_S",
    "Output",
    "ReportOptions",
    "OutputOptions",
    "RunOptions",
    "LoadOptions",
]

#: Which ranks of a job print (``--report-ranks``): rank 0 (the report across ranks), all, none.
REPORT_RANKS = ("0", "all", "none")
#: How long rank 0 waits for the other ranks' sessions (``--rank-timeout``), in seconds.
DEFAULT_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Output:
    """One requested file besides the session: ``kind`` is "html" or an export format."""

    kind: str
    path: str
    abspath: str  # resolved at parse time: the program may chdir before it is written

    @property
    def flag(self) -> str:
        return "--html" if self.kind == "html" else f"--export {self.kind}"

    @property
    def what(self) -> str:
        return "HTML report" if self.kind == "html" else f"{self.kind} export"


@dataclass(frozen=True)
class ReportOptions:
    """The text report: its ``view`` (``--view``), the metric ranked by (None: the view's
    choice), the ``threshold`` below which rows are hidden (a fraction of the total), the
    ``depth``, ASCII only, the whole header (``verbose``); whether it is printed at all
    (``shown``: not with ``--no-report``) and where it goes (``target``)."""

    view: str = "tree"
    metric: str | None = None
    threshold: float = 0.01
    depth: int | None = None
    ascii: bool = False
    verbose: bool = False
    shown: bool = True
    target: ReportTarget = field(default_factory=ReportTarget)


@dataclass(frozen=True)
class OutputOptions:
    """Where a run's results go besides the text report: the session (``-o`` as given, and
    where it is written, resolved before the program could chdir), the HTML report and exports
    (``files``), opening the HTML report (``--open``), and the rules every file dlpt writes
    follows (``force``: replace files dlpt did not write; ``protected``: (real path, what it is)
    of files never replaced without it, the profiled script)."""

    session: str | None = None
    session_abspath: str | None = None
    files: tuple[Output, ...] = ()
    open: bool = False
    force: bool = False
    protected: tuple[tuple[str, str], ...] = ()

    @property
    def protected_paths(self) -> dict[str, str]:
        return dict(self.protected)

    @property
    def html(self) -> bool:
        """Whether an HTML report is asked for."""
        return any(o.kind == "html" for o in self.files)


@dataclass(frozen=True)
class RunOptions:
    """A profiled run's options (see the module's docstring). ``program``: what the command line
    runs (script and arguments, ``-m module``, ``-c code``); ``quiet``: no status line, no
    "saved ..." lines. Under a launcher (the command line): which ranks print
    (``report_ranks``, one of :data:`REPORT_RANKS`), how long rank 0 waits for the others
    (``rank_timeout``), how long dlpt may take to save after a signal (``signal_grace``). In a
    notebook: the HTML report shown below the cell (``inline_html``)."""

    capture: CaptureOptions = field(default_factory=CaptureOptions)
    view: ViewOptions = field(default_factory=ViewOptions)
    report: ReportOptions = field(default_factory=ReportOptions)
    outputs: OutputOptions = field(default_factory=OutputOptions)
    quiet: bool = False
    program: tuple[str, ...] = ()
    report_ranks: str = "0"
    rank_timeout: float = DEFAULT_TIMEOUT_S
    signal_grace: float = DEFAULT_GRACE_S
    inline_html: bool = False

    @property
    def steps(self) -> list[str]:
        """What finishing the run does, in order: named when a signal's grace runs out first."""
        o = self.outputs
        return [
            "stopping the profile",
            *([f"the session ({o.session})"] if o.session is not None else []),
            *(f"the {f.what} ({f.path})" for f in o.files),
            *(["the report"] if self.report.shown else []),
        ]


@dataclass(frozen=True)
class LoadOptions:
    """The ``load`` command's options: the saved ``sessions`` (several: the ranks of one job,
    shown across ranks), viewed, reported and written as a run's are; ``kernel_lines``: show the
    PC-sampled source lines of the kernels named so instead of a report."""

    sessions: tuple[str, ...]
    view: ViewOptions = field(default_factory=ViewOptions)
    report: ReportOptions = field(default_factory=ReportOptions)
    outputs: OutputOptions = field(default_factory=OutputOptions)
    quiet: bool = False
    kernel_lines: str | None = None
