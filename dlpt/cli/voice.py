"""How the command line speaks during a run: one line at a time on stderr, prefixed ``dlpt:``
(``dlpt[rank 3]:`` on ranks other than 0), never on the status line's row, quiet under
``--quiet`` except for what went wrong.

State: the prefix, the status line and ``--quiet`` are set by :mod:`dlpt.cli.main` (a run, or a
``--load``) and :mod:`dlpt.cli.ending` (the rank, once known). One command line runs per process;
its signal thread may speak while the main thread runs the program (a line is written whole).
"""

from __future__ import annotations

from dlpt.cli.stdout_guard import say_line
from dlpt.frontend.status_line import StatusLine

__all__ = ["PREFIX", "STATUS_LINE", "QUIET", "say", "inform", "say_failures", "stop_status_line"]

PREFIX = ["dlpt"]  # "dlpt[rank 3]" on ranks other than 0 (set once the rank is known)
# The run's status line (None when it does not draw) and --quiet.
STATUS_LINE: list[StatusLine | None] = [None]
QUIET = [False]


def say(msg: str) -> None:
    """One line on stderr (never sharing a row with the status line); control characters of
    paths and session strings escaped."""
    line = STATUS_LINE[0]
    if line is not None:
        line.clear()
    say_line(PREFIX[0], msg)


def inform(msg: str) -> None:
    """What dlpt did (saved, wrote, waits): silenced by --quiet; failures go through :func:`say`."""
    if not QUIET[0]:
        say(msg)


def stop_status_line() -> None:
    line, STATUS_LINE[0] = STATUS_LINE[0], None
    if line is not None:
        line.stop()


def say_failures(msg: str) -> None:
    """For quiet ranks: only what went wrong."""
    if msg.startswith("could not"):
        say(msg)
