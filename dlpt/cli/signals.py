"""How ``python -m dlpt`` ends on SIGINT, SIGTERM and SIGHUP: the profile saved within a bounded
grace, then death by the signal itself, as plain ``python`` dies of it.

While the program runs, Ctrl-C (SIGINT) is the program's business: Python raises
KeyboardInterrupt in it, as always, and the CLI saves and reports when it unwinds. SIGTERM (how
``timeout``, schedulers, torchrun and container runtimes end a job) and SIGHUP (the terminal
closed, the ssh connection dropped) would kill the process outright, so the CLI installs a
handler for both where they have their default action (an ignored one, under ``nohup``, stays
ignored): it stops, saves and reports the profile, then the process dies of the signal.

A Python-level handler runs only when the main thread returns to the interpreter; a program stuck
in native code (a hung rendezvous, a mutex wait) never does. So the signal is also seen from
outside the main thread: Python's C-level handler writes the signal's number to the wakeup fd
(:func:`signal.set_wakeup_fd`), which a watchdog thread of dlpt's reads. Whichever sees the
signal first (the watchdog, or the handler on the main thread) finishes; the other waits. If the
program installs a wakeup fd of its own (asyncio's ``add_signal_handler``), only the handler on
the main thread is left, as before.

Every finish after a signal is bounded: after :func:`grace_s` seconds (``--signal-grace``,
``DLPT_SIGNAL_GRACE``, default :data:`DEFAULT_GRACE_S`, near the 10-30 s that torchrun, Slurm,
docker and Kubernetes give before SIGKILL) dlpt says on stderr what it skips, removes the
temporary file of the write in progress (the old file stays as it was) and the process dies of
the signal. While the report prints (:meth:`Signals.interruptible`) a signal cuts it short.

Exit statuses are plain python's: a process that got SIGTERM or SIGHUP dies of it (the parent
sees -15 / -1, a shell 143 / 129), Ctrl-C that ended the program ends the process by SIGINT
(-2, 130), so that a shell loop stops on Ctrl-C. The program's ``finally`` blocks and atexit
handlers do not run after SIGTERM/SIGHUP, as with plain ``python``.

Once dlpt has finished (:meth:`Signals.restore`), every handler is the one the program left, so
the interpreter's shutdown (which waits for the program's non-daemon threads) reacts to Ctrl-C
and SIGTERM exactly as plain ``python`` does.

A forked child restores the default SIGTERM and SIGHUP actions and drops the wakeup fd: it dies
of them like any child of plain ``python`` and never reports its parent's profile.
"""

from __future__ import annotations

import _thread
import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any, NoReturn

from dlpt.errors import UsageError
from dlpt.model.safe_files import remove_partial_files

__all__ = [
    "Signals",
    "Interrupted",
    "DEFAULT_GRACE_S",
    "GRACE_ENV",
    "ENDING",
    "grace_s",
    "die_by_signal",
    "end_process",
]

Handler = Any  # what signal.signal accepts and returns: a callable, SIG_DFL, SIG_IGN or None

#: How long dlpt may take to save after a signal, unless told otherwise.
DEFAULT_GRACE_S = 10.0
#: The environment variable that sets the grace (seconds) when ``--signal-grace`` is not given.
GRACE_ENV = "DLPT_SIGNAL_GRACE"
#: Signals that end the process at once unless handled: dlpt saves the profile first.
ENDING = (signal.SIGTERM, signal.SIGHUP)
_HELD = (signal.SIGINT, *ENDING)

# Loaded now, before the program runs: resetting a signal's action from a thread other than
# the main one (which Python's signal.signal refuses) goes through libc's sigaction.
_libc: Any = None
with contextlib.suppress(OSError):
    _libc = ctypes.CDLL(None, use_errno=True)


