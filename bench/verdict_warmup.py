"""The warm-up rule (dlpt/capture/warmup.py) on step-time series whose truth is set by
construction: each series is a noise-free level per step (falling for a known number of steps,
then flat) times noise of a known kind. For each run: which steps the rule counted, how many of
them were still falling (level more than 2% above the final one), how many steady steps it threw
away, and how far the counted steps' mean level is from the steady one (the bias a per-step
figure would carry). bench/verdicts.py warmup runs every case over many seeds.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from verdict_rates import Rate

from dlpt.capture.schedule import StepSchedule
from dlpt.capture.warmup import COUNTED, FIRST

#: A level this much above the final one is still falling.
FALLING = 0.02


@dataclass(frozen=True)
class Series:
    """A case: ``level(i)`` (i = 1..steps, ms) and ``noise(rng, level)`` -> observed ms."""

    name: str
    steps: int
    level: Callable[[int], float]
    noise: Callable[[random.Random, float], float]


def jitter(share: float) -> Callable[[random.Random, float], float]:
    """Symmetric noise: uniform within +-share of the level."""
    return lambda rng, v: v * (1 + rng.uniform(-share, share))


def busy(delayed: float, up_to_ms: float, share: float = 0.03) -> Callable[[random.Random, float], float]:
    """A busy host: +-share jitter, and a share ``delayed`` of the steps delayed by up to ``up_to_ms``."""
    def f(rng: random.Random, v: float) -> float:
        x = v * (1 + rng.uniform(-share, share))
        return x + (rng.uniform(0, up_to_ms) if rng.random() < delayed else 0.0)
    return f


def falling(top: float, bottom: float, over: int, first: float = 0.0) -> Callable[[int], float]:
    """From ``top`` down to ``bottom`` linearly over ``over`` steps, flat after; step 1 is
    ``first`` ms when given (the set-up a first step holds)."""
    def f(i: int) -> float:
        if i == 1 and first:
            return first
        return bottom + (top - bottom) * max(0.0, 1 - (i - 1) / over)
    return f


def settling(top: float, bottom: float, over: int) -> Callable[[int], float]:
    """Falling geometrically (as caches fill, autotuning finishes): 95% of the way after ``over`` steps."""
    rate = math.log(20) / over
    return lambda i: bottom + (top - bottom) * math.exp(-rate * (i - 1)) if i <= over else bottom


def flat(v: float, first: float = 0.0, second: float = 0.0) -> Callable[[int], float]:
    return lambda i: first if i == 1 and first else second if i == 2 and second else v


def quiet_end(v: float, first: float, quiet: float, last: int, steps: int) -> Callable[[int], float]:
    """Flat at ``v``, but the host goes quiet for the ``last`` steps: they run at ``quiet`` (on a
    busy 2-core host the other processes' time is in every step; a moment without them looks like
    a fall the warm-up sees at the run's end: bench/verdicts.py's runs left 1 of 40 steps)."""
    return lambda i: first if i == 1 else quiet if i > steps - last else v


def step_down(top: float, v: float, over: int, to: float, at: int) -> Callable[[int], float]:
    """Falling from ``top`` to ``v`` over ``over`` steps, flat, then at ``to`` from step ``at`` on,
    before the warm-up could end: a program that got faster late and stays so (the truth that
    counting back from a late fall gets wrong)."""
    before = falling(top, v, over)
    return lambda i: to if i >= at else before(i)


CASES = [
    Series("flat, +-10% jitter, 60 steps (the README's example)", 60, flat(5.0, 40.0), jitter(0.10)),
    Series("flat, busy host (60% of steps +0-10 ms), 60 steps", 60, flat(7.0, 40.0), busy(0.6, 10.0)),
    Series("flat, +-50% jitter, 60 steps", 60, flat(7.0, 40.0), jitter(0.50)),
    Series("flat, 10 steps (step 2 1.5x)", 10, flat(5.0, 200.0, 7.5), jitter(0.05)),
    Series("flat, 10 steps, busy host", 10, flat(7.0, 200.0), busy(0.6, 10.0)),
    Series("flat, 5 steps", 5, flat(5.0, 200.0), jitter(0.05)),
    Series("flat, 20 steps, busy host", 20, flat(7.0, 40.0), busy(0.6, 10.0)),
    Series("settling: 48 steps falling 2x, then flat, 120 steps", 120, settling(20.0, 10.0, 48), jitter(0.03)),
    Series("settling on a busy host: 24 -> 5 ms over 48 steps, 60% of steps +0-20 ms, 90 steps", 90,
           settling(24.0, 5.0, 48), busy(0.6, 20.0)),
    Series("compiled: 16 -> 10 ms over 70 steps, +-3%, 200 steps", 200, falling(16.0, 10.0, 70, 2000.0), jitter(0.03)),
    Series("busy and falling: 20 -> 4 ms over 60 steps, 60% of steps +0-30 ms, 200 steps", 200,
           falling(20.0, 4.0, 60), busy(0.6, 30.0)),
    Series("still falling at the end: 12 -> 6 ms over 40 steps, 30 steps", 30, falling(12.0, 6.0, 40), jitter(0.05)),
    Series("never settles: -0.4 ms a step for 125 steps, 130 steps", 130, falling(60.0, 10.0, 125), jitter(0.03)),
    Series("flat, busy host (60% of steps +0-3 ms), quiet for its last 6 steps (7 -> 5 ms), 40 steps", 40,
           quiet_end(7.0, 40.0, 5.0, 6, 40), busy(0.6, 3.0)),
    Series("flat, busy host (60% of steps +0-3 ms), quiet for its last 12 steps (7 -> 5 ms), 60 steps", 60,
           quiet_end(7.0, 40.0, 5.0, 12, 60), busy(0.6, 3.0)),
    Series("a late fall the program keeps: 16 -> 10 ms over 20 steps, 9 ms from step 45 of 55, +-3%", 55,
           step_down(16.0, 10.0, 20, 9.0, 45), jitter(0.03)),
]


@dataclass
class Run:
    counted: list[int]  # step numbers counted
    falling_counted: int
    steady_thrown: int
    bias: float  # counted steps' mean level over the final level, minus 1
    over_at: int | None  # the step that ended the warm-up (None: the run ended first)
    settled: bool | None  # what the report is told (False: a caveat in the header)


class OldRule:
    """A warm-up module of an earlier build (its ``Warmup.step(wall) -> warm``: no provisional
    steps, no cuts) read from a file, for the table's "before" columns (``--old FILE``)."""

    def __init__(self, path: str) -> None:
        import importlib.util

        spec = importlib.util.spec_from_file_location("old_warmup", path)
        assert spec is not None and spec.loader is not None
        self.module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(self.module)

    def __call__(self) -> OldRule:
        self.w = self.module.Warmup(None)
        self.settled = None
        return self

    def step(self, wall: int) -> str:
        warm = self.w.step(wall)
        self.settled = self.w.settled
        return FIRST if warm else COUNTED

    def finish(self) -> None:
        pass


