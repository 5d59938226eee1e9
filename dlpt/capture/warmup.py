"""When the warm-up of a loop is over: steps at the start that are slower than the steady state
(lazy CUDA and cuBLAS start-up, autotuning, torch.compile's compilations, caches filling, a
compiled run's steps falling from ~16 ms to ~10 ms over its first 70 iterations) are not counted
as steps.

Decided online, at the end of each step, from the wall times seen so far (a step's costs are
classified when it ends, :mod:`dlpt.capture.schedule`). The rule ("a window of steps whose time
no longer falls", docs/numbers.md):

- the first step is never counted automatically: there is nothing to compare it with, and when
  steps end at optimizer steps (or ``prof.step()``) its interval starts with the profile and
  holds the program's own set-up; it is left out of every window below;
- at each later step, the last :data:`WINDOW` step times (at least :data:`MIN_WINDOW` of them)
  are *steady* when two trends both fall no faster than :data:`FALL_PER_STEP` of their median
  per step (or :data:`FALL_FLOOR_NS`, for very short steps): the Theil-Sen slope (the median of
  the slopes between every pair of points) of the step times, which one slow step does not move
  and which sees a fall under symmetric jitter; and that of their minima in blocks of
  :data:`BLOCK` steps, which sees a fall under a busy host (it only ever makes steps slower, so
  each block's fastest step follows the program's own trend however many steps it delayed);
- the warm-up is over after :data:`STEADY_CHECKS` steady windows in a row (one noisy window does
  not end it), and at the latest after :data:`MAX_WARMUP` steps: a loop whose steps never settle
  (variable-length batches, a run still compiling) is counted from there, and the report says so.

Rising step times end the warm-up like flat ones: only a fall means the program is still
getting faster. With ``--skip-first N`` the first N steps are the warm-up, whatever their times.
"""

from __future__ import annotations

import statistics

__all__ = ["Warmup", "MAX_WARMUP", "WINDOW", "BLOCK", "MIN_WINDOW", "FALL_PER_STEP", "theil_sen_slope"]

#: Step times whose trend is tested (the latest ones, the first step excluded).
WINDOW = 16
#: Steps per block whose minimum is taken (see the module docstring).
BLOCK = 4
#: No test before this many step times (fewer cannot tell a fall from noise).
MIN_WINDOW = 12
#: A window falls when its step times fall by more than this share of its median per step...
FALL_PER_STEP = 0.002
#: ...and by more than this much per step (host jitter of very short steps).
FALL_FLOOR_NS = 2_000
#: Steady windows in a row that end the warm-up.
STEADY_CHECKS = 3
#: The warm-up ends after at most this many steps.
MAX_WARMUP = 100
#: Wall times of the warm-up steps kept for the report.
KEPT = 20


def theil_sen_slope(values: list[int] | list[float]) -> float:
    """The median of the slopes between every pair of points (x = 0, 1, ...): a trend that a
    few outliers do not move."""
    n = len(values)
    slopes = [(values[j] - values[i]) / (j - i) for i in range(n) for j in range(i + 1, n)]
    return float(statistics.median(slopes)) if slopes else 0.0


class Warmup:
    """``skip_first``: N steps exactly, or None for automatic detection."""

    def __init__(self, skip_first: int | None) -> None:
        self.skip_first = skip_first
        self.over = skip_first == 0
        self.steps = 0  # steps classified as warm-up
        self.walls: list[int] = []  # their wall times (the first KEPT)
        self.reason = "--skip-first 0" if skip_first == 0 else ""
        self.settled: bool | None = None  # automatic detection: whether the steps settled
        self._recent: list[int] = []  # the latest WINDOW step times, the first step left out
        self._steady = 0  # steady windows in a row

    def _is_steady(self) -> bool:
        xs = self._recent
        if len(xs) < MIN_WINDOW:
            return False
        median = statistics.median(xs)
        allowed = max(FALL_PER_STEP * median, FALL_FLOOR_NS)
        if theil_sen_slope(xs) < -allowed:
            return False
        whole = xs[len(xs) % BLOCK :]  # whole blocks, the latest steps kept
        minima = [min(whole[i : i + BLOCK]) for i in range(0, len(whole), BLOCK)]
        return theil_sen_slope(minima) / BLOCK >= -allowed

    def step(self, wall_ns: int) -> bool:
        """The step that just ended took ``wall_ns``; returns whether it is warm-up (not counted).
        Once the warm-up is over, every later step is counted."""
        if self.over:
            return False
        n = self.steps + 1  # this step's number
        done = False
        if self.skip_first is None and n > 1:
            self._recent.append(wall_ns)
            del self._recent[:-WINDOW]
            self._steady = self._steady + 1 if self._is_steady() else 0
            if self._steady >= STEADY_CHECKS:
                done, self.settled = True, True
                self.reason = (
                    f"until the step time stopped falling (the trend of the last {len(self._recent)} "
                    f"steps and of their minima within {FALL_PER_STEP:.1%} per step, {STEADY_CHECKS} times "
                    "in a row); "
                    "lazy start-up, compilation and autotuning run there"
                )
            elif n > MAX_WARMUP:
                done, self.settled = True, False
                self.reason = (
                    f"the step time had not stopped falling after {MAX_WARMUP} steps: counted from "
                    f"step {n}, the first counted steps may still be getting faster"
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
