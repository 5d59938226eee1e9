"""dlpt's watchdog thread: sees SIGTERM and SIGHUP while the main thread is stuck in the program.

A Python handler runs only when the main thread comes back to the interpreter. The signals
dlpt's C handler catches (:mod:`dlpt.capture.signal_end`) are also queued natively; this thread
waits for them with the GIL released and calls ``on_signal`` with it, which saves the profile
while the main thread waits in native code. It needs no wakeup fd (the program's asyncio keeps
its own) and no GIL to be woken; when the main thread holds the GIL for good, the native grace
ends the process anyway.

Four times a second, while no signal comes, it calls ``on_idle`` (dlpt puts its C handler back in
front where a ``signal.signal`` of the program took it away and gave dlpt's handler back).

Thread contract: started and closed with the GIL held; ``on_signal`` and ``on_idle`` run on this
thread with the GIL. A bare thread, not a ``threading.Thread``: the program's
``threading.enumerate()`` and ``active_count()`` stay what they are without dlpt; the host
sampler leaves it out (it is dlpt's own). Every async signal is blocked on it, so the kernel
gives process-directed signals to the program's threads.
"""

from __future__ import annotations

import _thread
import contextlib
import logging
import signal
from collections.abc import Callable

from dlpt.capture import signal_end
from dlpt.capture.host import own_thread_target

__all__ = ["Watchdog"]

_log = logging.getLogger(__name__)

IDLE_S = 0.25  # how often on_idle runs while nothing comes (a GIL acquisition each: negligible)
# Faults stay unblocked: a thread that faults with them blocked is killed without a handler.
_FAULTS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGABRT, signal.SIGTRAP}


class Watchdog:
    """Waits in the native queue of caught signals and calls ``on_signal(signum)`` for each."""

    def __init__(self, on_signal: Callable[[int], None], on_idle: Callable[[], None]) -> None:
        self._on_signal, self._on_idle = on_signal, on_idle
        self._closed = False
        self._generation = signal_end.open_queue()
        self._done = _thread.allocate_lock()
        self._done.acquire()
        if self._generation:
            _thread.start_new_thread(own_thread_target(self._loop), ())
        else:  # no native core: no queue to wait in
            self._done.release()

    def _loop(self) -> None:
        try:
            with contextlib.suppress(ValueError, OSError):
                signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals() - _FAULTS)
            while not self._closed:
                signum = signal_end.next_signal(self._generation, IDLE_S)
                if self._closed:
                    return
                try:
                    self._on_signal(signum) if signum else self._on_idle()
                except Exception:  # noqa: BLE001 - the watchdog must outlive a failure; logged
                    _log.debug("dlpt's signal watchdog: a callback failed", exc_info=True)
        finally:
            self._done.release()

    def close(self) -> None:
        """End the thread (it leaves its wait at once) and wait a moment for it."""
        if self._closed:
            return
        self._closed = True
        signal_end.close_queue()
        self._done.acquire(timeout=1.0)

    def forget_in_child(self) -> None:
        """After fork(), in the child: the thread is not there (the native queue was reset)."""
        self._closed = True
