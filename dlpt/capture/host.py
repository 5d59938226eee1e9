"""Host capture: the sampler (host time per line), the GPU idle blamed on host lines, and the
timeline window (``--sample-hz``, ``--timeline``; the native side is ``csrc/host/``).

The sampler is a native thread that reads every Python thread's frames at ``sample_hz`` without
the GIL (``csrc/host/sampler.h`` gives the design and its safety argument) and adds the time to
the session's calling-context tree; samples count only while the profile records (the steps
after ``skip_first``), as every other cost. The timeline keeps the events of ``timeline`` counted
steps: its window is armed when the warm-up is over (:meth:`HostCapture.arm_timeline`).

Thread contract: :class:`HostCapture`'s methods are called with the GIL held by the profile's
start and stop (:mod:`dlpt.capture.profiler`); the sampler never runs Python code. A process that
exits without stopping its profile stops the sampler from ``atexit`` first (a native thread must
not read the interpreter while it is torn down).
"""

from __future__ import annotations

import atexit
import functools
import threading
from collections.abc import Callable
from typing import Any

from dlpt.capture import native
from dlpt.errors import UsageError

__all__ = [
    "DEFAULT_SAMPLE_HZ",
    "MAX_SAMPLE_HZ",
    "MAX_TIMELINE_STEPS",
    "TIMELINE_EVENTS",
    "HostCapture",
    "check_options",
    "thread_names",
    "own_thread_target",
]

# On by default at 1 kHz. It was off for a while: a Hugging Face generate loop on an H100 crashed
# in 11 of 26 runs at 5 kHz, mostly from a wrapped bounds check in the frame reader
# (csrc/frames/remote_stack.cpp); fixed, 0 of 23 (issue 22, CHANGELOG "Fixed").
DEFAULT_SAMPLE_HZ = 1000
MAX_SAMPLE_HZ = 10_000  # a period of 100 µs: the cost of one tick is tens of µs on slow hosts
MAX_TIMELINE_STEPS = 1000
TIMELINE_EVENTS = 500_000  # the window's budget of events (about 24 MB while capturing)

_atexit_registered = False


def check_options(sample_hz: object, timeline: object) -> None:
    """UsageError unless ``sample_hz`` is an integer in [0, MAX_SAMPLE_HZ] and ``timeline`` one
    in [0, MAX_TIMELINE_STEPS]."""
    for name, value, top in (
        ("sample_hz", sample_hz, MAX_SAMPLE_HZ),
        ("timeline", timeline, MAX_TIMELINE_STEPS),
    ):
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= top:
            raise UsageError(f"{name} must be an integer from 0 to {top}, got {value!r}")


def own_thread_target(fn: Callable[[], None]) -> Callable[[], None]:
    """``fn`` as the target of a thread of dlpt's own (its signal watchdog, its status line),
    which the sampler never records as the program's: the thread is marked before ``fn``'s first
    frame exists and unmarked after its last is gone (a mark from inside ``fn`` leaves a moment
    in which a preempted thread is sampled). Call it on the thread that starts the other one: it
    may load the native core. Without the core, ``fn`` itself (nothing samples then)."""
    try:
        run_own_thread = native.core().run_own_thread
    except Exception:  # noqa: BLE001 - a core that fails to load fails again, and is said, where the profile starts
        return fn
    return functools.partial(run_own_thread, fn)


def _stop_at_exit() -> None:
    try:
        C = native.core()
        if C.host_running():
            C.host_stop()
    except Exception:  # noqa: BLE001 - at exit nothing may raise from here; the sampler just dies with the process
        pass


def thread_names() -> dict[int, str]:
    """Native thread id -> Python thread name, of the threads alive now."""
    out: dict[int, str] = {}
    for t in threading.enumerate():
        tid = getattr(t, "native_id", None)
        if isinstance(tid, int):
            out[tid] = t.name
    return out


class HostCapture:
    """The host side of one profile: started after the core's start, stopped before its stop
    (the sampler is joined before the tree is exported), its result taken after it (the GPU
    activity of the last steps arrives during the core's final flush)."""

    def __init__(self, sample_hz: int, timeline: int) -> None:
        check_options(sample_hz, timeline)
        self.sample_hz = sample_hz
        self.timeline = timeline
        self.info: dict[str, Any] = {}
        self._names: dict[int, str] = {}

    def start(self, timeline_armed: bool = True) -> None:
        """``timeline_armed``: whether the timeline window may open at the next recorded step
        boundary (False while the warm-up runs: :meth:`arm_timeline` when it is over)."""
        global _atexit_registered
        if not self.sample_hz and not self.timeline:
            self.info = {"sampling": False, "reason": None, "method": ""}
            return
        if not _atexit_registered:
            atexit.register(_stop_at_exit)
            _atexit_registered = True
        self._names = thread_names()
        self.info = dict(
            native.core().host_start(self.sample_hz, self.timeline, TIMELINE_EVENTS, timeline_armed)
        )

    def arm_timeline(self) -> None:
        """The warm-up is over: the timeline window opens at the next recorded step boundary, so
        it keeps counted steps, not the warm-up's (issue 33)."""
        if self.timeline:
            native.core().host_arm_timeline()

    def note_threads(self) -> None:
        """Remember the names of the threads alive now (a step boundary): threads that end before
        the profile stops keep their names in the timeline."""
        self._names.update(thread_names())

    def stop(self) -> None:
        if self.sample_hz or self.timeline:
            native.core().host_stop()
            self._names.update(thread_names())

    def result(self) -> dict[str, Any] | None:
        """What the native side recorded (dlpt._C.host_result), with the sampler's start info and
        the thread names; None when nothing was asked for."""
        if not self.sample_hz and not self.timeline:
            return None
        raw = dict(native.core().host_result())
        raw["start"] = self.info
        raw["thread_names"] = dict(self._names)
        return raw
