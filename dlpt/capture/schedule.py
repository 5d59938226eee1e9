"""Which steps are counted, which run untraced, and what is outside steps: the step schedule.

A profile's time is cut at step boundaries (optimizer steps, ``prof.step()``, or the entry and
return of each outermost call of the ``step_on`` function) into *epochs*, and the native core
classifies each epoch's costs when it ends (``_C.end_epoch``): **counted** (per-step work: what
the tree and every per-step figure divide by the number of counted steps) or **outside steps**
(once-work: the program's set-up before the first step, the warm-up steps, the time between
calls of a ``step_on`` function, and the tail after the last step boundary; reported apart,
never divided by the step count). GPU work belongs to the epoch that launched it.

Tracing itself costs time on every traced step (CUPTI's activity records alone make a
launch-bound step about 1.2x slower; README "Overhead"), so a traced step's wall time is not the
program's. The schedule therefore also runs some steps **untraced** (``_C.set_tracing(False)``:
no op callbacks, no CUPTI activity; steps are still timed) and reports both: the untraced step
time is what the program takes without dlpt, and every derived figure (GPU idle share, MFU,
suggested gains) uses it. Switching costs about a traced step, so windows are long and the step
that contains a switch (the first after it, for steps that follow each other) is timed in
neither set.

The default schedule, after the warm-up (:mod:`dlpt.capture.warmup`): traced steps; after
:data:`FIRST_WINDOW` counted steps, an untraced window of :data:`WINDOW` steps; then traced
again, with another window every :data:`EVERY` counted steps. dlpt's cost is measured from each
window and its neighbours (:class:`PairedWindows`): the median of the :data:`NEIGHBOURS` traced
steps right before and the :data:`NEIGHBOURS` right after it against the median of its own
steps, so that a run whose step time drifts compares steps taken at the same time
(docs/numbers.md). With ``active=M``, tracing stops
for good after M counted steps and every later step is an untraced measurement. With
``calibrate=False`` no window is opened (every step after the warm-up is traced until ``active``).

Thread contract: called with the profile's step lock held (boundaries are serialised), with the
GIL; the callbacks may synchronise the GPU (switching tracing off waits for in-flight work).
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dlpt.capture.cpu_wait import ThreadWaits
from dlpt.capture.step_times import StepTimes
from dlpt.capture.warmup import CUT, FIRST, Warmup

__all__ = ["StepSchedule", "PairedWindows", "CALL", "FIRST_WINDOW", "EVERY", "WINDOW", "NEIGHBOURS"]

CALL = "call"  # the source of steps that are calls of a step_on function

#: Counted (traced) steps before the first untraced window.
FIRST_WINDOW = 10
#: Counted steps between later windows (a window every 30 keeps ~85% of the steps traced and
#: gives a 300-step run 9 paired windows).
EVERY = 30
#: Untraced steps per window (for steps that follow each other, its first is dropped).
WINDOW = 6
#: Untraced windows listed in the session (their step numbers), at most.
MAX_WINDOWS_SAVED = 64
#: Traced steps on each side of an untraced window that it is compared with.
NEIGHBOURS = 3
#: Paired windows kept (a uniform, seeded sample of them beyond this many).
MAX_PAIRS_SAVED = 256


class PairedWindows:
    """Each untraced window with its traced neighbours: ``meta.step_time.paired``, one
    ``{"steps": [first, last], "untraced_ns", "untraced_n", "traced_ns", "traced_n"}`` per window
    (medians), complete once :data:`NEIGHBOURS` traced steps followed it (or the run ended with
    at least one). Bounded: the first :data:`MAX_PAIRS_SAVED`, then a seeded reservoir."""

    def __init__(self) -> None:
        self.pairs: list[dict[str, Any]] = []
        self.n = 0  # complete windows seen
        self._before: list[int] = []  # the latest traced steps (at most NEIGHBOURS)
        self._open: dict[str, Any] | None = None  # the window under way or awaiting its after
        self._rng = random.Random(3)

    def traced(self, ns: int) -> None:
        """A traced step timed (not one that held a switch)."""
        o = self._open
        if o is not None and o["untraced"]:
            o["after"].append(ns)
            if len(o["after"]) >= NEIGHBOURS:
                self._finish()
        self._before.append(ns)
        del self._before[:-NEIGHBOURS]

    def untraced(self, ns: int, step: int) -> None:
        """An untraced step timed, step number ``step``."""
        o = self._open
        if o is None or o["after"]:  # a new window (an earlier one waiting for its after ends here)
            self._finish()
            o = self._open = {
                "before": list(self._before),
                "untraced": [],
                "after": [],
                "steps": [step, step],
            }
        o["untraced"].append(ns)
        o["steps"][1] = step

    def close(self) -> None:
        """End of the run: a window with at least one traced step after it still counts."""
        self._finish()

    def _finish(self) -> None:
        o, self._open = self._open, None
        if o is None or not o["untraced"] or not o["before"] or not o["after"]:
            return
        neighbours = o["before"] + o["after"]
        pair = {
            "steps": o["steps"],
            "untraced_ns": round(statistics.median(o["untraced"])),
            "untraced_n": len(o["untraced"]),
            "traced_ns": round(statistics.median(neighbours)),
            "traced_n": len(neighbours),
        }
        self.n += 1
        if len(self.pairs) < MAX_PAIRS_SAVED:
            self.pairs.append(pair)
        else:
            j = self._rng.randrange(self.n)
            if j < MAX_PAIRS_SAVED:
                self.pairs[j] = pair


@dataclass(frozen=True)
class _Counts:
    """What a cut resets in the schedule (the counted steps' count, wall time, first and last
    times, timed walls and steps since a window), kept for a restore of the warm-up's drop."""

    counted: int
    counted_ns: int
    first_ns: int | None
    last_ns: int | None
    traced: StepTimes
    since_window: int
    waited_ns: int  # of counted_ns, the step's thread waiting for a CPU (cpu_wait)

    def then(self, later: _Counts) -> _Counts:
        """These counts followed by ``later``'s (fewer than SAVED steps each side: the drop's
        extensions and the steps after the last cut are fewer than MIN_KEPT). ``later``'s walls
        are added into this one's StepTimes, which the result takes over: these counts are not
        read again."""
        traced = self.traced
        for ns in later.traced.first:
            traced.add(ns)
        return _Counts(
            self.counted + later.counted,
            self.counted_ns + later.counted_ns,
            self.first_ns if self.first_ns is not None else later.first_ns,
            later.last_ns if later.last_ns is not None else self.last_ns,
            traced,
            self.since_window + later.since_window,
            self.waited_ns + later.waited_ns,
        )


