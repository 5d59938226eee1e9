"""When the warm-up of a loop is over: steps at the start that are slower than the steady state
(lazy CUDA and cuBLAS start-up, autotuning, torch.compile's compilations, caches filling, a
compiled run's steps falling from ~16 ms to ~10 ms over its first 70 iterations) are not counted
as steps.

Decided online, at the end of each step, from the wall times seen so far (a step's costs are
classified when it ends, :mod:`dlpt.capture.schedule`). The rule (docs/numbers.md, "The
warm-up", with its measured rates):

- the first step is never counted: there is nothing to compare it with, and when steps end at
  optimizer steps (or ``prof.step()``) its interval starts with the profile and holds the
  program's own set-up;
- every later step is counted *provisionally*: counted unless a fall is seen after it. At each
  step, the latest :data:`WINDOW` step times since the provisional start (at least
  :data:`MIN_WINDOW`) are tested for a fall that is both **real** (Mann-Kendall's trend test:
  the pairs of steps that got faster outnumber those that got slower beyond what chance gives at
  one-sided 5%, so one slow step or symmetric jitter does not make one) and **material** (the
  fall across the window, the Theil-Sen slope times its length, is at least :data:`MATERIAL` of
  the window's median: a fall that small would not change a per-step figure by more). On such a
  fall, every step so far is dropped (a *cut*: the native core moves what they counted outside
  the steps) and counting starts again after it. Where a busy host delays steps at random, the
  fall is also looked for in the fastest step of each block of :data:`BLOCK` steps (a host only
  makes steps slower, so each block's fastest follows the program's own trend). A fall back to
  a pace the run already held for BLOCK steps before the window is no warm-up: the host slowed
  the program for a while (:meth:`Warmup._back_to_a_held_pace`);
- the warm-up is *over* once :data:`STEADY` steps in a row passed without a cut and the trend of
  the latest :data:`LONG_WINDOW` does not fall by a material amount, real or not (a slow fall
  under noise may escape the test for a while; it does not end the warm-up). From then on no
  cut: untraced measurement windows, the timeline and PC sampling may start. At the latest it
  is over after :data:`MAX_WARMUP` steps, which the report then says;
- a run that ends before that keeps its provisional steps: it is counted from the step after
  the last cut (from the second step when no fall was ever seen), and the header says so. A cut
  is made at the boundary after the step that showed the fall (:mod:`dlpt.capture.schedule`), so
  a run whose last step showed one keeps the steps since the cut before it, with the caveat that
  they were still getting faster (:meth:`Warmup.keep_last_cut`): no report is left empty;
- a run that ends fewer than :data:`MIN_KEPT` steps after its last cut is counted from before
  the last *held stretch* (MIN_KEPT steps or more between two cuts, without a real fall of
  their own before the one that ended them) when that stretch is longer than everything after
  it (:meth:`Warmup.restores_last_cut`): a fall seen that late, after the run held its pace that
  long, cannot be confirmed (a busy host's quiet moment looks like one), and counting the few
  steps after it would leave the per-step figures, and the verdicts on them, resting on almost
  nothing. The header says so. The native core keeps what the cuts
  since that stretch began dropped apart until the run stops: a cut fewer than MIN_KEPT steps
  after the last one *extends* the drop (a fall is seen over a few steps, each one cut), any
  other starts a new one. A run that ends still falling has been cutting for longer than any
  stretch it held, and keeps its last cut.

Rising step times never cut: only a fall means the program is still getting faster. With
``--skip-first N`` the first N steps are the warm-up, whatever their times.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from dlpt.capture import native

__all__ = [
    "Warmup",
    "LONG_WINDOW",
    "STEADY",
    "EARLY",
    "MAX_WARMUP",
    "WINDOW",
    "MIN_WINDOW",
    "BLOCK",
    "MATERIAL",
    "MIN_KEPT",
    "theil_sen_slope",
    "falls",
    "FIRST",
    "PROVISIONAL",
    "CUT",
    "COUNTED",
]

#: A fall is looked for in the latest WINDOW step times since the provisional start, and in the
#: latest LONG_WINDOW (a slow fall under noise shows over more steps)...
WINDOW = 16
LONG_WINDOW = 32
#: ...and the warm-up ends after this many provisional steps without a cut (later than the
#: window: ending it late costs no counted step, the provisional ones count from their start).
STEADY = 32
#: The second step is dropped with the first when it took this much longer than the third
#: (allocator growth, autotuning of backward shapes, optimizer state: too few steps for a test)
#: and at least EARLY_NS longer (steps of tens of microseconds jitter by a quarter on their own).
EARLY = 0.25
EARLY_NS = 100_000
#: No test on fewer step times (Mann-Kendall cannot call 5 points a trend at 5%).
MIN_WINDOW = 6
#: Steps per block whose fastest is taken (the busy-host test, see the module docstring).
BLOCK = 3
#: A fall across the window smaller than this share of its median is not material.
MATERIAL = 0.05
#: One-sided 0.5% for Mann-Kendall's S (its normal approximation): the test runs at every step, and a
#: false cut throws steps away.
Z_ONE_SIDED = 2.58
#: The warm-up ends after at most this many steps.
MAX_WARMUP = 150
#: Wall times of the warm-up steps kept for the report.
KEPT = 20
#: A run that ends with fewer steps than this since its last cut may be counted from before its
#: last held stretch (at least this many steps between two cuts), and a cut fewer than this many
#: steps after the last one extends its drop (the module docstring). As many as dlpt diff needs
#: to judge a line on its steps (dlpt.analysis.diff_test.MIN_STEPS).
MIN_KEPT = 5

#: What :meth:`Warmup.step` says of the step that just ended.
FIRST = "first"  # the first step: outside the steps
PROVISIONAL = "provisional"  # counted, unless a later cut drops it
CUT = "cut"  # this step and every step before it: outside the steps
COUNTED = "counted"  # counted for good (the warm-up is over)


def theil_sen_slope(values: Sequence[float]) -> float:
    """The median of the slopes between every pair of points (x = 0, 1, ...): a trend that a
    few outliers do not move."""
    return _pairwise_trend(values)[0]


def _pairwise_trend(values: Sequence[float]) -> tuple[float, int]:
    """The Theil-Sen slope of ``values`` and Kendall's S (pairs that rose minus pairs that
    fell), from one pass over their pairs in the native core (csrc/trend.h): the tests run at
    every step end on the program's thread, where in Python they cost a 32-step window ~100 µs."""
    return native.core().pairwise_trend(values)


