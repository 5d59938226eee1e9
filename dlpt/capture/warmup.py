"""When the warm-up of a loop is over: steps at the start that are far slower than the steady
state (lazy CUDA and cuBLAS start-up, autotuning, torch.compile's compilations, the first
step's share of the program's own set-up) are not counted as steps.

Decided online, at the end of each step, from the wall times seen so far (a step's costs are
classified when it ends, :mod:`dlpt.capture.schedule`): the warm-up is over at the first step
whose wall time is within :data:`SIMILAR` of the previous step's, or within :data:`JITTER_NS` of
it (two steps in a row at the same speed: the loop has settled; sub-millisecond steps jitter by
more than a quarter on a busy host), and at the latest after :data:`MAX_WARMUP` steps (a loop whose
steps never settle, e.g. variable-length batches, is counted from there). The first step is
never counted automatically: there is nothing to compare it with, and when steps end at
optimizer steps (or ``prof.step()``) its interval starts with the profile and holds the
program's own set-up. With ``--skip-first N`` the first N steps are the warm-up, whatever their
times.
"""

from __future__ import annotations

__all__ = ["Warmup", "SIMILAR", "MAX_WARMUP"]

#: Two steps are at the same speed when the slower takes at most this much longer.
SIMILAR = 0.25
#: ...or when they differ by at most this much (host jitter of very short steps).
JITTER_NS = 100_000
#: The warm-up ends after at most this many steps.
MAX_WARMUP = 10
#: Wall times of the warm-up steps kept for the report.
KEPT = 20


class Warmup:
    """``skip_first``: N steps exactly, or None for automatic detection."""

    def __init__(self, skip_first: int | None) -> None:
        self.skip_first = skip_first
        self.over = skip_first == 0
        self.steps = 0  # steps classified as warm-up
        self.walls: list[int] = []  # their wall times (the first KEPT)
        self.reason = "--skip-first 0" if skip_first == 0 else ""
        self._last = 0

    def step(self, wall_ns: int) -> bool:
        """The step that just ended took ``wall_ns``; returns whether it is warm-up (not counted).
        Once the warm-up is over, every later step is counted."""
        if self.over:
            return False
        previous, self._last = self._last, wall_ns
        n = self.steps + 1  # this step's number
        if self.skip_first is not None:
            done = False  # the check below ends the warm-up right after its last step
        elif n == 1:
            done = False  # nothing to compare it with
        elif n > MAX_WARMUP:
            done = True
            self.reason = f"steps did not settle within {MAX_WARMUP} steps; counted from step {n}"
        else:
            low, high = min(previous, wall_ns), max(previous, wall_ns)
            done = previous > 0 and (high <= (1 + SIMILAR) * low or high - low <= JITTER_NS)
            if done:
                self.reason = (
                    f"until two steps in a row took the same time (within {SIMILAR:.0%}); "
                    "lazy start-up, compilation and autotuning run there"
                )
        if done:
            self.over = True
            return False
        self.steps += 1
        if len(self.walls) < KEPT:
            self.walls.append(wall_ns)
        if self.skip_first is not None and self.steps >= self.skip_first:
            # N steps exactly: over as soon as the last one ends, so that the next step is traced
            # and reported as counted from its start (the status line says "tracing").
            self.over = True
            self.reason = f"--skip-first {self.skip_first}"
        return True
