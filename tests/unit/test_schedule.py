"""The step schedule (dlpt.capture.schedule): which steps are warm-up, counted or untraced, when
tracing switches, which step walls are measured, and what is outside steps; on a fake clock and
recorded native calls, so every decision is checked exactly."""

from __future__ import annotations

from typing import Any

import pytest

from dlpt.capture.schedule import CALL, EVERY, FIRST_WINDOW, WINDOW, StepSchedule
from dlpt.capture.step_times import SAMPLE, SAVED, StepTimes
from dlpt.capture.warmup import MAX_WARMUP, Warmup

MS = 1_000_000


class Run:
    """A schedule on a fake clock; ``epochs`` records end_epoch's classifications, ``switches``
    set_tracing's calls."""

    def __init__(self, **kw: Any) -> None:
        self.now = 0
        self.epochs: list[bool] = []
        self.switches: list[bool] = []
        kw.setdefault("skip_first", None)
        kw.setdefault("active", None)
        kw.setdefault("calibrate", True)
        self.s = StepSchedule(
            end_epoch=self.epochs.append, set_tracing=self.switches.append, clock=lambda: self.now, **kw
        )
        self.s.start()

    def step(self, ns: int, source: str = "optimizer") -> None:
        self.now += ns
        self.s.on_step(source)

    def call(self, ns: int, gap: int = 0) -> None:
        self.now += gap
        self.s.begin_call()
        began = self.now
        self.now += ns
        self.s.on_step(CALL, began)


def test_warm_up_ends_when_two_steps_in_a_row_take_the_same_time() -> None:
    r = Run()
    for ns in (8000 * MS, 50 * MS, 16 * MS, 15 * MS, 15 * MS, 15 * MS):
        r.step(ns)
    # steps 1-3 settle; step 4 is within 25% of step 3: counted from there.
    assert r.epochs == [False, False, False, True, True, True]
    assert r.s.warmup.steps == 3 and r.s.counted == 3
    assert r.s.warmup.walls == [8000 * MS, 50 * MS, 16 * MS]
    meta = r.s.meta()
    assert meta["warmup"]["auto"] is True and meta["warmup"]["steps"] == 3
    assert meta["profiled"] == 3 and meta["seen"] == 6


def test_the_first_step_is_never_counted_automatically_and_skip_first_is_exact() -> None:
    even = Run()
    for _ in range(4):
        even.step(10 * MS)
    assert even.epochs == [False, True, True, True]  # nothing to compare step 1 with
    exact = Run(skip_first=2)
    for ns in (9000 * MS, 10 * MS, 10 * MS, 500 * MS):
        exact.step(ns)
    assert exact.epochs == [False, False, True, True]  # whatever their times
    zero = Run(skip_first=0)
    zero.step(9000 * MS)
    assert zero.epochs == [True]


def test_steps_that_never_settle_are_counted_after_the_longest_warm_up() -> None:
    r = Run()
    for i in range(MAX_WARMUP + 3):
        r.step((10 + 10 * (i % 2)) * MS)  # 10, 20, 10, 20...: never within 25%
    assert r.epochs[:MAX_WARMUP] == [False] * MAX_WARMUP and all(r.epochs[MAX_WARMUP:])
    assert "did not settle" in r.s.warmup.reason


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


def test_a_run_that_ends_in_its_warm_up_counts_nothing_and_says_how_long_it_ran() -> None:
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
    for ns in (50 * MS, 10 * MS, 10 * MS, 10 * MS, 10 * MS):
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
