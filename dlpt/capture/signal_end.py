"""The native end of the process after a signal (``csrc/ending/signal_end.h`` says how), for the
command line's signal handling (:mod:`dlpt.cli.signals`): a C handler in front of the
interpreter's that starts a grace and queues the signal, a native thread that ends the process
by the signal when the grace runs out, whatever holds the GIL, and the queue dlpt's watchdog
thread waits in. Here only because the native core is reached from :mod:`dlpt.capture` alone.

Without the native core (never in a run: a profile cannot start without it) every call does
nothing and :func:`watch` says False.

Thread contract: :func:`watch`, :func:`unwatch`, :func:`set_grace`, :func:`disarm`,
:func:`set_text`, :func:`set_partial`, :func:`open_queue` and :func:`close_queue` with the GIL,
on any thread (they order with ``signal.signal``); :func:`next_signal` releases the GIL while
it waits; :func:`arm` and :func:`armed` anywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

from dlpt.capture import native
from dlpt.errors import NativeUnavailableError

__all__ = [
    "watch",
    "quiet_setter",
    "unwatch",
    "watching",
    "set_grace",
    "arm",
    "disarm",
    "armed",
    "set_text",
    "set_partial",
    "open_queue",
    "close_queue",
    "next_signal",
]


def _core() -> ModuleType | None:
    try:
        return native.core()
    except NativeUnavailableError:
        return None


def watch(signum: int, ends: bool = True, take_default: bool = False) -> bool:
    """dlpt's C handler in front of the interpreter's for ``signum`` (installed by
    ``signal.signal``; none is put in front of SIG_IGN, nor of SIG_DFL unless
    ``take_default``: then it replaces it, and a catch only starts the grace and queues the
    signal); ``ends``: a catch starts the grace. Whether it is in front now."""
    C = _core()
    return bool(C.end_watch(signum, ends, take_default)) if C is not None else False


def quiet_setter() -> Callable[[Any, int, Any], tuple[Any, int]] | None:
    """The native ``(set_fn, signum, handler) -> (old, interrupts)``: ``set_fn(signum,
    handler)`` called again while it raises KeyboardInterrupt (a Ctrl-C pending when dlpt
    changes SIGINT's handler must not raise in dlpt's own code). A built-in: calling it checks
    for no signal before it runs (dlpt.cli.launch calls it the moment the program returns)."""
    C = _core()
    return C.end_set_handler if C is not None else None


def unwatch(signum: int) -> None:
    """The interpreter's handler alone again, if dlpt's is still in front of it."""
    if (C := _core()) is not None:
        C.end_unwatch(signum)


def watching(signum: int) -> bool:
    """Whether dlpt's C handler is in front for ``signum`` (any ``signal.signal`` call for it
    since :func:`watch` took it out)."""
    C = _core()
    return bool(C.end_watching(signum)) if C is not None else False


def set_grace(seconds: float) -> None:
    """How long a grace lasts from the next :func:`arm` on."""
    if (C := _core()) is not None:
        C.end_grace(seconds)


def arm(signum: int) -> None:
    """Start the grace now for ``signum``, unless one runs already: when it runs out, the
    process dies of the signal (after :func:`set_text`'s line and :func:`set_partial`'s files)."""
    if (C := _core()) is not None:
        C.end_arm(signum)


def disarm() -> None:
    """Cancel the grace: dlpt finished in time."""
    if (C := _core()) is not None:
        C.end_disarm()


def armed() -> int:
    """The signal the grace runs for, 0 when none runs."""
    C = _core()
    return int(C.end_armed()) if C is not None else 0


def set_text(prefix: str, tail: str) -> None:
    """The line said when the grace runs out: ``<prefix>: SIGTERM: <tail>``."""
    if (C := _core()) is not None:
        C.end_text(prefix, tail)


def set_partial(paths: Iterable[str]) -> None:
    """The temporary files removed when the grace runs out (the writes under way)."""
    if (C := _core()) is not None:
        C.end_partial(list(paths))


def open_queue() -> int:
    """A new queue of the signals dlpt's handler catches; its generation for :func:`next_signal`."""
    C = _core()
    return int(C.end_open_queue()) if C is not None else 0


def close_queue() -> None:
    """The queue's waiter gets 0."""
    if (C := _core()) is not None:
        C.end_close_queue()


def next_signal(generation: int, timeout_s: float) -> int:
    """The next signal caught (GIL released while waiting); 0 once the queue of ``generation``
    is closed or after ``timeout_s``."""
    C = _core()
    return int(C.end_next_signal(generation, timeout_s)) if C is not None else 0
