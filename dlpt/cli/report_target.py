"""Where the command line prints its text report and how wide: ``--report-file FILE`` and
``--width N`` (for a run, ``--load`` and ``dlpt diff``).

Without ``--report-file`` the report goes to stdout; with it, to FILE instead (without colour),
so the report no longer mixes with the program's own output. FILE follows the rules of every
file dlpt writes (:mod:`dlpt.files.safe_files`: atomically, through a symlink to its target,
never over a device, FIFO or directory), is checked before the program runs as ``-o``'s path is,
and may not name another file of the same command (the session saved or loaded, the HTML
report, an export). The width rules (``--width``, ``COLUMNS``, the terminal, else the report's
own width) are :mod:`dlpt.renderers.terminal.output`'s.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from dlpt.errors import UnsafeFileError, UsageError
from dlpt.files.safe_files import atomic_text_writer, check_output_path
from dlpt.renderers.terminal.output import MAX_WIDTH

__all__ = [
    "MIN_WIDTH_OPTION",
    "ReportTarget",
    "add_arguments",
    "check",
    "from_options",
    "print_with",
    "render_kwargs",
]

#: The narrowest ``--width``: below it the value columns leave no room for the line names.
MIN_WIDTH_OPTION = 40
WHAT = "text reports"


def _width(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid width {text!r}: give a number of columns") from None
    if not MIN_WIDTH_OPTION <= n <= MAX_WIDTH:
        raise argparse.ArgumentTypeError(f"must be {MIN_WIDTH_OPTION} to {MAX_WIDTH} columns, got {n}")
    return n


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--report-file`` and ``--width`` to a parser."""
    parser.add_argument(
        "--report-file",
        metavar="FILE",
        help="write the text report to FILE (no colour) instead of stdout",
    )
    parser.add_argument(
        "--width",
        type=_width,
        metavar="N",
        help="lay the report out in N columns (default: $COLUMNS, else the terminal's width, "
        "else as wide as its content: a pipe or a file gets every line whole)",
    )


@dataclass(frozen=True)
class ReportTarget:
    """The report's destination: ``path`` (None: stdout) and ``width`` (None: the rules')."""

    path: str | None = None
    abspath: str | None = None  # resolved at parse time: the program may chdir before it is written
    width: int | None = None
    force: bool = False  # --force: replace a file dlpt did not write

    def for_path(self, path_of: Callable[[str], str]) -> ReportTarget:
        """This target with its file renamed by ``path_of`` (one of several ranks' files)."""
        if self.path is None or self.abspath is None:
            return self
        return ReportTarget(path_of(self.path), path_of(self.abspath), self.width, self.force)

    @contextlib.contextmanager
    def open(self) -> Iterator[dict[str, Any]]:
        """The keyword arguments of ``print_report`` / ``print_ranks`` / ``print_to`` for this
        target: ``file`` (the report file, replaced when the block ends without an error) or
        stdout, ``width`` and ``color``."""
        if self.abspath is None:
            yield {"width": self.width}
            return
        with atomic_text_writer(self.abspath, WHAT, force=self.force) as f:
            yield {"file": f, "width": self.width, "color": False}


def from_options(opts: argparse.Namespace, others: Iterable[tuple[str, str | None]] = ()) -> ReportTarget:
    """The target ``opts`` asks for, its file checked: UsageError if it cannot be written, or is
    one of ``others`` ((flag, path) of the command's other files)."""
    path = getattr(opts, "report_file", None)
    width = getattr(opts, "width", None)
    if path is None:
        return ReportTarget(None, None, width)
    real = os.path.realpath(path)
    for flag, other in others:
        if other and os.path.realpath(other) == real:
            raise UsageError(f"--report-file {path}: the same file as {flag}")
    return ReportTarget(path, os.path.abspath(path), width, bool(getattr(opts, "force", False)))


def check(path: str, force: bool = False, protected: Mapping[str, str] | None = None) -> None:
    """UsageError saying why the report file ``path`` cannot be written (checked before the
    program runs, like ``-o``; ``force`` and ``protected`` as in dlpt.files.safe_files)."""
    try:
        check_output_path(path, WHAT, force=force, protected=protected)
    except UnsafeFileError as e:
        raise UsageError(f"--report-file {path}: {e}") from None


def render_kwargs(opts: argparse.Namespace) -> dict[str, Any]:
    """The text report's keyword arguments from its options (``--view``, ``--metric``,
    ``--threshold`` PCT, ``--depth``, ``--all``, ``--ascii``, ``--peak-tflops``, ``--verbose``): the command
    line's and the notebook magic's, which parse the same names."""
    return dict(
        view=opts.view,
        metric=opts.metric,
        threshold=opts.threshold / 100.0,
        depth=opts.depth,
        show_all=opts.show_all,
        ascii=opts.ascii,
        peak_tflops=opts.peak_tflops,
        verbose=opts.verbose,
    )


def print_with(target: ReportTarget, printer: Any, *args: Any, **kwargs: Any) -> None:
    """``printer(*args, **kwargs, **target's arguments)``: one report to ``target``."""
    with target.open() as where:
        printer(*args, **kwargs, **where)
