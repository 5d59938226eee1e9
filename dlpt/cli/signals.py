"""How ``python -m dlpt`` ends on SIGINT and SIGTERM without losing the profile.

While the program runs, Ctrl-C (SIGINT) is the program's business: Python raises
KeyboardInterrupt in it, as always, and the CLI saves and reports when it unwinds. SIGTERM (how
``timeout``, schedulers and container runtimes end a job) would kill the process outright, so
the CLI installs a handler for it: the handler stops, saves and reports the profile, then ends
the process at once with status 143, as if SIGTERM had killed it (the program's ``finally``
blocks and atexit handlers do not run, as with plain ``python``).

While dlpt stops and saves (:meth:`Signals.deferred`), both signals are only noted: a second
Ctrl-C can no longer interrupt the save. While the report prints
(:meth:`Signals.interruptible`), either one cuts the report short (the profile is saved). A
noted signal decides the exit status: 128 + its number, 130 for SIGINT, 143 for SIGTERM.

A forked child restores the default SIGTERM action: it dies of SIGTERM like any child of plain
``python`` and never reports its parent's profile.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

__all__ = ["Signals", "Interrupted"]

Handler = Any  # what signal.signal accepts and returns: a callable, SIG_DFL, SIG_IGN or None


class Interrupted(Exception):
    """Raised inside :meth:`Signals.interruptible` when SIGINT or SIGTERM arrives."""


def _restore_default_sigterm_in_child() -> None:
    """After fork(), in the child: SIGTERM kills it again, unless the program set a handler."""
    with contextlib.suppress(ValueError, OSError):
        if getattr(signal.getsignal(signal.SIGTERM), "dlpt_handler", False):
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


os.register_at_fork(after_in_child=_restore_default_sigterm_in_child)


class Signals:
    """Signal handling around one profiled run. Only the main thread can set handlers; from any
    other thread every method does nothing (the CLI always runs on the main thread)."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._pid = os.getpid()
        self._busy = False  # inside the SIGTERM handler's own finishing

    @property
    def status(self) -> int | None:
        """128 + the last noted signal, the status a shell shows for it; None if none."""
        return None if self.received is None else 128 + self.received

    def terminate_with(self, finish: Callable[[], object]) -> None:
        """While the program runs, SIGTERM calls ``finish`` (stop, save, report) and ends the
        process with status 143. An ignored SIGTERM (nohup) stays ignored."""

        def on_sigterm(signum: int, _frame: FrameType | None) -> None:
            if os.getpid() != self._pid:  # a forked child that kept the handler somehow
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGTERM)
                return
            if self._busy:
                return
            self._busy = True
            self.received = signum
            finish()
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            os._exit(128 + signum)

        on_sigterm.dlpt_handler = True  # type: ignore[attr-defined]
        with contextlib.suppress(ValueError):  # not the main thread
            if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
                signal.signal(signal.SIGTERM, on_sigterm)

    def note(self, signum: int, _frame: FrameType | None) -> None:
        """A handler that only notes the signal (for the status). The CLI installs it with a
        direct ``signal.signal`` call the moment the program returns: a Python-level call first
        would give a pending Ctrl-C the chance to raise in dlpt's own code."""
        self.received = signum

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """SIGINT and SIGTERM are noted, not acted on, inside the block."""
        with self._handlers(self.note):
            yield

    @contextlib.contextmanager
    def interruptible(self) -> Iterator[None]:
        """SIGINT and SIGTERM are noted and raise :class:`Interrupted` inside the block."""

        def interrupt(signum: int, _frame: FrameType | None) -> None:
            self.received = signum
            raise Interrupted(signal.Signals(signum).name)

        with self._handlers(interrupt):
            yield

    @contextlib.contextmanager
    def _handlers(self, handler: Callable[[int, FrameType | None], None]) -> Iterator[None]:
        saved: dict[int, Handler] = {}
        try:
            for sig in (signal.SIGINT, signal.SIGTERM):
                if signal.getsignal(sig) != signal.SIG_IGN:
                    saved[sig] = signal.signal(sig, handler)
        except ValueError:  # not the main thread: leave the handlers alone
            pass
        try:
            yield
        finally:
            for signum, old in saved.items():
                signal.signal(signum, old if old is not None else signal.SIG_DFL)
