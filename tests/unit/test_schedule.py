"""The step schedule (dlpt.capture.schedule): which steps are warm-up, counted or untraced, when
tracing switches, which step walls are measured, and what is outside steps; on a fake clock and
recorded native calls, so every decision is checked exactly."""

from __future__ import annotations

import random
import statistics
from typing import Any

import pytest

from dlpt.capture.schedule import CALL, EVERY, FIRST_WINDOW, WINDOW, StepSchedule
from dlpt.capture.step_times import SAMPLE, SAVED, StepTimes
from dlpt.capture.warmup import MAX_WARMUP, MIN_KEPT, STEADY, Warmup, theil_sen_slope

MS = 1_000_000


class Run:
    """A schedule on a fake clock; ``epochs`` records end_epoch's classifications, ``cuts`` how
    many epochs had ended at each cut, ``restored`` whether the last cut was undone,
    ``switches`` set_tracing's calls."""

    def __init__(self, **kw: Any) -> None:
        self.now = 0
        self.epochs: list[bool] = []
        self.cuts: list[int] = []
        self.restored = False
        self.keep_from = 0
        self.switches: list[bool] = []
        kw.setdefault("skip_first", None)
        kw.setdefault("active", None)
        kw.setdefault("calibrate", True)
        self.s = StepSchedule(
            end_epoch=self.epochs.append,
            set_tracing=self.switches.append,
            cut=self._cut,
            restore=self._restore,
            clock=lambda: self.now,
            **kw,
        )
        self.s.start()

    def _cut(self, extend: bool) -> None:
        # The start of the drop (csrc/cct/epochs.h's keep_from): kept by a cut that extends it.
        self.keep_from = self.keep_from if extend else (self.cuts[-1] if self.cuts else 0)
        self.cuts.append(len(self.epochs))

    def _restore(self) -> None:
        assert self.cuts and not self.restored  # the schedule restores a cut it made, once
        self.restored = True

    @property
    def classes(self) -> list[bool]:
        """Each epoch's final class, as the native core files it: counted when it ended, and not
        before the last cut, or before the start of the drop once it was restored
        (csrc/cct/epochs.h)."""
        last = (self.keep_from if self.restored else self.cuts[-1]) if self.cuts else 0
        return [c and i >= last for i, c in enumerate(self.epochs)]

    def step(self, ns: int, source: str = "optimizer") -> None:
        self.now += ns
        self.s.on_step(source)

    def call(self, ns: int, gap: int = 0) -> None:
        self.now += gap
        self.s.begin_call()
        began = self.now
        self.now += ns
        self.s.on_step(CALL, began)


def test_warm_up_ends_once_the_step_time_stops_falling() -> None:
    r = Run(calibrate=False)
    walls = [8000 * MS, 50 * MS, 16 * MS] + [15 * MS] * 40
    for ns in walls:
        r.step(ns)
    # Step 2 took over 25% longer than step 3: both dropped with the first (a cut at step 3);
    # counted from step 4, the warm-up over after STEADY steps without a fall.
    assert r.cuts == [3] and r.classes == [False] * 3 + [True] * (len(walls) - 3)
    assert r.s.warmup.over and r.s.warmup.settled is True
    assert r.s.warmup.steps == 3 and r.s.warmup.walls[:3] == [8000 * MS, 50 * MS, 16 * MS]
    assert r.s.counted == len(walls) - 3 and r.s.traced.n == len(walls) - 3  # the dropped are out
    meta = r.s.meta()
    assert (
        meta["warmup"]["auto"] is True and meta["warmup"]["settled"] is True and meta["warmup"]["cuts"] == 1
    )
    assert meta["warmup"]["steps"] == 3 and "stopped falling" in meta["warmup"]["reason"]


def compiled_like(seed: int, n: int = 200) -> list[int]:
    """A compiled run's step times: the first step compiles (3 s), then steps fall from ~16 ms to
    ~10 ms over ~70 iterations (Inductor's autotuning and caches, as nanoGPT --compile=True on an
    H100 did), then stay at 10 ms; each step +-3% noise (seeded)."""
    rng = random.Random(seed)
    out = [3000 * MS]
    for i in range(1, n):
        base = 16.0 - 6.0 * min(i, 70) / 70
        out.append(round(base * MS * (1 + rng.gauss(0, 0.03))))
    return out


