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

from dataclasses import dataclass

__all__ = ["PHASES", "ProfileStatus"]

PHASES = ("starting", "warm-up", "tracing", "untraced", "compiling", "done", "stopping", "stopped")


@dataclass(frozen=True)
class ProfileStatus:
    """A running profile at one moment: seconds since it was started, the steps seen so far and
    those recorded, and what it is doing (``phase``, one of :data:`PHASES` or a newer one)."""

    elapsed_s: float
    steps_seen: int
    steps_profiled: int
    phase: str
