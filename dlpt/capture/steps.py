"""Steps: detected from optimizer steps without code changes, marked by ``prof.step()``, or the
calls of a function named with ``--step-on`` / ``step_on=`` (inference has no optimizer).

``skip_first`` steps are left out (warm-up, compilation), then ``active`` steps are recorded (all
remaining ones when ``active`` is None). Reports divide totals by the number of recorded steps.
A manual ``prof.step()`` takes over from optimizer detection from its first call on, so a loop that
does both is not counted twice. Calls of a ``step_on`` function are the only steps when one is
named: each outermost call is one step, from its entry to its return, so the recorded window runs
from the entry of the first recorded call to the return of the last one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from dlpt.capture.import_hooks import when_imported

CALL = "call"  # the source of steps that are calls of a step_on function


class StepWindow:
    """Decides, at each step boundary, whether costs are being recorded.

    ``set_collecting`` is called with True/False exactly when the recording state changes.
    Not thread-safe by itself: the caller serialises boundaries. ``only``: the one source that
    counts (CALL when a step_on function is named); others are ignored.
    """

    def __init__(
        self,
        skip_first: int,
        active: int | None,
        set_collecting: Callable[[bool], None],
        only: str | None = None,
    ) -> None:
        self.skip_first = skip_first
        self.active = active
        self._set_collecting = set_collecting
        self._only = only
        self.collecting = skip_first == 0
        self.source: str | None = None
        self.seen = 0
        self.profiled = 0
        self.step_wall_ns: list[int] = []
        self._last_boundary = 0
        # The last on_step: whether it counted a recorded step (None: the boundary was ignored),
        # and how often manual steps took over from optimizer steps (memory per step follows).
        self.last_counted: bool | None = None
        self.restarts = 0
        self.window_start_ns: int | None = None
        self.window_end_ns: int | None = None

    def start(self) -> None:
        """Start the clock: the profile's own set-up is done, the program's time begins."""
        now = time.perf_counter_ns()
        self._last_boundary = now
        self.window_start_ns = now if self.collecting else None

    def begin_call(self) -> None:
        """An outermost call of the step_on function begins: the window opens here once the
        calls to skip have returned (the time between two calls is not a step's)."""
        if not self.collecting and self.window_end_ns is None and self.seen >= self.skip_first:
            self._toggle(True, time.perf_counter_ns())

    def on_step(self, source: str, began_ns: int | None = None) -> None:
        """A step just ended (``source``: "optimizer", "manual" or CALL; ``began_ns``, for a call,
        when it began: its duration is its step's wall time)."""
        self.last_counted = None
        if self._only is not None and source != self._only:
            return
        if source == "optimizer" and self.source == "manual":
            return
        if source == "manual" and self.source == "optimizer":
            # The loop marks steps itself: restart counting from its marks.
            self.seen = self.profiled = 0
            self.step_wall_ns.clear()
            self.restarts += 1
        self.source = source
        self.last_counted = self.collecting
        now = time.perf_counter_ns()
        self.seen += 1
        if self.collecting:
            self.profiled += 1
            self.step_wall_ns.append(now - (self._last_boundary if began_ns is None else began_ns))
        self._last_boundary = now
        opens_here = source != CALL  # a call's window opens at the next call's entry
        if opens_here and not self.collecting and self.window_end_ns is None and self.seen >= self.skip_first:
            self._toggle(True, now)
        elif self.collecting and self.active is not None and self.profiled >= self.active:
            self._toggle(False, now)

    def _toggle(self, on: bool, now: int) -> None:
        self.collecting = on
        if on:
            self.window_start_ns = now
        else:
            self.window_end_ns = now
        self._set_collecting(on)

    def close(self) -> int:
        """End of the profile: returns the wall time of the recorded window in ns."""
        now = time.perf_counter_ns()
        if self.collecting:
            self.window_end_ns = now
        if self.window_start_ns is None:
            return 0
        return (self.window_end_ns or now) - self.window_start_ns

    def meta(self) -> dict[str, Any]:
        return {
            "profiled": self.profiled,
            "seen": self.seen,
            "skip_first": self.skip_first,
            "active": self.active,
            "source": self.source,
        }


class OptimizerHook:
    """Calls ``callback`` after every ``torch.optim`` optimizer step until :meth:`remove`.

    Under ``torch.compile(opt.step)`` Dynamo would trace into the hook (and warn about our native
    calls), so the hook is wrapped with ``torch._dynamo.disable`` and runs as plain Python after
    the compiled step. Dynamo is only imported by the program: the plain hook is swapped for the
    wrapped one when the program imports it (nothing can be compiled before that)."""

    def __init__(self, callback: Callable[[], None]) -> None:
        def on_optimizer_step(*_args: Any, **_kw: Any) -> None:
            callback()

        self._hook = on_optimizer_step
        self._handle: Any = self._register(on_optimizer_step)
        self._cancel = when_imported("torch._dynamo", self._disable_for_dynamo)

    @staticmethod
    def _register(hook: Callable[..., None]) -> Any:
        from torch.optim.optimizer import register_optimizer_step_post_hook

        return register_optimizer_step_post_hook(hook)

    def _disable_for_dynamo(self, dynamo: Any) -> None:
        if self._handle is None:
            return
        self._handle.remove()
        self._handle = self._register(dynamo.disable(self._hook))

    def remove(self) -> None:
        self._cancel()
        if self._handle is not None:
            self._handle.remove()
            self._handle = None