@pytest.mark.parametrize("seed", range(8))
def test_a_compiled_run_whose_steps_fall_for_70_iterations_is_not_counted_from_step_3(seed: int) -> None:
    r = Run()
    walls = compiled_like(seed)
    for ns in walls:
        r.step(ns)
    counted = [ns for ns, c in zip(walls, r.classes, strict=True) if c]
    assert r.s.warmup.settled is True
    # Counting starts once the fall is over (its last steps at ~10.1 ms), never at step 3.
    assert 55 <= r.classes.index(True) + 1 <= MAX_WARMUP
    # What is counted is the steady state: its median within 2% of 10 ms.
    assert abs(statistics.median(counted) - 10 * MS) < 0.02 * 10 * MS


def test_the_first_step_is_never_counted_automatically_and_skip_first_is_exact() -> None:
    even = Run()
    for _ in range(20):
        even.step(10 * MS)
    # Flat from the start: every step but the first, provisionally (the warm-up is not over yet).
    assert even.classes == [False] + [True] * 19 and not even.cuts and not even.s.warmup.over
    assert even.s.counted == 19
    exact = Run(skip_first=2)
    for ns in (9000 * MS, 10 * MS, 10 * MS, 500 * MS):
        exact.step(ns)
    assert exact.epochs == [False, False, True, True]  # whatever their times
    zero = Run(skip_first=0)
    zero.step(9000 * MS)
    assert zero.epochs == [True]


def test_noisy_steps_without_a_trend_settle_but_rising_ones_do_too() -> None:
    noisy, rising = Run(calibrate=False), Run(calibrate=False)
    for i in range(40):
        noisy.step((10 + 10 * (i % 2)) * MS)  # 10, 20, 10, 20...: noisy, not falling
        rising.step((10 + i) * MS)  # getting slower: nothing to wait for
    assert not rising.cuts and rising.s.warmup.settled is True and rising.classes == [False] + [True] * 39
    # 20 ms then 10 ms: the second step took twice the third, dropped with the first; no other cut.
    assert noisy.cuts == [3] and noisy.s.warmup.settled is True and noisy.classes == [False] * 3 + [True] * 37


def test_steps_that_never_settle_are_counted_after_the_longest_warm_up() -> None:
    r = Run()
    for i in range(MAX_WARMUP + 3):
        r.step((200 - i) * MS)  # falling by 0.5-1% a step, forever
    # Cut at every step while the fall goes on, until the bound: counted from there.
    assert r.cuts[-1] == MAX_WARMUP and r.classes == [False] * MAX_WARMUP + [True] * 3
    assert r.s.warmup.settled is False and r.s.meta()["warmup"]["settled"] is False
    assert "had not stopped falling" in r.s.warmup.reason


@pytest.mark.parametrize("steps", [5, 10, 20])
def test_a_short_run_that_ends_in_its_warm_up_is_counted_from_its_second_step(steps: int) -> None:
    r = Run()
    rng = random.Random(steps)
    for i in range(steps):
        r.step(round((900 if i == 0 else 10 * (1 + rng.uniform(-0.1, 0.1))) * MS))
    r.s.close()
    meta = r.s.meta()
    assert meta["profiled"] == steps - 1 and r.classes == [False] + [True] * (steps - 1)
    assert meta["warmup"]["settled"] is False and meta["warmup"]["provisional"] == steps - 1
    assert "too few to tell a warm-up: counted from step 2" in meta["warmup"]["reason"]


def test_a_run_still_falling_at_its_end_counts_its_last_step_and_one_that_flattened_from_its_last_fall() -> (
    None
):
    falling, flattened = Run(), Run()
    for i in range(30):
        falling.step((40 - i) * MS)  # 2.5-3% a step until the end
        flattened.step(max(20, 40 - i) * MS)  # flat from step 21
    for r in (falling, flattened):
        r.s.close()
    # Each step's fall cuts the steps before it at the next boundary: the last one, the fastest,
    # stays counted (issue 46: no report left empty), and the header says they were still falling.
    assert falling.s.counted == 1 and "fell again at the run's last step" in falling.s.warmup.reason
    assert falling.classes == [False] * 29 + [True]
    last = flattened.cuts[-1]
    assert 21 <= last < 30 and flattened.classes == [False] * last + [True] * (30 - last)
    assert "before they could be shown steady" in flattened.s.warmup.reason


