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
from typing import IO

from dlpt.errors import UnsafeFileError, UsageError
from dlpt.files.safe_files import atomic_text_writer, check_output_path
from dlpt.renderers.terminal.output import MAX_WIDTH

__all__ = ["MIN_WIDTH_OPTION", "ReportTarget", "Where", "add_arguments", "check", "target"]

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
    def open(self) -> Iterator[Where]:
        """Where a printer writes for this target: the report file (replaced when the block
        ends without an error) or stdout, its width and colour."""
        if self.abspath is None:
            yield Where(None, self.width, None)
            return
        with atomic_text_writer(self.abspath, WHAT, force=self.force) as f:
            yield Where(f, self.width, False)


@dataclass(frozen=True)
class Where:
    """An open report target as the printers take it (``print_report``, ``print_ranks``,
    ``print_to``: ``file=``, ``width=``, ``color=``): the file (None: stdout), the width (None:
    the rules') and the colour (None: the rules', False: never)."""

    file: IO[str] | None
    width: int | None
    color: bool | None


def target(
    path: str | None, width: int | None, force: bool = False, others: Iterable[tuple[str, str | None]] = ()
) -> ReportTarget:
    """The report's target: ``--report-file`` ``path`` (None: stdout), ``--width``; UsageError if
    the file is one of ``others`` ((flag, path) of the command's other files)."""
    if path is None:
        return ReportTarget(None, None, width)
    real = os.path.realpath(path)
    for flag, other in others:
        if other and os.path.realpath(other) == real:
            raise UsageError(f"--report-file {path}: the same file as {flag}")
    return ReportTarget(path, os.path.abspath(path), width, force)


def check(path: str, force: bool = False, protected: Mapping[str, str] | None = None) -> None:
    """UsageError saying why the report file ``path`` cannot be written (checked before the
    program runs, like ``-o``; ``force`` and ``protected`` as in dlpt.files.safe_files)."""
    try:
        check_output_path(path, WHAT, force=force, protected=protected)
    except UnsafeFileError as e:
        raise UsageError(f"--report-file {path}: {e}") from None