def grace_s(option: float | None) -> float:
    """The grace: ``option`` (``--signal-grace``) if given, else :data:`GRACE_ENV`, else the
    default. UsageError for a value that is not a finite number of seconds > 0."""
    given: str | float | None = option
    where = "--signal-grace"
    if option is None:
        given, where = os.environ.get(GRACE_ENV), GRACE_ENV
    if given is None or given == "":
        return DEFAULT_GRACE_S
    try:
        value = float(given)
    except ValueError:
        raise UsageError(f"{where} must be a number of seconds, got {given!r}") from None
    if not 0 < value < float("inf"):
        raise UsageError(f"{where} must be a number of seconds > 0, got {given}")
    return value


class Interrupted(Exception):
    """Raised inside :meth:`Signals.interruptible` when SIGINT, SIGTERM or SIGHUP arrives."""


def _name(signum: int) -> str:
    with contextlib.suppress(ValueError):
        return signal.Signals(signum).name
    return f"signal {signum}"


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
    os.kill(os.getpid(), signum)
    time.sleep(2.0)  # delivery is immediate for an unblocked signal; this is the fallback only
    os._exit(128 + signum)


def end_process(status: int) -> int:
    """What the command's entry point does with :func:`dlpt.cli.main.main`'s status: a status
    >= 0 is returned (for ``sys.exit``); ``-N`` means death by signal N, as plain ``python``
    ends: by SIGINT after the interpreter's shutdown (threads joined, atexit run) for Ctrl-C,
    at once for SIGTERM and SIGHUP."""
    if status >= 0:
        return status
    signum = -status
    if signum == signal.SIGINT:
        # An unhandled KeyboardInterrupt at the top makes CPython finalize, then kill itself by
        # SIGINT (Modules/main.c, exit_sigint). The program's traceback was already shown.
        sys.excepthook = _quiet_hook
        raise KeyboardInterrupt
    die_by_signal(signum)


def _quiet_hook(*_args: object) -> None:
    """sys.excepthook for the KeyboardInterrupt :func:`end_process` raises: nothing to show."""


class _Watchdog:
    """A daemon thread that reads the wakeup fd Python's C-level signal handler writes each
    signal's number to, at once, whatever the main thread is doing. ``on_signal`` runs on it.

    [MT] Started and stopped on the main thread (set_wakeup_fd is main-thread only)."""

    def __init__(self, on_signal: Callable[[int], None]) -> None:
        self._on_signal = on_signal
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)  # the C handler must never block on it
        self._previous = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        self._pid = os.getpid()
        self._closed = False
        # A bare thread, not a threading.Thread: the program's threading.enumerate() and
        # active_count() stay what they are without dlpt.
        self._done = _thread.allocate_lock()
        self._done.acquire()
        _thread.start_new_thread(self._loop, ())

    def _loop(self) -> None:
        try:
            while True:
                try:
                    data = os.read(self._read, 64)
                except OSError:
                    return
                if not data or self._closed:
                    return
                if self._previous >= 0:  # a wakeup fd set before dlpt's: it still gets its bytes
                    with contextlib.suppress(OSError):
                        os.write(self._previous, data)
                for signum in data:
                    self._on_signal(signum)
        finally:
            self._done.release()

    def close(self) -> None:
        """Give the wakeup fd back to what it was and end the thread (main thread only)."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(ValueError):
            now = signal.set_wakeup_fd(self._previous)
            if now != self._write:  # the program set its own meanwhile: leave that one in place
                signal.set_wakeup_fd(now)
        with contextlib.suppress(OSError):
            os.write(self._write, b"\0")  # wakes the thread, which sees _closed
        self._done.acquire(timeout=1.0)
        for fd in (self._read, self._write):
            with contextlib.suppress(OSError):
                os.close(fd)

    def forget_in_child(self) -> None:
        """After fork(), in the child: the pipe is the parent's; the thread is not there."""
        self._closed = True
        with contextlib.suppress(ValueError, OSError):
            now = signal.set_wakeup_fd(-1)
            if now != self._write:  # the program's own: keep it
                signal.set_wakeup_fd(now)
        for fd in (self._read, self._write):
            with contextlib.suppress(OSError):
                os.close(fd)