def test_a_fall_seen_at_the_last_step_keeps_the_steps_since_the_cut_before() -> None:
    # As on the quiet 2-core machine: a 40-step run settled after its start-up, then its step time
    # fell once more at its very last step; cutting there counted none of its 40 steps.
    r = Run()
    for i in range(12):
        r.step(max(20, 32 - 2 * i) * MS)  # start-up: falls to 20 ms
    for _ in range(20):
        r.step(20 * MS)
    cuts_before, counted_before = r.s.warmup.cuts, r.s.counted
    assert counted_before >= 15
    ms = 20.0
    while r.s.warmup.cuts == cuts_before:  # falling again until the warm-up sees it
        ms *= 0.97
        r.step(int(ms * MS))
    r.s.close()
    assert r.s.counted == counted_before + r.s.seen - 32, (r.s.counted, r.s.seen)
    assert "fell again at the run's last step" in r.s.warmup.reason
    assert r.s.meta()["warmup"]["steps"] == r.s.seen - r.s.counted


def late_fall(after: int) -> Run:
    """A 2-core run as bench/verdicts.py saw it: start-up, then 20 ms steps with jitter for 20
    steps, then a fall the warm-up cuts at, then ``after`` steps at the new pace, then the end."""
    r = Run()
    rng = random.Random(7)
    for i in range(6):
        r.step((30 - 2 * i) * MS)  # start-up: cut while it falls
    for _ in range(20):
        r.step(int(rng.uniform(19.0, 21.0) * MS))
    cuts_before = r.s.warmup.cuts
    ms = 20.0
    while r.s.warmup.cuts == cuts_before:  # falling until the warm-up sees it
        assert not r.s.warmup.over
        ms *= 0.97
        r.step(int(ms * MS))
    for _ in range(after):
        r.step(int(ms * MS))
    return r


def test_a_fall_that_leaves_too_few_steps_at_the_end_is_counted_from_before_the_held_stretch() -> None:
    # As a busy 2-core host gave it (a 40-step run left 1 counted step, its diff "can't tell"):
    # a fall seen at the end, after 20 steps held at one pace, cannot be confirmed. It is cut at
    # two steps in a row; the second cut extends the first one's drop.
    for after in (1, 2, 3):
        r = late_fall(after)
        r.s.close()
        assert r.restored, after
        first = r.keep_from  # counted from the cut that ended the start-up
        assert first <= 9 and r.cuts[-1] > 30
        assert r.classes == [False] * first + [True] * (len(r.epochs) - first)
        assert r.s.counted == sum(r.classes) >= 20 + after
        assert r.s.traced.n == r.s.counted and r.s.counted_ns == sum(r.s.traced.first)
        meta = r.s.meta()["warmup"]
        assert meta["steps"] == first and meta["provisional"] == r.s.counted
        assert (
            "too few to count from" in meta["reason"] and f"counted from step {first + 1}" in meta["reason"]
        )


def test_a_fall_that_leaves_enough_steps_stands() -> None:
    r = late_fall(after=MIN_KEPT + 2)
    r.s.close()
    assert not r.restored and r.s.counted == sum(r.classes) == len(r.epochs) - r.cuts[-1] >= MIN_KEPT
    assert "too few" not in r.s.warmup.reason


def test_a_run_still_falling_at_its_end_keeps_its_last_cut() -> None:
    # A fall that goes on cuts at (nearly) every step: the last cut drops too few to restore.
    r = Run()
    for i in range(30):
        r.step(int(12 * MS * 0.98**i))
    r.s.close()
    assert r.cuts and not r.restored
    assert r.s.counted == sum(r.classes) < MIN_KEPT


def test_theil_sen_slope_ignores_an_outlier() -> None:
    assert theil_sen_slope([10, 11, 12, 13, 14]) == 1.0
    assert theil_sen_slope([10, 10, 500, 10, 10]) == 0.0
    assert theil_sen_slope([5]) == 0.0