def simulate(case: Series, seed: int, rule: Callable[[], object] | None = None) -> Run:
    """One run of ``case``: through the capture's own step schedule (its warm-up, its cuts and
    the ending it gives a run), or through an earlier build's rule (``--old``)."""
    rng = random.Random(seed)
    walls = [round(case.noise(rng, case.level(i)) * 1e6) for i in range(1, case.steps + 1)]
    counted, over_at, settled = _old_rule(rule(), walls) if rule is not None else _schedule(walls)
    final = case.level(case.steps)
    steady = [i for i in range(2, case.steps + 1) if case.level(i) <= final * (1 + FALLING)]
    levels = [case.level(i) for i in counted]
    return Run(
        counted,
        sum(1 for i in counted if case.level(i) > final * (1 + FALLING)),
        len(set(steady) - set(counted)),
        statistics.fmean(levels) / final - 1 if levels else math.nan,
        over_at,
        settled,
    )


def _schedule(walls: list[int]) -> tuple[list[int], int | None, bool | None]:
    """(steps counted, the step that ended the warm-up, settled) as dlpt.capture.schedule
    classifies steps of these wall times: a step counts when its epoch ended counted and after
    the last cut, or the drop's start once restored (as the native core files it:
    tests/unit/test_schedule.py's Run)."""
    now = 0
    epochs: list[bool] = []
    cuts: list[int] = []
    drop = {"from": 0, "restored": False}  # the start of the kept-apart drop (csrc/cct/epochs.h)

    def cut(extend: bool) -> None:
        drop["from"] = drop["from"] if extend else (cuts[-1] if cuts else 0)
        cuts.append(len(epochs))

    s = StepSchedule(
        None,
        None,
        False,
        epochs.append,
        lambda on: None,
        cut=cut,
        restore=lambda: drop.update(restored=True),
        clock=lambda: now,
    )
    s.start()
    over_at = None
    for i, wall in enumerate(walls, start=1):
        now += wall
        s.on_step("optimizer")
        if over_at is None and s.warmup.over:
            over_at = i
    s.close()
    last = (drop["from"] if drop["restored"] else cuts[-1]) if cuts else 0
    return [e + 1 for e, c in enumerate(epochs) if c and e >= last], over_at, s.warmup.settled