def _kendall_falls(n: int, s: int) -> bool:
    """Whether Kendall's S of ``n`` values says they fall beyond chance (Mann-Kendall's test,
    one-sided, :data:`Z_ONE_SIDED`): S at or below minus that many of its standard deviations
    under no trend."""
    return n >= 3 and s < 0 and -s >= Z_ONE_SIDED * math.sqrt(n * (n - 1) * (2 * n + 5) / 18)


def _falls_really(values: Sequence[float], median: float) -> bool:
    """Whether ``values`` fall by a material amount (the Theil-Sen slope across them, against
    :data:`MATERIAL` of ``median``) that is also real (:func:`_kendall_falls`)."""
    slope, s = _pairwise_trend(values)
    return -slope * (len(values) - 1) >= MATERIAL * median and _kendall_falls(len(values), s)


def falls(values: Sequence[float]) -> bool:
    """Whether step times ``values`` (oldest first) fall by a real and material amount (see the
    module docstring): in the times themselves or in their blocks' fastest (from the first
    block to the last)."""
    if len(values) < MIN_WINDOW:
        return False
    median = statistics.median(values)
    if median <= 0:
        return False
    if _falls_really(values, median):
        return True
    fastest = _fastest_of_blocks(values)
    return len(fastest) >= 4 and _falls_really(fastest, median)


def _fastest_of_blocks(values: Sequence[float]) -> list[float]:
    """The fastest step of each block of BLOCK (the latest steps in whole blocks)."""
    whole = values[len(values) % BLOCK :]
    return [min(whole[i : i + BLOCK]) for i in range(0, len(whole), BLOCK)]


def _trend_falls(values: Sequence[float]) -> bool:
    """Whether the trend of ``values``, or of their blocks' fastest, falls by a material amount
    across them (the estimate alone, real or not): the warm-up does not end on a window that
    still falls, however noisy (a busy host's delays hide a fall in the times, not in their
    blocks' fastest)."""
    median = statistics.median(values)
    if median <= 0:
        return False
    fastest = _fastest_of_blocks(values)
    return (
        -theil_sen_slope(values) * (len(values) - 1) >= MATERIAL * median
        or -theil_sen_slope(fastest) * (len(fastest) - 1) >= MATERIAL * median
    )


def _best_pace(values: Sequence[int]) -> float:
    """The fastest pace held for BLOCK steps in a row (their median: a host only delays steps,
    so the fastest such pace is the program's own)."""
    return min(statistics.median(values[i : i + BLOCK]) for i in range(len(values) - BLOCK + 1))


@dataclass(frozen=True)
class _Drop:
    """What the cuts since the last held stretch dropped: the state before the cut that ended
    the stretch (``steps``, ``last_cut``, walls ``kept``), the stretch's step times (``held``),
    the step of that cut (``at``), and the steps the cuts that extended it dropped (``after``,
    over ``cuts`` cuts in all)."""

    steps: int
    last_cut: int
    kept: int
    held: list[int]
    at: int
    after: list[int] = field(default_factory=list)
    cuts: int = 1

    def extended(self, steps: list[int]) -> _Drop:
        return replace(self, after=self.after + steps, cuts=self.cuts + 1)


