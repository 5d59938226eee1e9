"""How ``python -m dlpt`` ends on SIGINT, SIGTERM and SIGHUP without losing the profile, and
without holding a signal for long.

While the program runs, Ctrl-C (SIGINT) is the program's business: Python raises
KeyboardInterrupt in it, as always, and the CLI saves and reports when it unwinds. SIGTERM (how
``timeout``, schedulers and container runtimes end a job) and SIGHUP (the terminal closed, the
ssh connection dropped) would kill the process outright, so the CLI installs a handler for both
where they have their default action (an ignored one, under ``nohup``, stays ignored): it
stops, saves and reports the profile, then ends the process at once with 128 + the signal's
number (143, 129), the status a shell shows for a process the signal killed (the program's
``finally`` blocks and atexit handlers do not run, as with plain ``python``).

While dlpt stops and saves (:meth:`Signals.deferred`), SIGINT, SIGTERM and SIGHUP are held, so
that a save under way completes, but for at most :data:`GRACE_S` after the first one: if dlpt
has not finished by then, it says on stderr what it skips, removes the temporary file of the
write in progress (the old file stays as it was) and ends with 128 + the signal's number. While
the report prints (:meth:`Signals.interruptible`), a signal cuts it short (the profile is
saved). A held signal decides the exit status: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP.

Once dlpt has finished (:meth:`Signals.restore`), every handler is the one the program left, so
the interpreter's shutdown (which waits for the program's non-daemon threads) reacts to Ctrl-C
and SIGTERM exactly as plain ``python`` does.

A forked child restores the default SIGTERM and SIGHUP actions: it dies of them like any child
of plain ``python`` and never reports its parent's profile.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

from dlpt.model.safe_files import remove_partial_files

__all__ = ["Signals", "Interrupted", "GRACE_S", "ENDING"]

Handler = Any  # what signal.signal accepts and returns: a callable, SIG_DFL, SIG_IGN or None

#: The longest a signal is held while dlpt stops and saves.
GRACE_S = 1.0
#: Signals that end the process at once unless handled: dlpt saves the profile first.
ENDING = (signal.SIGTERM, signal.SIGHUP)
_HELD = (signal.SIGINT, *ENDING)


class Interrupted(Exception):
    """Raised inside :meth:`Signals.interruptible` when SIGINT, SIGTERM or SIGHUP arrives."""


def _restore_defaults_in_child() -> None:
    """After fork(), in the child: SIGTERM and SIGHUP kill it again, unless the program set a
    handler of its own."""
    for sig in ENDING:
        with contextlib.suppress(ValueError, OSError):
            if getattr(signal.getsignal(sig), "dlpt_handler", False):
                signal.signal(sig, signal.SIG_DFL)


os.register_at_fork(after_in_child=_restore_defaults_in_child)


def _name(signum: int) -> str:
    with contextlib.suppress(ValueError):
        return signal.Signals(signum).name
    return f"signal {signum}"


class Signals:
    """Signal handling around one profiled run. Only the main thread can set handlers; from any
    other thread every method does nothing (the CLI always runs on the main thread).

    ``say`` prints a line on stderr (the CLI's voice); ``remaining`` is what is still to do
    while dlpt finishes ("the session (run.json)", "the report"), named when a held signal
    cuts it short."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self.received: int | None = None
        self.remaining: list[str] = []
        self._say = say
        self._pid = os.getpid()
        self._busy = False  # inside the ending handler's own finishing
        self._installed: dict[int, Handler] = {}  # signal -> the handler before ours
        self._lock = threading.Lock()  # the grace timer's thread against the end of deferred()
        self._deferring = False
        self._timer: threading.Timer | None = None

    @property
    def status(self) -> int | None:
        """128 + the last held signal, the status a shell shows for it; None if none."""
        return None if self.received is None else 128 + self.received

    def terminate_with(self, finish: Callable[[], object]) -> None:
        """While the program runs, SIGTERM and SIGHUP call ``finish`` (stop, save, report) and
        end the process with 128 + the signal's number. An ignored one stays ignored."""

        def on_ending(signum: int, _frame: FrameType | None) -> None:
            if os.getpid() != self._pid:  # a forked child that kept the handler somehow
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)
                return
            if self._busy:
                return
            self._busy = True
            self.received = signum
            finish()
            _flush()
            os._exit(128 + signum)

        on_ending.dlpt_handler = True  # type: ignore[attr-defined]
        for sig in ENDING:
            with contextlib.suppress(ValueError):  # not the main thread
                if signal.getsignal(sig) == signal.SIG_DFL:
                    self._installed[sig] = signal.signal(sig, on_ending)

    def note(self, signum: int, _frame: FrameType | None) -> None:
        """A handler that only notes the signal (for the status). The CLI installs it with a
        direct ``signal.signal`` call the moment the program returns: a Python-level call first
        would give a pending Ctrl-C the chance to raise in dlpt's own code."""
        self.received = signum

    def _hold(self, signum: int, _frame: FrameType | None) -> None:
        self.received = signum
        if self._timer is None:
            self._timer = threading.Timer(GRACE_S, self._give_up)
            self._timer.daemon = True
            self._timer.start()

    def _give_up(self) -> None:
        """The grace timer's thread: dlpt is still finishing a second after a signal arrived.
        Say what is skipped and end as the signal asks (the lock is never released: the
        main thread must not go on writing while the process ends)."""
        self._lock.acquire()
        if not self._deferring:
            self._lock.release()
            return
        signum = self.received or signal.SIGINT
        remove_partial_files()
        skipped = ", ".join(self.remaining) or "the rest of dlpt's work"
        self._say(f"{_name(signum)}: ending now, after holding it {GRACE_S:g} s; skipped: {skipped}")
        _flush()
        os._exit(128 + signum)

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """SIGINT, SIGTERM and SIGHUP are held inside the block, at most :data:`GRACE_S` each."""
        with self._lock:
            self._deferring = True
        try:
            with self._handlers(self._hold):
                yield
        finally:
            with self._lock:
                self._deferring = False
                if self._timer is not None:
                    self._timer.cancel()
                    self._timer = None

    @contextlib.contextmanager
    def interruptible(self) -> Iterator[None]:
        """SIGINT, SIGTERM and SIGHUP are noted and raise :class:`Interrupted` inside the block."""

        def interrupt(signum: int, _frame: FrameType | None) -> None:
            self.received = signum
            raise Interrupted(_name(signum))

        with self._handlers(interrupt):
            yield

    def restore(self, sigint: Handler) -> None:
        """Give the process back the handlers it would have without dlpt: SIGINT's is
        ``sigint`` (the one the program left; Python's own when None), SIGTERM and SIGHUP get
        theirs back where dlpt's handler is still installed."""
        with contextlib.suppress(ValueError):  # not the main thread
            signal.signal(signal.SIGINT, sigint if sigint is not None else signal.default_int_handler)
            for sig, before in self._installed.items():
                if getattr(signal.getsignal(sig), "dlpt_handler", False):
                    signal.signal(sig, before if before is not None else signal.SIG_DFL)
            self._installed.clear()

    @contextlib.contextmanager
    def _handlers(self, handler: Callable[[int, FrameType | None], None]) -> Iterator[None]:
        saved: dict[int, Handler] = {}
        try:
            for sig in _HELD:
                if signal.getsignal(sig) != signal.SIG_IGN:
                    saved[sig] = signal.signal(sig, handler)
        except ValueError:  # not the main thread: leave the handlers alone
            pass
        try:
            yield
        finally:
            for signum, old in saved.items():
                signal.signal(signum, old if old is not None else signal.SIG_DFL)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            if stream is not None:
                stream.flush()
