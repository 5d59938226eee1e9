"""How ``python -m dlpt`` ends the process: with the program's exit status exactly as plain
``python`` gives it, or by a signal, as plain ``python`` dies of it.

The two never share a channel: :func:`program_status` turns the program's ``sys.exit(code)``
into what python's own exit gives (``code & 0xFF``, so ``sys.exit(-1)`` is 255 and
``sys.exit(-256)`` 0, never a signal), and a death by signal N is :class:`Death`, a status of
its own that only dlpt's signal handling makes (:mod:`dlpt.cli.signals`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from typing import Any, NoReturn

__all__ = ["Death", "program_status", "die_by_signal", "end_process"]

# Loaded now, before the program runs: resetting a signal's action from a thread other than
# the main one (which Python's signal.signal refuses) goes through libc's sigaction.
_libc: Any = None
with contextlib.suppress(OSError):
    import ctypes

    _libc = ctypes.CDLL(None, use_errno=True)

_LONG = 1 << 63


class Death(int):
    """The process must die of signal ``int(self)`` (never an exit status: a program's negative
    code is masked by :func:`program_status` first)."""

    def __repr__(self) -> str:
        return f"Death({int(self)})"


def program_status(code: int) -> int:
    """The status plain python exits with after ``sys.exit(code)``: CPython reads the code as a C
    long (-1 where it does not fit) and the system keeps its low 8 bits."""
    return (code if -_LONG <= code < _LONG else -1) & 0xFF


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            if stream is not None:
                stream.flush()


def die_by_signal(signum: int) -> NoReturn:
    """End the process by ``signum`` with its default action, from any thread, as the signal
    would have without dlpt's handler (the parent sees the process killed by it)."""
    _flush()
    with contextlib.suppress(ValueError):  # the main thread: Python's own way
        signal.signal(signum, signal.SIG_DFL)
    if _libc is not None:  # any thread: the C library's (Python's table is moot: we end now)
        _libc.signal(ctypes.c_int(signum), ctypes.c_void_p(0))  # SIG_DFL
    with contextlib.suppress(OSError, ValueError):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
    with contextlib.suppress(OSError, ValueError):  # this thread: the one sure not to block it now
        signal.pthread_kill(threading.get_ident(), signum)
    os.kill(os.getpid(), signum)
    time.sleep(2.0)  # delivery is immediate for an unblocked signal; this is the fallback only
    os._exit(128 + signum)


def end_process(status: int) -> int:
    """What the command's entry point does with :func:`dlpt.cli.main.run`'s status: an exit
    status is returned (for ``sys.exit``); a :class:`Death` ends the process as plain ``python``
    ends by that signal: by SIGINT after the interpreter's shutdown (threads joined, atexit run)
    for Ctrl-C, at once for SIGTERM and SIGHUP."""
    if not isinstance(status, Death):
        return status
    signum = int(status)
    if signum == signal.SIGINT:
        # An unhandled KeyboardInterrupt at the top makes CPython finalize, then kill itself by
        # SIGINT (Modules/main.c, exit_sigint). The program's traceback was already shown.
        sys.excepthook = _quiet_hook
        raise KeyboardInterrupt
    die_by_signal(signum)


def _quiet_hook(*_args: object) -> None:
    """sys.excepthook for the KeyboardInterrupt :func:`end_process` raises: nothing to show."""