class Warmup:
    """``skip_first``: N steps exactly, or None for automatic detection."""

    def __init__(self, skip_first: int | None) -> None:
        self.skip_first = skip_first
        self.over = skip_first == 0
        self.steps = 0  # steps outside the count so far: the first, and every step up to the last cut
        self.walls: list[int] = []  # their wall times (the first KEPT)
        self.reason = "--skip-first 0" if skip_first == 0 else ""
        self.settled: bool | None = None  # automatic detection: whether the steps settled
        self.cuts = 0  # falls seen (each dropped the steps before it)
        self.last_cut = 0  # the step of the last cut (0: none)
        self.seen = 0  # steps that ended
        self._since: list[int] = []  # the latest step times tested (at most LONG_WINDOW; see _cut)
        self._all: list[int] = []  # every step time since the second (at most MAX_WARMUP)
        self._provisional: list[int] = []  # every provisional step time, for the report's walls
        # What the last cut changed, for keep_last_cut: (steps, last_cut, walls kept, provisional,
        # the drop before it).
        self._before_cut: tuple[int, int, int, list[int], _Drop | None] | None = None
        self._fell_at_end = False  # the last step showed a fall that no later step could confirm
        self._drop: _Drop | None = None  # what the cuts since the last held stretch dropped
        self.extends = False  # the last cut extends the drop before it (the native core's cut)
        # The drop restored at the end (restore_last_cut): (the step of its first cut, steps after it).
        self._restored: tuple[int, int] | None = None

    @property
    def provisional(self) -> int:
        """Steps counted provisionally (since the last cut; 0 once the warm-up is over)."""
        return 0 if self.over else len(self._provisional)

    def step(self, wall_ns: int) -> str:
        """The step that just ended took ``wall_ns``: FIRST, PROVISIONAL, CUT or COUNTED (see the
        module's constants)."""
        if self.over:
            return COUNTED
        self.seen += 1
        if self.skip_first is not None:
            return self._skip_first(wall_ns)
        if self.seen == 1:
            self._keep(wall_ns)
            self.steps = 1
            return FIRST
        self._since.append(wall_ns)
        del self._since[:-LONG_WINDOW]
        self._provisional.append(wall_ns)
        self._all.append(wall_ns)
        if (
            self._second_step_slow()
            or self._falls_to_a_new_pace(WINDOW)
            or (len(self._since) > WINDOW and self._falls_to_a_new_pace(len(self._since)))
        ):
            return self._cut()
        if len(self._provisional) >= STEADY and not self._still_falling():
            self._end(settled=True)
            return COUNTED
        if self.seen >= MAX_WARMUP:
            # A full window without a fall is a steady state that the bound came before.
            self._end(settled=len(self._provisional) >= WINDOW)
            return COUNTED
        return PROVISIONAL

    def _still_falling(self) -> bool:
        """Whether the latest steps' trend still falls by a material amount (:func:`_trend_falls`,
        real or not) to a pace the run never held: the warm-up does not end there."""
        return _trend_falls(self._since) and not self._back_to_a_held_pace(len(self._since))

    def _falls_to_a_new_pace(self, window: int) -> bool:
        """Whether the latest ``window`` step times fall (:func:`falls`) to a pace faster than
        any the run held before them."""
        return falls(self._since[-window:]) and not self._back_to_a_held_pace(window)

    def _back_to_a_held_pace(self, window: int) -> bool:
        """Whether the latest steps run no faster (by MATERIAL) than a pace the run already held
        for BLOCK steps before the latest ``window``: the program got faster again after
        something slowed it for a while (a busy host's phase: lines.py's steps ran 4 ms, then
        9-13 ms, then 4-6 ms again, bench/verdicts.py's runs), not for the first time (a
        warm-up reaches a pace it never had)."""
        before, latest = self._all[:-window], self._all[-window:]
        if len(before) < BLOCK or len(latest) < BLOCK:
            return False
        return _best_pace(latest) >= (1 - MATERIAL) * _best_pace(before)

    def _second_step_slow(self) -> bool:
        """At the third step: whether the second took EARLY (and EARLY_NS) longer than it."""
        return self.seen == 3 and not self.cuts and self._since[0] > (1 + EARLY) * self._since[1] + EARLY_NS

    def _skip_first(self, wall_ns: int) -> str:
        self._keep(wall_ns)
        self.steps += 1
        if self.steps >= self.skip_first:  # type: ignore[operator]  # skip_first is set here
            # N steps exactly: over as soon as the last one ends, so that the next step is traced
            # and reported as counted from its start (the status line says "tracing").
            self.over = True
            self.reason = f"--skip-first {self.skip_first}"
        return FIRST

    def _cut(self) -> str:
        self._before_cut = (self.steps, self.last_cut, len(self.walls), list(self._provisional), self._drop)
        self.extends = self._drop is not None and len(self._provisional) < MIN_KEPT
        if self._drop is not None and self.extends:
            self._drop = self._drop.extended(self._provisional)
        else:
            self._drop = _Drop(self.steps, self.last_cut, len(self.walls), list(self._provisional), self.seen)
        for w in self._provisional:
            self._keep(w)
        self.steps = self.seen
        self.cuts += 1
        self.last_cut = self.seen
        # The latest steps stay in the window: a fall that goes on is cut again at the next step,
        # not MIN_WINDOW steps later.
        del self._since[: -(MIN_WINDOW - 1)]
        self._provisional.clear()
        if self.seen >= MAX_WARMUP:
            self._end(settled=False)
        return CUT

    def _keep(self, wall_ns: int) -> None:
        if len(self.walls) < KEPT:
            self.walls.append(wall_ns)

    def _end(self, settled: bool) -> None:
        self.over, self.settled = True, settled
        if settled:
            self.reason = (
                f"until the step time stopped falling (no real fall of {MATERIAL:.0%} or more in "
                f"{min(STEADY, len(self._provisional))} steps in a row); lazy start-up, compilation "
                "and autotuning run there"
            )
        else:
            self.reason = (
                f"the step time had not stopped falling after {MAX_WARMUP} steps: counted from "
                f"step {self.steps + 1}, the first counted steps may still be getting faster"
            )
        self._provisional.clear()

    def keep_last_cut(self) -> None:
        """The run ended at the step whose time showed the last fall, before the cut was made:
        the steps since the cut before stay counted, that step with them (it is the fastest
        yet, the fall's end), and finish() says they were still getting faster. (A cut at
        MAX_WARMUP also ended the warm-up: its reason is said again from the restored count.)"""
        if self._before_cut is None:
            return
        self.steps, self.last_cut, kept, provisional, self._drop = self._before_cut
        del self.walls[kept:]
        self._provisional = provisional
        self.cuts -= 1
        self._before_cut = None
        if self.over:
            self._end(settled=False)
        else:
            self._fell_at_end = True

    def restores_last_cut(self) -> bool:
        """At the run's end (counting still provisional, every cut made natively): whether the
        drop is to be counted again (the module docstring): fewer than MIN_KEPT steps since the
        last cut, and a held stretch of MIN_KEPT or more, longer than everything after it, that
        did not itself fall for real (:func:`falls`) before its last steps (where the fall that
        ended it shows): a fall cut now and then is a warm-up still under way."""
        d = self._drop
        if self.over or self.skip_first is not None or d is None:
            return False
        tail = len(self._provisional)
        if not tail < MIN_KEPT <= len(d.held) or len(d.held) <= len(d.after) + tail:
            return False
        return not falls(d.held[: -(MIN_WINDOW - 1)])  # the fall that cut it shows in its last steps

    def restore_last_cut(self) -> None:
        """The drop counts again (the native core was told first): from the step after the cut
        before the held stretch; finish() says why."""
        d = self._drop
        if d is None:
            return
        self._restored = (d.at, self.seen - d.at)
        self.steps, self.last_cut = d.steps, d.last_cut
        del self.walls[d.kept :]
        self._provisional = d.held + d.after + self._provisional
        self.cuts -= d.cuts
        self._drop = self._before_cut = None

    def finish(self, ended: str = "the run ended") -> None:
        """The counting ended (``ended`` says how: the run's end, or --active's M steps reached
        while they were still provisional): provisional steps stay counted; the reason says
        from where."""
        if self.over or self.skip_first is not None:
            return
        n = len(self._provisional)
        self.settled = False
        if self._restored is not None:
            fall, after = self._restored
            self.reason = (
                f"{ended} {after} step{'s' if after != 1 else ''} after a fall of the step time at step "
                f"{fall}, too few to count from: counted from step {self.steps + 1} anyway, and the "
                "steps before that fall may have been slower than the run's last ones"
            )
        elif self._fell_at_end:
            start = self.steps + 1
            self.reason = (
                f"the step time fell again at the run's last step (step {self.seen}): counted from "
                f"step {start} anyway, and these steps were still getting faster"
            )
        elif not self.cuts:
            self.reason = f"{ended} after {self.seen} steps, too few to tell a warm-up: counted from step 2"
        elif n:
            self.reason = (
                f"up to the last fall of the step time (step {self.last_cut}); {ended} {n} "
                f"step{'s' if n != 1 else ''} later, before they could be shown steady"
            )
        else:
            self.reason = f"the step time was still falling at the run's last step (step {self.seen})"