class StepSchedule:
    """Decides, at each step boundary, how the step that ended is classified and whether the
    next one is traced. ``end_epoch(counted)``, ``set_tracing(on)``, ``cut(extend)`` (every epoch
    that ended so far is outside the steps: the warm-up's provisional steps, kept apart with the
    last cut's when ``extend``) and ``restore()`` (the kept-apart steps count again: at close,
    Warmup.restores_last_cut) are the native core's;
    ``only``: the one source of steps that counts (CALL when a step_on function is named).
    ``on_warm``: called once, when the warm-up is over, before the boundary where it ended is
    passed to the core (the timeline window opens at that boundary: its steps are counted ones).
    ``first_window``: counted steps traced before the first untraced window (at least
    FIRST_WINDOW; more when a timeline of that many steps is asked for: the window closes when
    tracing stops). ``waits``: the step thread's waits for a CPU (the profile's; None: unknown,
    as in tests with a clock of their own), summed over the counted steps (``meta.step_time``'s
    ``waited_ns``: the report's busy-host warning)."""

    def __init__(
        self,
        skip_first: int | None,
        active: int | None,
        calibrate: bool,
        end_epoch: Callable[[bool], Any],
        set_tracing: Callable[[bool], Any],
        cut: Callable[[bool], Any] | None = None,
        restore: Callable[[], Any] | None = None,
        only: str | None = None,
        clock: Callable[[], int] = time.perf_counter_ns,
        on_warm: Callable[[], Any] | None = None,
        first_window: int = FIRST_WINDOW,
        waits: ThreadWaits | None = None,
    ) -> None:
        self.active = active
        self.calibrate = calibrate
        self._end_epoch, self._set_tracing = end_epoch, set_tracing
        self._cut, self._restore = cut, restore
        self._only = only
        self._clock = clock
        self._waits = waits if waits is not None and waits.available else None
        self._on_warm = on_warm
        self._first_window = max(FIRST_WINDOW, first_window)
        self._timeline = first_window > 1  # a timeline window opens when the warm-up ends
        self.warmup = Warmup(skip_first)
        self.source: str | None = None
        self.seen = 0  # steps that ended
        self.counted = 0  # traced steps counted (what per-step figures divide by), provisional ones too
        self.traced = StepTimes(seed=1)  # wall times of counted steps (switch steps left out)
        self.untraced = StepTimes(seed=2)
        self.paired = PairedWindows()
        self.dropped = 0  # steps timed in neither set: they contained a switch
        self.untraced_steps = 0  # steps run untraced (dropped ones included)
        self.windows: list[list[int]] = []  # [first, last] step numbers of untraced runs (bounded)
        self.switches = 0
        self.tracing = True
        self._switched = False  # the step under way began with a switch (contiguous steps)
        self._window_left = 0  # untraced steps still to run in the open window
        self._windows = 0
        self._since_window = 0  # counted steps since the last window closed
        self._in_call = False
        # The last boundary: whether it ended a counted step (None: ignored; memory per step
        # follows it) and whether it dropped every step before it (a cut of the warm-up).
        self.last_counted: bool | None = None
        self.last_cut = False
        # A cut the warm-up asked for at the last boundary, applied at the next one: a run whose
        # last step was such a fall keeps the steps before it (see _drop_counted).
        self._cut_pending = False
        self._pending_extends = False  # that cut extends the drop before it (Warmup.extends)
        self.last_cut_extends = False  # the cut at the last boundary did (memory's peaks follow)
        # What the cuts since the warm-up's drop began reset (Warmup.restores_last_cut).
        self._dropped: _Counts | None = None
        self.restored_cut = False  # the drop counts again, since close (memory's peaks follow it)
        self.start_ns = self._last = 0
        self.counted_ns = 0  # wall time of counted steps
        self.waited_ns = 0  # of which the step's thread waited for a CPU (with waits)
        self.first_counted_ns: int | None = None  # when the first counted step began
        self.last_counted_ns: int | None = None  # when the last counted step ended
        self.stop_ns = 0
        # Steps another measurement holds (PC sampling, :meth:`hold`): run traced, outside steps.
        self.held_steps = 0
        self._hold_left = 0
        self._hold_end: Callable[[], None] | None = None

    # -- the program's time -------------------------------------------------------------------

    def start(self) -> None:
        """The profile's own set-up is done: the program's time, and epoch 0, begin."""
        self.start_ns = self._mark()

    def begin_call(self) -> None:
        """An outermost call of the step_on function begins: the time since the last call (or
        the start) is outside steps, its own epoch."""
        if self._only is not None and self._only != CALL:
            return
        self._end_epoch(False)
        self._in_call = True
        self._mark()

    def on_step(self, source: str, began_ns: int | None = None) -> None:
        """A step just ended (``source``: "optimizer", "manual" or CALL; ``began_ns``, for a call,
        when it began)."""
        self.last_counted = None
        self.last_cut = self.last_cut_extends = False
        if self._only is not None and source != self._only:
            return
        if source == "optimizer" and self.source == "manual":
            return
        if source == "manual" and self.source == "optimizer":
            # The loop marks steps itself: from here its marks end steps. The time since the
            # optimizer step that ended this step is not a step of its own (it is outside).
            self.source = source
            self._end_epoch(False)
            self._mark()
            return
        self.source = source
        now = self._clock()
        began = began_ns if began_ns is not None else self._last
        wall = max(0, now - began)
        waited = self._waits.since_mark() if self._waits is not None else 0
        self.seen += 1
        self.last_counted = False
        if not self.tracing:
            self._end_epoch(False)  # nothing was recorded; the boundary is still a GPU step mark
            self.untraced_steps += 1
            if self._switched or not self.windows:
                if len(self.windows) < MAX_WINDOWS_SAVED:
                    self.windows.append([self.seen, self.seen])
            elif self.windows[-1][1] == self.seen - 1:
                self.windows[-1][1] = self.seen
            if self._time(self.untraced, wall):
                self.paired.untraced(wall, self.seen)
            if self._window_left:
                self._window_left -= 1
        elif self._hold_left:
            self._hold_left -= 1
            self.held_steps += 1
            if not self._hold_left and self._hold_end is not None:
                end, self._hold_end = self._hold_end, None
                end()  # before the epoch ends: its own time (reading back) stays in the held step
            self._end_epoch(False)
        else:
            said = self._warmup_step(wall)
            if self._cut_pending:
                self._drop_counted()  # before this step's epoch ends: only the steps before it
            self._end_epoch(said != FIRST)
            self._cut_pending = said == CUT
            self._pending_extends = self.warmup.extends
            if said != FIRST:
                self._count(wall, began, now, waited)
        self._in_call = False
        self._switch(self._wants_tracing())
        self._mark()  # a switch's own time is the next step's, dropped with it

    def _mark(self) -> int:
        """The next step (or the time before one) begins now: returns the clock's time."""
        self._last = self._clock()
        if self._waits is not None:
            self._waits.mark()
        return self._last

    def _count(self, wall: int, began: int, now: int, waited: int) -> None:
        """The step that just ended counts (provisionally while the warm-up runs)."""
        self.last_counted = True
        self.counted += 1
        self._since_window += 1
        self.counted_ns += wall
        self.waited_ns += min(waited, wall)
        if self.first_counted_ns is None:
            self.first_counted_ns = began
        self.last_counted_ns = now
        if self._time(self.traced, wall):
            self.paired.traced(wall)

    def _drop_counted(self) -> None:
        """A cut: every step counted so far is outside the steps (the native core moves what
        they recorded; memory per step follows ``last_cut``). The warm-up asks for it at the
        step whose time showed the fall, and it is made at the next boundary, before that
        step's epoch ends: the step of the fall is dropped with those before it, the one
        ending now is not. A run that ends first keeps the steps since the cut before (a fall
        at the very last step leaves no report empty; Warmup.finish says so). No untraced
        window opens before the warm-up ends, so none is lost here."""
        extend = self._pending_extends and self._dropped is not None
        if self._cut is not None:
            self._cut(extend)
        self.last_cut, self.last_cut_extends = True, extend
        counts = self._counts()
        self._dropped = self._dropped.then(counts) if self._dropped is not None and extend else counts
        self.counted = self._since_window = self.counted_ns = self.waited_ns = 0
        self.first_counted_ns = self.last_counted_ns = None
        self.traced = StepTimes(seed=1)
        self.paired = PairedWindows()

    def _counts(self) -> _Counts:
        """What a cut resets, as it stands now."""
        return _Counts(
            self.counted,
            self.counted_ns,
            self.first_counted_ns,
            self.last_counted_ns,
            self.traced,
            self._since_window,
            self.waited_ns,
        )

    def _restore_counted(self, dropped: _Counts) -> None:
        """The warm-up's drop counts again (Warmup.restores_last_cut): the native core is told,
        and the counts here add what the cuts reset (``dropped``). Before the core stops."""
        if self._restore is not None:
            self._restore()
        self.warmup.restore_last_cut()
        d = dropped.then(self._counts())
        self.counted, self.counted_ns, self._since_window = d.counted, d.counted_ns, d.since_window
        self.waited_ns = d.waited_ns
        self.first_counted_ns, self.last_counted_ns, self.traced = d.first_ns, d.last_ns, d.traced
        self.restored_cut = True
        self._dropped = None

    def hold(self, steps: int, at_end: Callable[[], None]) -> None:
        """The next ``steps`` steps belong to another measurement (PC sampling: slow kernels,
        the GPU synchronised at both ends): they run traced but end as outside steps, not
        counted and not timed, so no per-step figure, step time or suggestion holds them.
        ``at_end`` runs at the boundary that ends the last of them, before that step's epoch
        ends: the time it takes stays in the held step, not in the next (counted) one. A profile
        that stops first leaves ``at_end`` to the caller's stop."""
        self._hold_left = max(0, int(steps))
        self._hold_end = at_end if self._hold_left else None

    @property
    def holding(self) -> bool:
        """Whether held steps are still to end."""
        return self._hold_left > 0

    def close(self) -> None:
        """End of the profile: the time since the last boundary is outside steps (the caller
        stops the native core with the last epoch not counted)."""
        self.stop_ns = self._clock()
        self.paired.close()
        if self._waits is not None:
            self._waits.close()
        active = self.active is not None and self.counted >= self.active
        if self._cut_pending:  # the fall was at the last step: the steps before it stay counted
            self.warmup.keep_last_cut()
            self._cut_pending = False
        if self._dropped is not None and self.warmup.restores_last_cut():
            self._restore_counted(self._dropped)
        self.warmup.finish(f"--active {self.active} ended the counting" if active else "the run ended")

    # -- decisions ------------------------------------------------------------------------------

    def _warmup_step(self, wall: int) -> str:
        """What the warm-up says of the step that ended (dlpt.capture.warmup: FIRST, PROVISIONAL,
        CUT or COUNTED); tells ``on_warm`` when the warm-up just ended (with --skip-first N at the
        end of its N-th step, automatically at the end of the step that ended it)."""
        was_over = self.warmup.over
        warm = self.warmup.step(wall)
        if not was_over and self.warmup.over:
            if self._timeline:
                # A timeline's window opens here: it is traced whole, so the first untraced
                # window waits for its steps (the provisional ones before it do not count).
                self._since_window = -1 if warm != FIRST else 0  # this step is counted next
            if self._on_warm is not None:
                self._on_warm()
        return warm

    def _time(self, times: StepTimes, wall: int) -> bool:
        """Times the step unless it held a switch; returns whether it was timed."""
        if self._switched and self.source != CALL:
            self.dropped += 1
            return False
        times.add(wall)
        return True

    def _wants_tracing(self) -> bool:
        if self.active is not None and self.counted >= self.active:
            return False  # for good: every later step is an untraced measurement
        if not self.calibrate or not self.warmup.over:
            return True
        if self._window_left:
            return False
        due = self._first_window if self._windows == 0 else EVERY
        if self.tracing and self._since_window >= due:
            self._windows += 1
            self._since_window = 0
            self._window_left = WINDOW if self.source != CALL else WINDOW - 1
            return False
        return True

    def _switch(self, on: bool) -> None:
        if on == self.tracing:
            self._switched = False
            return
        self._set_tracing(on)
        self.tracing = on
        self.switches += 1
        self._switched = True

    # -- what the session says ---------------------------------------------------------------

    @property
    def phase(self) -> str:
        """What the profile is doing now: "warm-up", "tracing", "untraced" (a measurement window)
        or "done" (the ``active`` steps are recorded; later steps run untraced)."""
        if not self.tracing:
            return "done" if self.active is not None and self.counted >= self.active else "untraced"
        return "tracing" if self.warmup.over else "warm-up"

    def meta(self) -> dict[str, Any]:
        """``meta.steps`` (the counts) and, under ``time``, ``meta.step_time``."""
        w = self.warmup
        end = self.stop_ns or self._clock()
        before = (self.first_counted_ns or end) - self.start_ns
        after = end - (self.last_counted_ns or end)
        if self.source is None:  # no step boundary: the whole run is one counted step
            before = after = 0
        return {
            "profiled": self.counted,
            "seen": self.seen,
            "skip_first": w.skip_first,
            "active": self.active,
            "source": self.source,
            "untraced": self.untraced_steps,
            **({"held": self.held_steps} if self.held_steps else {}),
            "warmup": {
                "steps": w.steps,
                "walls_ns": list(w.walls),
                "auto": w.skip_first is None,
                **({"settled": w.settled} if w.settled is not None else {}),
                **({"cuts": w.cuts} if w.cuts else {}),
                # Counted without the warm-up having ended (the run ended first): provisional.
                **({"provisional": w.provisional} if w.provisional else {}),
                "reason": w.reason,
            },
            "outside": {"before_ns": before, "after_ns": after if self.last_counted_ns is not None else 0},
        }

    def times(self) -> dict[str, Any]:
        """``meta.step_time``: traced and untraced step wall times, and how they were measured."""
        out: dict[str, Any] = {
            "calibrate": self.calibrate,
            "switches": self.switches,
            "dropped": self.dropped,
            "counted_ns": self.counted_ns,
            **({"waited_ns": self.waited_ns} if self._waits is not None else {}),
            "windows": [list(w) for w in self.windows],
            "paired": [dict(p, steps=list(p["steps"])) for p in self.paired.pairs],
            "paired_n": self.paired.n,
        }
        for key, times in (("traced", self.traced), ("untraced", self.untraced)):
            summary = times.summary()
            if summary is not None:
                out[key] = summary
        return out
