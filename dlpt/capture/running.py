"""The one profile running in a process, held weakly, and the end of a running profile that
nobody can reach any more.

A profile started by hand and then lost (a notebook cell that started one, raised before its
``stop()`` and was run again: the name now holds a new profile) would block every later profile
with ProfilerBusyError for the rest of the process. So this registry holds the running profile
only weakly, and beside it what stopping its capture takes (its recorders and step
schedule, which hold the profile weakly too: :func:`weak_method`). A start that finds the
running profile gone (after a garbage collection: a profile may sit in a reference cycle) stops
that capture first, with a warning (its session is lost), then starts.

Thread contract: :data:`lock` guards the registry; :func:`abandon` runs with the GIL, under it.
"""

from __future__ import annotations

import gc
import logging
import threading
import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dlpt.capture import native
from dlpt.capture.recorder import Recorder, StopContext
from dlpt.capture.schedule import StepSchedule

__all__ = ["Running", "lock", "current", "record", "forget", "lost", "abandon", "weak_method"]

_log = logging.getLogger(__name__)


@dataclass
class Running:
    """The running profile (weakly) and what stopping its capture takes without it."""

    profile: weakref.ref[Any]
    recorders: list[Recorder]
    schedule: StepSchedule | None  # None while the profile starts
    gpu: bool


lock = threading.Lock()
_record: Running | None = None


def current() -> Any | None:
    """The running profile, if any (and still reachable)."""
    r = _record
    return r.profile() if r is not None else None


def record(r: Running | None) -> None:
    """Make ``r`` the running profile's record (None: none runs). Under :data:`lock`."""
    global _record
    _record = r


def forget() -> Any | None:
    """After fork(), in the child: no profile runs here; the parent's, if reachable, is returned
    (its hooks are the child's to remove). The lock is new (another thread may have held it)."""
    global _record, lock
    parent = current()
    _record, lock = None, threading.Lock()
    return parent


def lost(joinable: Callable[[Any], bool]) -> bool:
    """Whether a capture runs whose profile nobody can reach any more. A reachable running
    profile that ``joinable`` says can be joined needs no collection to find out."""
    r = _record
    if r is None:
        return False
    alive = r.profile()
    if alive is not None and joinable(alive):
        return False
    del alive
    gc.collect()  # a lost profile may sit in a reference cycle
    return _record is not None and _record.profile() is None


def abandon() -> None:
    """Stop the capture of the lost profile (under :data:`lock`): its hooks removed, the core
    and its recorders stopped, its session dropped (nobody can have it). Never raises."""
    r = _record
    if r is None:
        return
    record(None)
    schedule = r.schedule
    if schedule is None:  # it never finished starting: nothing of it runs
        return
    ctx = StopContext(schedule, r.gpu)
    steps: list[tuple[str, Callable[[], object]]] = [
        *((f"unhook {type(s).__name__}", s.unhook) for s in r.recorders),
        ("set_collecting", lambda: native.core().set_collecting(False)),
        ("close the schedule", schedule.close),
        *((f"stop {type(s).__name__}", lambda s=s: s.stop(ctx)) for s in r.recorders),
        ("stop the core", lambda: native.core().stop(last_counted=False)),
        *((f"end {type(s).__name__}", s.ended) for s in r.recorders),
    ]
    for what, step in steps:
        try:
            step()
        except Exception:  # noqa: BLE001 - the new profile must start anyway; logged
            _log.debug("abandoning a lost profile: %s failed", what, exc_info=True)
    warnings.warn(
        "dlpt: a profile started earlier was still running but nothing refers to it any more "
        "(its stop() never ran); it was stopped and its session dropped",
        RuntimeWarning,
        stacklevel=3,  # the start() of the program's that found it
    )


def weak_method(obj: object, name: str) -> Callable[..., Any]:
    """``obj.name(...)`` without holding ``obj``: the hooks a profile installs in torch and in the
    program call it through this, so that they never keep a lost profile reachable."""
    ref = weakref.ref(obj)

    def call(*args: Any) -> Any:
        target = ref()
        return getattr(target, name)(*args) if target is not None else None

    return call
