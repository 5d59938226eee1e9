"""What a running profile is doing, for a live status line (``Profile.status()``).

A snapshot read from another thread while the program runs: :class:`ProfileStatus` is computed
from the profile's existing state with plain attribute reads, never under a lock the program's
threads could hold, so a status line can ask a few times a second without slowing the program
or waiting for it.

``phase`` is a plain string so that new phases can be added without changing readers; readers
must show a phase they do not know as it is. The phases today:

- ``starting``: dlpt sets the profile up (hooks, the native core), the program has not started;
- ``warm-up``: warm-up steps run traced, costs filed as outside steps (``skip_first``, or until
  two steps take the same time);
- ``tracing``: costs are being recorded per step;
- ``untraced``: a measurement window: steps run with tracing off, timed only (``calibrate``);
- ``compiling``: a torch.compile (Dynamo) compilation is running, in either of the above;
- ``done``: the ``active`` steps are recorded, the program runs on untraced;
- ``stopping``: the profile stops (GPU flush, the session is built);
- ``stopped``: the session exists.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dlpt.capture.schedule import StepSchedule

__all__ = ["PHASES", "ProfileStatus", "status_of"]

PHASES = ("starting", "warm-up", "tracing", "untraced", "compiling", "done", "stopping", "stopped")


@dataclass(frozen=True)
class ProfileStatus:
    """A running profile at one moment: seconds since it was started, the steps seen so far and
    those recorded, and what it is doing (``phase``, one of :data:`PHASES` or a newer one)."""

    elapsed_s: float
    steps_seen: int
    steps_profiled: int
    phase: str


def status_of(
    started_s: float | None, schedule: StepSchedule | None, clock_started: bool, phase: str | None
) -> ProfileStatus:
    """The status of a profile started at ``started_s`` (``perf_counter()``; None: not yet),
    stepping through ``schedule`` once its set-up is done (``clock_started``), in ``phase`` when
    the profile knows it (stopped, stopping, compiling), else in the schedule's."""
    elapsed = time.perf_counter() - started_s if started_s is not None else 0.0
    if phase is None:
        phase = "starting" if schedule is None or not clock_started else schedule.phase
    seen, profiled = (schedule.seen, schedule.counted) if schedule is not None else (0, 0)
    return ProfileStatus(elapsed, seen, profiled, phase)
