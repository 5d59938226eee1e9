"""Printing dlpt's reports to a stdout that may be gone, without changing the exit status.

The terminal report goes to stdout, which may be a pipe whose reader left (``| head -c0``), a
full device (``> /dev/full``) or closed. Python itself turns such a failure at exit into status
120, and rich turns a broken pipe into ``SystemExit(1)``; either would replace the program's
own status with dlpt's trouble. So the CLI prints through :func:`report_output`: a failure is one
line on stderr, and what dlpt had buffered for stdout is dropped (stdout then writes to
``/dev/null``, as rich does on a broken pipe, so the interpreter's final flush has nothing left
to fail on).

What the *program* left unflushed is its own business: :func:`program_output_flushed` tells the
CLI to print no report then, and Python's exit reports the failure as it would without dlpt
(status 120).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["Printed", "program_output_flushed", "report_output", "say_line"]


def program_output_flushed() -> bool:
    """Flush what the program printed; False if stdout cannot take it."""
    out = sys.stdout
    if out is None:
        return True
    try:
        out.flush()
    except ValueError:  # closed by the program: nothing of its own is pending
        return True
    except Exception:  # noqa: BLE001 - any other failure means: do not print on top of it
        return False
    return True


def _drop_stdout() -> None:
    """Point stdout's file descriptor at /dev/null and flush dlpt's leftovers into it."""
    out = sys.stdout
    with contextlib.suppress(Exception):
        fd = out.fileno() if out is not None else 1
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
    with contextlib.suppress(Exception):
        if out is not None:
            out.flush()


@dataclass
class Printed:
    """How :func:`report_output`'s block went: ``failure`` says what stopped it (None: it
    printed); ``reader_left`` for a pipe whose reader left (``| head``: the reader's choice)."""

    failure: str | None = None
    reader_left: bool = False

    @property
    def failed(self) -> bool:
        """Whether stdout could not take the report (a full disk, a closed stdout): dlpt's own
        commands (``--load``, ``dlpt diff``) end with status 2 then."""
        return self.failure is not None and not self.reader_left


@contextlib.contextmanager
def report_output(say: Callable[[str], None], what: str = "the report") -> Iterator[Printed]:
    """Print ``what`` inside the block; if stdout fails, ``say`` it in one line and go on (what
    went wrong is in the :class:`Printed` it gives)."""
    printed = Printed()
    try:
        yield printed
        if sys.stdout is not None:
            sys.stdout.flush()
    except (SystemExit, BrokenPipeError):  # the reader left (``| head``); rich says it with SystemExit
        printed.failure, printed.reader_left = "stdout is closed (broken pipe)", True
        _drop_stdout()
    except OSError as e:
        printed.failure = str(e.strerror or e)
        _drop_stdout()
    except ValueError:  # the program closed sys.stdout ("I/O operation on closed file")
        printed.failure = "stdout is closed"
    if printed.failure is not None:
        say(f"could not print {what}: {printed.failure}")


def say_line(prefix: str, msg: str) -> None:
    """``prefix: msg`` on stderr, with every control character of ``msg`` escaped (it holds
    paths, session strings and program text: dlpt.model.safe_text). A closed or broken stderr
    is ignored: a message must never end the run."""
    from dlpt.model.safe_text import escape_control

    err = sys.stderr
    if err is None:
        return
    with contextlib.suppress(Exception):
        print(f"{prefix}: {escape_control(msg)}", file=err, flush=True)
