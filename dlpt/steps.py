"""Training steps: detected from optimizer steps without code changes, or marked by ``prof.step()``.

``skip_first`` steps are left out (warm-up, compilation), then ``active`` steps are recorded (all
remaining ones when ``active`` is None). Reports divide totals by the number of recorded steps.
A manual ``prof.step()`` takes over from optimizer detection from its first call on, so a loop that
does both is not counted twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


class StepWindow:
    """Decides, at each step boundary, whether costs are being recorded.

    ``set_collecting`` is called with True/False exactly when the recording state changes.
    Not thread-safe by itself: boundaries arrive from the training loop's thread.
    """

    def __init__(self, skip_first: int, active: int | None, set_collecting: Callable[[bool], None]) -> None:
        self.skip_first = skip_first
        self.active = active
        self._set_collecting = set_collecting
        self.collecting = skip_first == 0
        self.source: str | None = None
        self.seen = 0
        self.profiled = 0
        self.step_wall_ns: list[int] = []
        now = time.perf_counter_ns()
        self._last_boundary = now
        self.window_start_ns: int | None = now if self.collecting else None
        self.window_end_ns: int | None = None

    def on_step(self, source: str) -> None:
        """A step just ended (``source``: "optimizer" or "manual")."""
        if source == "optimizer" and self.source == "manual":
            return
        if source == "manual" and self.source == "optimizer":
            # The loop marks steps itself: restart counting from its marks.
            self.seen = self.profiled = 0
            self.step_wall_ns.clear()
        self.source = source
        now = time.perf_counter_ns()
        self.seen += 1
        if self.collecting:
            self.profiled += 1
            self.step_wall_ns.append(now - self._last_boundary)
        self._last_boundary = now
        if not self.collecting and self.window_end_ns is None and self.seen >= self.skip_first:
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


def install_optimizer_hook(callback: Callable[[], None]) -> Any:
    """Calls ``callback`` after every ``torch.optim`` optimizer step; returns a removable handle."""
    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook

    def on_optimizer_step(*_args: Any, **_kw: Any) -> None:
        callback()

    # Under torch.compile(opt.step) Dynamo would otherwise trace into the hook (and warn about
    # our native calls); disabled, it is called as plain Python after the compiled step.
    return register_optimizer_step_post_hook(torch.compiler.disable(on_optimizer_step))
