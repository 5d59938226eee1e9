"""How ``python -m dlpt`` ends on SIGINT, SIGTERM and SIGHUP: the profile saved within a bounded
grace, then death by the signal itself, as plain ``python`` dies of it.

While the program runs, Ctrl-C (SIGINT) is the program's business: Python raises
KeyboardInterrupt in it, as always, and the CLI saves and reports when it unwinds. SIGTERM (how
``timeout``, schedulers, torchrun and container runtimes end a job) and SIGHUP (the terminal
closed, the ssh connection dropped) would kill the process outright, so the CLI installs a
handler for both where they have their default action (an ignored one, under ``nohup``, stays
ignored): it stops, saves and reports the profile, then the process dies of the signal.

A Python-level handler runs only when the main thread returns to the interpreter; a program stuck
in native code (a hung rendezvous, a long C loop that holds the GIL) never does. So dlpt also
puts a C handler of its own in front of the interpreter's (:mod:`dlpt.capture.signal_end`): it
starts the grace at once, natively, and queues the signal for dlpt's watchdog thread
(:mod:`dlpt.cli.signal_watchdog`), which saves the profile while the main thread is stuck.
Neither needs the interpreter's wakeup fd (asyncio's loops set and drop it) nor the GIL to end
the process in time. Whichever sees the signal first (the watchdog, or the handler on the main
thread) finishes; the other waits.

Which signals are dlpt's: a program that sets a handler of its own (``signal.signal``,
asyncio's ``add_signal_handler``) takes the signal over, and dlpt's C handler steps aside (any
``signal.signal`` call replaces it); dlpt takes it back (within a quarter second, from the watchdog) when
the program gives back dlpt's handler or the default action. A signal the program handles never
becomes a death: arriving while dlpt finishes, it is held and given to the program's handler once
dlpt is done (a SIGTERM handler that sets a flag, a caught KeyboardInterrupt: the process exits
with the program's status).

Every finish after a signal is bounded: after :func:`dlpt.frontend.grace.grace_s` seconds (``--signal-grace``,
``DLPT_SIGNAL_GRACE``, default :data:`DEFAULT_GRACE_S`, near the 10-30 s that torchrun, Slurm,
docker and Kubernetes give before SIGKILL) the native grace says on stderr what dlpt skips,
removes the temporary file of the write in progress (the old file stays as it was) and the
process dies of the signal. While the report prints (:meth:`Signals.interruptible`) a signal
cuts it short.

Exit statuses are plain python's (:mod:`dlpt.cli.process_end`): a process that got SIGTERM or
SIGHUP dies of it (the parent sees -15 / -1, a shell 143 / 129), Ctrl-C that ended the program
ends the process by SIGINT (-2, 130), so that a shell loop stops on Ctrl-C. The program's
``finally`` blocks and atexit handlers do not run after SIGTERM/SIGHUP, as with plain ``python``.

Once dlpt has finished (:meth:`Signals.restore`), every handler is the one the program left, so
the interpreter's shutdown (which waits for the program's non-daemon threads) reacts to Ctrl-C
and SIGTERM exactly as plain ``python`` does.

A forked child restores the default SIGTERM and SIGHUP actions (the native handler and grace are
gone there too): it dies of them like any child of plain ``python`` and never reports its
parent's profile.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any, TypeVar

from dlpt.capture import signal_end
from dlpt.cli.process_end import Death, die_by_signal
from dlpt.cli.signal_watchdog import Watchdog
from dlpt.files.safe_files import on_partial_files
from dlpt.frontend.grace import DEFAULT_GRACE_S
from dlpt.model.safe_text import escape_control

__all__ = ["Signals", "Interrupted", "ENDING"]

Handler = Any  # what signal.signal accepts and returns: a callable, SIG_DFL, SIG_IGN or None

#: Signals that end the process at once unless handled: dlpt saves the profile first.
ENDING = (signal.SIGTERM, signal.SIGHUP)
_HELD = (signal.SIGINT, *ENDING)


class Interrupted(Exception):
    """Raised inside :meth:`Signals.interruptible` when SIGINT, SIGTERM or SIGHUP arrives."""


def _name(signum: int) -> str:
    with contextlib.suppress(ValueError):
        return signal.Signals(signum).name
    return f"signal {signum}"


def _dlpts(handler: Handler) -> bool:
    """Whether ``handler`` is one of dlpt's (a signal to it ends the process)."""
    return getattr(handler, "dlpt_ends", False) is True