_watchdogs: list[_Watchdog] = []


def _in_child() -> None:
    """After fork(), in the child: SIGTERM and SIGHUP kill it again, unless the program set a
    handler of its own, and no signal of the child wakes the parent's watchdog."""
    for sig in ENDING:
        with contextlib.suppress(ValueError, OSError):
            if getattr(signal.getsignal(sig), "dlpt_handler", False):
                signal.signal(sig, signal.SIG_DFL)
    for w in _watchdogs:
        w.forget_in_child()
    _watchdogs.clear()


os.register_at_fork(after_in_child=_in_child)


class Signals:
    """Signal handling around one profiled run. Handlers can only be set on the main thread;
    from any other thread the methods that set them leave them alone.

    ``say`` prints a line on stderr (the CLI's voice); ``remaining`` is what is still to do
    while dlpt finishes ("the session (run.json)", "the report"), named when the grace runs out.
    ``grace`` is the longest dlpt finishes after a signal, in seconds."""

    def __init__(self, say: Callable[[str], None], grace: float = DEFAULT_GRACE_S) -> None:
        self.received: int | None = None
        self.remaining: list[str] = []
        self.grace = grace
        self._say = say
        self._pid = os.getpid()
        self._installed: dict[int, Handler] = {}  # signal -> the handler before ours
        # The grace timer: started, cancelled and fired under this lock. A signal handler on the
        # main thread only tries it (the main thread may hold it when the handler runs).
        self._lock = threading.Lock()
        self._ending = False  # a SIGTERM/SIGHUP is being handled (by one thread only)
        self._first = threading.Lock()  # a test-and-set: acquired once, by the thread that finishes
        self._finisher: int | None = None
        self._finish: Callable[[], object] | None = None
        self._held = False  # inside deferred() or interruptible(): the main thread is finishing
        self._timer: threading.Timer | None = None
        self._watchdog: _Watchdog | None = None

    @property
    def status(self) -> int | None:
        """``-N`` for the signal N that arrived while dlpt finished (the process dies of it:
        :func:`end_process`); None if none."""
        return None if self.received is None else -self.received

    @property
    def ending(self) -> bool:
        """Whether dlpt is finishing because of SIGTERM or SIGHUP (no waiting for anyone)."""
        return self._ending

    def terminate_with(self, finish: Callable[[], object]) -> None:
        """While the program runs, SIGTERM and SIGHUP call ``finish`` (stop, save, report) on
        the watchdog's thread or the main thread, whichever sees the signal first, and the
        process dies of the signal, within the grace. An ignored one stays ignored."""
        self._finish = finish

        def on_ending(signum: int, _frame: FrameType | None) -> None:
            if os.getpid() != self._pid:  # a forked child that kept the handler somehow
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)
                return
            self._end(signum)

        on_ending.dlpt_handler = True  # type: ignore[attr-defined]
        for sig in ENDING:
            with contextlib.suppress(ValueError):  # not the main thread
                if signal.getsignal(sig) == signal.SIG_DFL:
                    self._installed[sig] = signal.signal(sig, on_ending)
        if self._installed:
            with contextlib.suppress(ValueError, OSError):  # not the main thread: no watchdog
                self._watchdog = _Watchdog(self._from_watchdog)
                _watchdogs.append(self._watchdog)

    def _from_watchdog(self, signum: int) -> None:
        """[MT] The watchdog's thread: ``signum`` arrived."""
        if os.getpid() != self._pid:
            return
        handler = signal.getsignal(signum) if signum in _HELD else None
        if signum in ENDING and getattr(handler, "dlpt_handler", False):
            self._end(signum)
        elif self._held and signum in _HELD and getattr(handler, "dlpt_holds", False):
            self.received = signum
            self._start_grace()

    def _end(self, signum: int) -> None:
        """[MT] SIGTERM/SIGHUP while the program runs: the first thread to get here finishes and
        kills the process; any other (the main thread's handler) waits for that."""
        if not self._first.acquire(blocking=False):
            if self._finisher == threading.get_ident():
                return  # another signal while this thread finishes: it goes on, within the grace
            while True:  # the process dies from the finishing thread (or the grace timer's)
                time.sleep(3600)
        self._finisher = threading.get_ident()
        self._ending = True
        self.received = signum
        # (get_ident, not current_thread(): that would register the watchdog's bare thread)
        self._start_grace(wait=threading.get_ident() != threading.main_thread().ident)
        if self._finish is not None:
            try:
                self._finish()
            except BaseException as e:  # noqa: BLE001 - dlpt's failure must not keep the process alive
                self._say(f"could not finish after {_name(signum)}: {type(e).__name__}: {e}")
        die_by_signal(signum)

    def note(self, signum: int, _frame: FrameType | None) -> None:
        """A handler that only notes the signal (for the status). The CLI installs it with a
        direct ``signal.signal`` call the moment the program returns: a Python-level call first
        would give a pending Ctrl-C the chance to raise in dlpt's own code."""
        self.received = signum
        if self._watchdog is not None:
            self._start_grace(wait=False)

    def _hold(self, signum: int, _frame: FrameType | None) -> None:
        self.received = signum
        self._start_grace(wait=False)

    _hold.dlpt_holds = True  # type: ignore[attr-defined]
    note.dlpt_holds = True  # type: ignore[attr-defined]

    def _start_grace(self, wait: bool = True) -> None:
        """Start the grace timer, if not started. ``wait`` False (a signal handler on the main
        thread, which may hold the lock already): only if the lock is free now; the watchdog's
        thread starts it for the same signal anyway."""
        if not self._lock.acquire(blocking=wait):
            return
        try:
            if self._timer is None:
                self._timer = threading.Timer(self.grace, self._give_up)
                self._timer.daemon = True
                self._timer.start()
        finally:
            self._lock.release()

    def _give_up(self) -> None:
        """The grace timer's thread: dlpt is still finishing ``grace`` seconds after a signal.
        Say what is skipped and die of the signal (the lock is never released: no other thread
        must go on writing while the process ends)."""
        self._lock.acquire()
        if self._timer is None:  # cancelled meanwhile
            self._lock.release()
            return
        signum = self.received or signal.SIGINT
        remove_partial_files()
        skipped = ", ".join(self.remaining) or "the rest of dlpt's work"
        self._say(f"{_name(signum)}: ending now, after {self.grace:g} s; skipped: {skipped}")
        die_by_signal(signum)

    def _cancel_grace(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """SIGINT, SIGTERM and SIGHUP are held inside the block, for at most the grace."""
        self._held = True
        try:
            with self._handlers(self._hold):
                yield
        finally:
            self._held = False
            if not self._ending:
                self._cancel_grace()

    @contextlib.contextmanager
    def interruptible(self) -> Iterator[None]:
        """SIGINT, SIGTERM and SIGHUP are noted and raise :class:`Interrupted` inside the block
        (the grace still bounds the block's end)."""

        def interrupt(signum: int, _frame: FrameType | None) -> None:
            self.received = signum
            raise Interrupted(_name(signum))

        interrupt.dlpt_holds = True  # type: ignore[attr-defined]
        self._held = True
        try:
            with self._handlers(interrupt):
                yield
        finally:
            self._held = False
            if not self._ending:
                self._cancel_grace()

    def restore(self, sigint: Handler) -> None:
        """Give the process back the handlers it would have without dlpt: SIGINT's is
        ``sigint`` (the one the program left; Python's own when None), SIGTERM and SIGHUP get
        theirs back where dlpt's handler is still installed; the watchdog ends."""
        self._cancel_grace()
        if self._watchdog is not None:
            self._watchdog.close()
            with contextlib.suppress(ValueError):
                _watchdogs.remove(self._watchdog)
            self._watchdog = None
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
