"""The timeline of an HTML report (``model["timeline"]``, drawn by ``assets/timeline.js``): the
session's timeline window (``--timeline N``) as lanes of nested slices, from the same layout the
Perfetto export writes (:mod:`dlpt.analysis.timeline`).

Layout: ``lanes`` ``[name, kind]`` (kind: ops, python, stream, steps); ``steps`` ``[start, end]``
per step of the window (ns from its start); ``slices`` rows ``[lane, depth, start, dur, name,
line, kind, corr, gil]`` with ``name``/``line`` indices into the page's string table, ``kind``
an index into ``kinds`` and ``gil`` the per-mille share of a sampled frame's samples that held
the GIL (-1: not a sampled frame). A window with more than ``MAX_SLICES`` slices is cut after the
last whole step that fits (``steps_shown`` says how many).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dlpt.views.run import TimelineView, frame_label

__all__ = ["MAX_SLICES", "KINDS", "timeline_model"]

MAX_SLICES = 150_000
KINDS = ("step", "op", "api", "sync", "kernel", "memcpy", "memset", "frame", "scope")


def timeline_model(view: TimelineView | None, strings: Callable[[str], int]) -> dict[str, Any] | None:
    """The page's timeline of the run's laid-out timeline (its view's), or None when the session
    holds none."""
    if view is None or not view.slices:
        return None
    steps = view.steps or [(0, view.duration_ns)]
    cut = steps[-1][1]
    shown = len(steps)
    if len(view.slices) > MAX_SLICES:
        starts = sorted(s.start_ns for s in view.slices)
        limit = starts[MAX_SLICES - 1]
        fitting = [i for i, (_, end) in enumerate(steps) if end <= limit]
        shown = max(1, len(fitting))
        cut = steps[shown - 1][1]
    kind_index = {k: i for i, k in enumerate(KINDS)}
    rows = []
    for s in view.slices:
        if s.start_ns > cut:
            continue
        rows.append(
            [
                s.lane,
                s.depth,
                s.start_ns,
                s.dur_ns,
                strings(s.name),
                strings(frame_label(s.line)),
                kind_index.get(s.kind, 0),
                s.corr,
                -1 if s.gil is None else round(1000 * s.gil),
            ]
        )
    return {
        "lanes": [[ln.name, ln.kind] for ln in view.lanes],
        "kinds": list(KINDS),
        "steps": [list(s) for s in steps[:shown]],
        "slices": rows,
        "duration": view.duration_ns,
        "dropped": view.dropped,
        "steps_kept": view.steps_kept,
        "first_step": view.first_step,
        "steps_requested": view.steps_requested,
        "steps_shown": shown,
    }