def _programs(handler: Handler) -> bool:
    """Whether ``handler`` is the program's own (it decides what the signal does)."""
    return callable(handler) and not _dlpts(handler) and handler is not signal.default_int_handler


_F = TypeVar("_F", bound=Callable[..., None])


def _ends(handler: _F) -> _F:
    """Marks ``handler`` as dlpt's: a signal to it ends the process (:func:`_dlpts`)."""
    handler.dlpt_ends = True  # type: ignore[attr-defined]
    return handler


def _in_child() -> None:
    """After fork(), in the child: SIGTERM and SIGHUP kill it again, unless the program set a
    handler of its own (the native handler and grace are gone: csrc/ending)."""
    for sig in ENDING:
        with contextlib.suppress(ValueError, OSError):
            if _dlpts(signal.getsignal(sig)):
                signal.signal(sig, signal.SIG_DFL)


os.register_at_fork(after_in_child=_in_child)


class Signals:
    """Signal handling around one profiled run. Handlers can only be set on the main thread;
    from any other thread the methods that set them leave them alone.

    ``say`` prints a line on stderr (the CLI's voice) and ``prefix`` gives its prefix ("dlpt",
    "dlpt[rank 3]"); :attr:`remaining` is what is still to do while dlpt finishes ("the session
    (run.json)", "the report"), named when the grace runs out. ``grace`` is the longest dlpt
    finishes after a signal, in seconds."""

    def __init__(
        self,
        say: Callable[[str], None],
        grace: float = DEFAULT_GRACE_S,
        prefix: Callable[[], str] = lambda: "dlpt",
    ) -> None:
        self.received: int | None = None
        self.grace = grace
        self._remaining: list[str] = []
        self._say, self._prefix = say, prefix
        self._pid = os.getpid()
        self._taken: list[int] = []  # the ending signals dlpt took from their default action
        self._ending = False  # a SIGTERM/SIGHUP is being handled (by one thread only)
        self._first = threading.Lock()  # a test-and-set: acquired once, by the thread that finishes
        self._finisher: int | None = None
        self._finish: Callable[[], object] | None = None
        self._held = False  # inside deferred() or interruptible(): the main thread is finishing
        self._for_program: list[int] = []  # held for the program's own handlers (deliver_to_program)
        self._program_sigint = False  # the program's SIGINT handler at its end is its own
        self._watchdog: Watchdog | None = None
        signal_end.set_grace(grace)
        self._tell_grace()
        self._stop_partial = on_partial_files(signal_end.set_partial)

    # -- what the grace says ----------------------------------------------------------------------

    @property
    def remaining(self) -> list[str]:
        """What dlpt still has to do, named when the grace runs out (a copy: set it, or
        :meth:`step_done`)."""
        return list(self._remaining)

    @remaining.setter
    def remaining(self, steps: list[str]) -> None:
        self._remaining = list(steps)
        self._tell_grace()

    def step_done(self) -> None:
        """The first of :attr:`remaining` is done."""
        if self._remaining:
            self._remaining.pop(0)
        self._tell_grace()

    def _tell_grace(self) -> None:
        skipped = ", ".join(self._remaining) or "the rest of dlpt's work"
        tail = f"ending now, after {self.grace:g} s; skipped: {skipped}"
        signal_end.set_text(self._prefix(), escape_control(tail))

    # -- state ------------------------------------------------------------------------------------

    @property
    def status(self) -> Death | None:
        """The death by the signal that arrived while dlpt finished (:mod:`dlpt.cli.process_end`);
        None if none."""
        return None if self.received is None else Death(self.received)

    @property
    def ending(self) -> bool:
        """Whether a signal arrived that ends the process once dlpt is done (SIGTERM or SIGHUP
        while the program ran, any of SIGINT, SIGTERM and SIGHUP since): wait for no one."""
        return self._ending or self.received is not None

    # -- while the program runs -----------------------------------------------------------------

    def terminate_with(self, finish: Callable[[], object]) -> None:
        """While the program runs, SIGTERM and SIGHUP call ``finish`` (stop, save, report) on
        the watchdog's thread or the main thread, whichever sees the signal first, and the
        process dies of the signal, within the grace. An ignored one stays ignored."""
        self._finish = finish

        @_ends
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
                    signal.signal(sig, on_ending)
                    signal_end.watch(sig)
                    self._taken.append(sig)
        if self._taken and threading.current_thread() is threading.main_thread():
            self._watchdog = Watchdog(self._from_watchdog, self._watch_again)

    def _watch_again(self) -> None:
        """[watchdog thread] dlpt's C handler back in front of the signals dlpt took, where the
        program gave back dlpt's handler or the default action (asyncio closing its loop)."""
        if self._finisher is not None or os.getpid() != self._pid:
            return
        for sig in self._taken:
            handler = signal.getsignal(sig)
            if (_dlpts(handler) or handler == signal.SIG_DFL) and not signal_end.watching(sig):
                signal_end.watch(sig, take_default=True)

    def _from_watchdog(self, signum: int) -> None:
        """[watchdog thread] dlpt's C handler caught ``signum``: it was dlpt's to handle (any
        ``signal.signal`` for it since would have taken that handler out)."""
        if os.getpid() != self._pid:
            return
        if signum in ENDING and self._finisher is None and not self._held:
            self._end(signum)
        elif signum in _HELD:
            self._hold(signum, None)

    def _end(self, signum: int) -> None:
        """SIGTERM/SIGHUP while the program runs: the first thread to get here finishes and
        kills the process. Once some thread finishes, this one only holds the signal; the main
        thread, if another one finishes, waits for the process to end."""
        if self._finisher is None and self._first.acquire(blocking=False):
            self._finisher = threading.get_ident()
            self._ending = True
            self._hold(signum, None)
            if self._finish is not None:
                try:
                    self._finish()
                except BaseException as e:  # noqa: BLE001 - dlpt's failure must not keep the process alive
                    self._say(f"could not finish after {_name(signum)}: {type(e).__name__}: {e}")
            die_by_signal(signum)
        if self._finisher != threading.get_ident() and threading.get_ident() == threading.main_thread().ident:
            self._wait_for_the_end()
        self._hold(signum, None)

    @staticmethod
    def _wait_for_the_end() -> None:
        """The main thread, while another thread finishes: the process dies from that thread
        (or the native grace)."""
        while True:
            time.sleep(3600)

    # -- once the program ended -------------------------------------------------------------------

    def program_ended(self, sigint_at_end: Handler) -> None:
        """The program returned (main thread): from now on this thread finishes, unless another
        one already does (then this one waits for the end). ``sigint_at_end``: the SIGINT
        handler the program left; a Ctrl-C for a handler of its own is the program's."""
        if self._finisher is None and self._first.acquire(blocking=False):
            self._finisher = threading.get_ident()
        elif self._finisher != threading.get_ident():
            self._wait_for_the_end()
        self._program_sigint = _programs(sigint_at_end)
        if self._program_sigint and self.received == signal.SIGINT:
            self.received = None  # noted before this was known: the program's, not a death
            self._for_program.append(signal.SIGINT)
            signal_end.disarm()
        with contextlib.suppress(ValueError):  # the note handler, where it was installed
            if _dlpts(signal.getsignal(signal.SIGINT)) and not self._program_sigint:
                signal_end.watch(signal.SIGINT)

    @_ends
    def note(self, signum: int, _frame: FrameType | None) -> None:
        """A handler that only notes the signal (for the status). The CLI installs it with a
        direct call of the built-in the moment the program returns (dlpt.cli.launch)."""
        if signum == signal.SIGINT and self._program_sigint:
            self._for_program.append(signum)
            return
        self._hold(signum, None)

    @_ends
    def _hold(self, signum: int, _frame: FrameType | None) -> None:
        self.received = signum
        signal_end.arm(signum)

    def _for_programs_handler(self, signum: int, _frame: FrameType | None) -> None:
        self._for_program.append(signum)

    def _cancel_grace(self) -> None:
        """No signal arrived while dlpt finished this part: no grace runs on."""
        if self.received is None and not self._ending:
            signal_end.disarm()

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """SIGINT, SIGTERM and SIGHUP are held inside the block, for at most the grace (those
        the program handles are held for it)."""
        self._held = True
        try:
            with self._handlers(self._hold):
                yield
        finally:
            self._held = False
            self._cancel_grace()

    @contextlib.contextmanager
    def interruptible(self) -> Iterator[None]:
        """SIGINT, SIGTERM and SIGHUP are noted and raise :class:`Interrupted` inside the block
        (the grace still bounds the block's end)."""

        @_ends
        def interrupt(signum: int, _frame: FrameType | None) -> None:
            self._hold(signum, None)
            raise Interrupted(_name(signum))

        self._held = True
        try:
            with self._handlers(interrupt):
                yield
        finally:
            self._held = False
            self._cancel_grace()

    @contextlib.contextmanager
    def _handlers(self, handler: Callable[[int, FrameType | None], None]) -> Iterator[None]:
        saved: dict[int, Handler] = {}
        try:
            for sig in _HELD:
                now = signal.getsignal(sig)
                if now in (signal.SIG_IGN, None):
                    continue
                program = _programs(now) or (sig == signal.SIGINT and self._program_sigint)
                saved[sig] = self._set(sig, self._for_programs_handler if program else handler)
        except ValueError:  # not the main thread: leave the handlers alone
            pass
        try:
            yield
        finally:
            for signum, old in saved.items():
                self._set(signum, old if old is not None else signal.SIG_DFL)

    @staticmethod
    def _set(sig: int, handler: Handler) -> Handler:
        """``signal.signal`` (which takes dlpt's C handler out), then dlpt's C handler back in
        front where ``handler`` is dlpt's."""
        old = signal.signal(sig, handler)
        if _dlpts(handler):
            signal_end.watch(sig)
        else:
            signal_end.unwatch(sig)
        return old

    # -- the end ----------------------------------------------------------------------------------

    def restore(self, sigint: Handler) -> None:
        """Give the process back the handlers it would have without dlpt: SIGINT's is
        ``sigint`` (the one the program left; Python's own when None), SIGTERM and SIGHUP get
        theirs back where dlpt's handler is still installed; the watchdog and the grace end."""
        signal_end.disarm()
        self._stop_partial()
        if self._watchdog is not None:
            self._watchdog.close()
            self._watchdog = None
        for sig in _HELD:
            signal_end.unwatch(sig)
        with contextlib.suppress(ValueError):  # not the main thread
            signal.signal(signal.SIGINT, sigint if sigint is not None else signal.default_int_handler)
            for taken in self._taken:
                if getattr(signal.getsignal(taken), "dlpt_handler", False):
                    signal.signal(taken, signal.SIG_DFL)
        self._taken.clear()

    def deliver_to_program(self) -> BaseException | None:
        """The signals held for the program's own handlers while dlpt finished, given to them
        now (after :meth:`restore`), as if they came now; what a handler raised, if it did."""
        pending, self._for_program = list(dict.fromkeys(self._for_program)), []
        try:
            for sig in pending:
                signal.raise_signal(sig)
        except BaseException as e:  # noqa: BLE001 - the program's handler ends the process its way
            return e
        return None