def test_an_untraced_window_measures_the_programs_own_step_time() -> None:
    r = Run(skip_first=1)
    r.step(100 * MS)  # warm-up
    for _ in range(FIRST_WINDOW):
        r.step(30 * MS)  # traced: dlpt's cost included
    assert r.switches == [False]  # tracing off after FIRST_WINDOW counted steps
    for _ in range(WINDOW):
        r.step(20 * MS)  # untraced
    assert r.switches == [False, True]
    r.step(31 * MS)  # the first traced step again: it holds the switch, timed in neither set
    r.step(30 * MS)
    assert r.s.counted == FIRST_WINDOW + 2
    assert r.s.untraced.n == WINDOW - 1 and r.s.untraced.median() == 20 * MS  # its first dropped
    assert r.s.traced.n == FIRST_WINDOW + 1 and r.s.dropped == 2
    # Untraced steps record nothing: their epochs are not counted.
    assert r.epochs == [False] + [True] * FIRST_WINDOW + [False] * WINDOW + [True, True]
    times = r.s.times()
    assert times["untraced"]["median_ns"] == 20 * MS and times["traced"]["median_ns"] == 30 * MS
    assert times["switches"] == 2 and times["dropped"] == 2
    # Which steps ran untraced (1-based step numbers, the dropped first one included).
    assert times["windows"] == [[2 + FIRST_WINDOW, 1 + FIRST_WINDOW + WINDOW]]


def test_windows_repeat_every_so_many_counted_steps() -> None:
    r = Run(skip_first=0)
    for _ in range(FIRST_WINDOW + WINDOW + EVERY + WINDOW + 1):
        r.step(10 * MS)
    assert r.switches == [False, True, False, True]


def test_after_active_steps_tracing_stops_for_good_and_every_later_step_is_measured() -> None:
    r = Run(skip_first=1, active=3)
    for _ in range(1 + 3):
        r.step(30 * MS)
    assert r.switches == [False]
    for _ in range(20):
        r.step(20 * MS)
    assert r.switches == [False] and r.s.counted == 3
    assert r.s.untraced.n == 19 and r.s.dropped == 1 and r.s.phase == "done"


def test_calibrate_off_traces_every_step() -> None:
    r = Run(skip_first=0, calibrate=False)
    for _ in range(FIRST_WINDOW + EVERY + 5):
        r.step(10 * MS)
    assert r.switches == [] and r.s.untraced.n == 0 and "untraced" not in r.s.times()


def test_calls_the_gaps_between_them_are_outside_and_no_call_is_dropped() -> None:
    r = Run(skip_first=1, only=CALL)
    r.call(5000 * MS, gap=300 * MS)  # the set-up before it: its own epoch, outside
    for _ in range(FIRST_WINDOW):
        r.call(30 * MS, gap=2 * MS)
    assert r.switches == [False]  # at the end of a call: the switch happens in the gap
    for _ in range(WINDOW - 1):
        r.call(20 * MS, gap=2 * MS)
    assert r.switches == [False, True]
    r.call(30 * MS, gap=2 * MS)
    # gap, call, gap, call, ...: every gap is outside; warm-up call outside; counted calls in.
    assert r.epochs[0::2] == [False] * (1 + FIRST_WINDOW + WINDOW)
    assert r.epochs[1::2] == [False] + [True] * FIRST_WINDOW + [False] * (WINDOW - 1) + [True]
    assert r.s.untraced.n == WINDOW - 1 and r.s.dropped == 0 and r.s.traced.n == FIRST_WINDOW + 1
    r.step(1 * MS)  # an optimizer step under step_on: not a step
    assert r.s.seen == 1 + FIRST_WINDOW + WINDOW


def test_a_run_of_one_step_counts_nothing_and_says_how_long_it_ran() -> None:
    r = Run()
    r.step(900 * MS)
    r.now += 50 * MS
    r.s.close()
    meta = r.s.meta()
    assert meta["profiled"] == 0 and r.epochs == [False]
    assert meta["outside"] == {"before_ns": 950 * MS, "after_ns": 0}