def _old_rule(w: Any, walls: list[int]) -> tuple[list[int], int | None, bool | None]:
    """The same for an earlier build's warm-up module alone (no schedule: it had no cuts)."""
    counted: list[int] = []
    over_at = None
    for i, wall in enumerate(walls, start=1):
        if w.step(wall) != FIRST:
            over_at = i if over_at is None else over_at
            counted.append(i)
    w.finish()
    return counted, over_at, w.settled


def rates(case: Series, runs: list[Run]) -> list[Rate]:
    n = len(runs)
    unsettled = "still falling" in case.name or "never settles" in case.name
    if unsettled:  # the truth: the steps still fall when the run (or the bound) ends
        return [
            Rate(case.name, "the header says the steps had not settled",
                 sum(1 for r in runs if r.settled is False), n, (">=", 0.95)),
            Rate(case.name, "no step counted", sum(1 for r in runs if not r.counted), n),
        ]
    out = [Rate(case.name, "no step counted", sum(1 for r in runs if not r.counted), n, ("<=", 0.05))]
    if "quiet" in case.name:  # the program is flat: its last steps are the host's, not a new pace
        return [*out, Rate(case.name, ">= 20 steps counted", sum(1 for r in runs if len(r.counted) >= 20), n,
                           (">=", 0.95))]
    out.append(Rate(case.name, "counted steps' mean within 5% of the steady level",
                    sum(1 for r in runs if r.counted and abs(r.bias) <= 0.05), n,
                    (">=", 0.95) if "busy and falling" not in case.name and "keeps" not in case.name else None))
    if "README" in case.name:
        out.append(Rate(case.name, ">= 20 steps counted", sum(1 for r in runs if len(r.counted) >= 20), n,
                        (">=", 0.95)))
    if case.steps == 10:
        out.append(Rate(case.name, ">= 5 steps counted", sum(1 for r in runs if len(r.counted) >= 5), n,
                        (">=", 0.95)))
    if case.name.startswith("settling"):  # (issue 46's target, on the settling runs)
        out.append(Rate(case.name, "none of the first 30 steps counted",
                        sum(1 for r in runs if r.counted and min(r.counted) > 30), n, (">=", 0.95)))
    return out


def summary(case: Series, runs: list[Run]) -> str:
    """Medians of what the runs counted and threw away."""
    def med(xs: list[float]) -> str:
        return f"{statistics.median(xs):g}" if xs else "-"
    starts = [min(r.counted) for r in runs if r.counted]
    return (
        f"| {case.name} | {len(runs)} | {med([len(r.counted) for r in runs])} | {med(starts)} | "
        f"{med([r.falling_counted for r in runs])} (max {max(r.falling_counted for r in runs)}) | "
        f"{med([r.steady_thrown for r in runs])} | "
        f"{med([round(r.bias * 100, 1) for r in runs if not math.isnan(r.bias)])}% |"
    )


SUMMARY_HEADER = (
    "| case | runs | counted (median) | first counted step | falling steps counted | steady steps thrown away | "
    "bias of the counted mean |\n|---|---|---|---|---|---|---|"
)