def test_outside_time_before_the_first_and_after_the_last_counted_step() -> None:
    r = Run(skip_first=1, calibrate=False)
    r.now += 700 * MS  # set-up before the loop
    r.step(100 * MS)  # warm-up (its interval starts with the profile)
    r.step(10 * MS)
    r.step(10 * MS)
    r.now += 40 * MS  # a final evaluation after the loop
    r.s.close()
    outside = r.s.meta()["outside"]
    assert outside == {"before_ns": 800 * MS, "after_ns": 40 * MS}
    assert r.s.times()["counted_ns"] == 20 * MS


def test_a_manual_step_takes_over_from_optimizer_steps() -> None:
    r = Run()
    r.step(10 * MS, "optimizer")
    r.step(10 * MS, "manual")  # restarts counting from the loop's own marks
    assert r.s.seen == 1 and r.s.source == "manual"
    r.step(10 * MS, "optimizer")  # ignored from now on
    assert r.s.seen == 1


def test_step_times_stay_bounded_and_exact_where_they_can() -> None:
    t = StepTimes()
    n = 3 * SAMPLE
    for i in range(n):
        t.add(1000 + i)
    s = t.summary()
    assert s is not None and s["n"] == n and s["min_ns"] == 1000 and s["max_ns"] == 1000 + n - 1
    assert s["mean_ns"] == round(1000 + (n - 1) / 2)
    assert len(t.first) == SAVED and t.first[:3] == [1000, 1001, 1002]
    assert len(t._sample) == SAMPLE
    assert abs(s["median_ns"] - (1000 + n / 2)) < 0.1 * n  # a uniform sample's median
    assert StepTimes().summary() is None


@pytest.mark.parametrize("skip", [None, 0, 3])
def test_warmup_reports_its_reason(skip: int | None) -> None:
    w = Warmup(skip)
    for ns in [50 * MS] + [10 * MS] * (STEADY + 5):
        w.step(ns)
    assert w.over and w.reason


def test_held_steps_are_outside_steps_and_their_end_runs_inside_the_last() -> None:
    """PC sampling holds steps (StepSchedule.hold): traced, neither counted nor timed; its
    read-back at the last one's boundary runs before that step's epoch ends, and the first
    untraced window opens only after FIRST_WINDOW counted steps that follow the hold."""
    r = Run(skip_first=2)
    ended_at: list[int] = []
    for _ in range(2):
        r.step(10 * MS)
    assert r.s.warmup.over and r.epochs == [False, False]

    def read_back() -> None:
        ended_at.append(len(r.epochs))  # epochs ended when it ran: the held step's is not yet
        r.now += 500 * MS  # the read-back's own time

    r.s.hold(3, read_back)
    assert r.s.holding
    for _ in range(3):
        r.step(200 * MS)  # sampled steps are slow
    assert ended_at == [4], "the read-back ran after the held step's epoch ended"
    assert r.epochs == [False] * 5 and not r.s.holding
    assert r.s.counted == 0 and r.s.held_steps == 3 and r.s.traced.summary() is None
    for _ in range(FIRST_WINDOW):
        r.step(10 * MS)
    assert r.epochs[5:] == [True] * FIRST_WINDOW and r.switches == [False]
    assert r.s.traced.summary()["median_ns"] == 10 * MS  # the read-back is in no counted step
    meta = r.s.meta()
    assert meta["held"] == 3 and meta["profiled"] == FIRST_WINDOW


def test_on_warm_is_told_before_the_boundary_that_ends_the_warm_up_reaches_the_core() -> None:
    """The timeline window opens at the boundary after on_warm (issue 33): with --skip-first N,
    the end of the N-th warm-up step; automatically, the end of the first counted step (the
    warm-up, waiting for a steady state, docs/numbers.md, knows it is over only then)."""
    # The epochs already passed to the core when on_warm is called: with --skip-first N, the
    # first N-1 warm-up steps'; automatically, every warm-up step's.
    for skip in (3, None):
        seen: list[int] = []
        epochs: list[bool] = []
        r = Run(skip_first=skip, on_warm=lambda s=seen, e=epochs: s.append(len(e)))
        r.epochs = epochs
        r.s._end_epoch = epochs.append
        for ns in (8000 * MS, 50 * MS, *([15 * MS] * 40)):
            r.step(ns)
        if skip:
            first_counted = epochs.index(True)
            assert seen == [first_counted - 1] and first_counted == skip, (skip, seen, epochs)
        else:  # step 2 (50 ms) dropped with step 3 (a cut), then STEADY provisional steps
            assert seen == [3 + STEADY - 1], (seen, epochs)
    r0: list[int] = []
    # (The calibration windows after it are outside too: not the point here.)
    Run(skip_first=0, on_warm=lambda: r0.append(1)).step(5 * MS)
    assert r0 == [], "over from the start: the caller arms the window at start"


def test_first_window_waits_for_the_timeline_steps() -> None:
    r = Run(skip_first=0, first_window=FIRST_WINDOW + 5)
    for _ in range(FIRST_WINDOW + 5):
        r.step(10 * MS)
    assert r.switches == [False] and r.s.counted == FIRST_WINDOW + 5
    short = Run(skip_first=0, first_window=3)  # never earlier than FIRST_WINDOW
    for _ in range(FIRST_WINDOW):
        short.step(10 * MS)
    assert short.switches == [False] and short.s.counted == FIRST_WINDOW


def test_the_readme_commands_jittery_steps_are_counted() -> None:
    """Issue 46: `python -m dlpt examples/mlp_train.py` on a busy 2-core host took these step
    walls (ms), flat with jitter, and counted none of its 60 steps ("all 60 steps seen were
    warm-up"); the rest of the run repeats them."""
    seen = [12, 6.7, 6.6, 8.7, 7.8, 7.9, 5.0, 7.3, 7.4, 7.8, 2.4, 13.0, 8.0]
    r = Run(calibrate=False)
    for i in range(60):
        r.step(round(seen[i % len(seen)] * MS))
    r.s.close()
    assert r.s.counted >= 20 and r.s.meta()["profiled"] >= 20


@pytest.mark.parametrize("timeline", [0, 4])
def test_the_first_untraced_window_follows_the_warm_up_unless_a_timeline_opens_there(timeline: int) -> None:
    """The provisional steps are counted traced steps: without a timeline the first untraced
    window opens right after the warm-up ends (a 60-step run still gets one); a timeline's
    window, which opens there, is kept traced whole first."""
    r = Run(first_window=timeline + 1)
    for _ in range(60):
        r.step(10 * MS)
    assert r.s.warmup.over
    over_at = 1 + STEADY  # step 1, then STEADY provisional steps
    windows = r.s.times()["windows"]  # [first, last] step numbers of untraced runs
    assert windows and windows[0][0] == over_at + 1 + (FIRST_WINDOW if timeline else 0), windows


# lines.py's step times (ms) on the 2-core machine with two processes spinning (a measured run):
# it settled to 4.1 ms, the host slowed it for eleven steps, then let it run at 5-7 ms.
HOST_PHASES = [7.1, 4.5, 4.4, 4.4, 4.3, 4.2, 4.1, 4.5, 4.4, 4.3, 4.1, 4.2, 4.1, 4.1, 4.2, 4.2, 4.1, 4.1, 4.1]
HOST_PHASES += [13.2, 6.7, 8.5, 12.8, 8.6, 8.5, 8.7, 8.9, 9.6, 12.0, 8.7]
HOST_PHASES += [5.4, 6.4, 6.4, 6.2, 6.0, 5.8, 5.5, 6.3, 5.9, 6.8]


def test_a_step_time_back_to_a_pace_the_run_held_before_is_not_a_warm_up() -> None:
    r = Run(calibrate=False)
    for ms in HOST_PHASES:
        r.step(round(ms * MS))
    # Its own fall in the first steps (4.5 -> 4.1 ms) is cut; the end of the host's slow phase is
    # not (the rule before cut there too, at step 37, and kept 3 steps).
    assert r.cuts and max(r.cuts) <= 20 and r.s.counted >= 20


def test_a_fall_to_a_pace_the_run_never_held_still_cuts_after_a_slow_phase() -> None:
    r = Run(calibrate=False)
    for ms in [10] * 12 + [15] * 8 + [5] * 20:
        r.step(ms * MS)
    assert r.cuts and r.classes.index(True) >= 20
