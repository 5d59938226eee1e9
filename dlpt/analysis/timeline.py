"""A session's timeline window laid out as lanes of nested slices: what the Perfetto export
(dlpt.renderers.exports) and the HTML report's timeline view both draw.

Lanes: per host thread, its recorded ops with the CUDA API calls and syncs inside them (nested by
time) and its sampled Python stacks (consecutive samples that share a stack prefix merge into one
slice per frame, a flame chart over time); per GPU stream, its kernels, copies and memsets; and
the steps. Flows join each launch to the GPU work it queued (CUDA's correlation id).

Every slice of a lane nests inside the one above it, as trace viewers require: a host event that
overruns its parent (two clocks' rounding) is cut at the parent's end.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dlpt.model.meta import Meta
from dlpt.model.timeline import Event, Frame, Timeline, timeline_of

__all__ = ["Lane", "Slice", "Flow", "TimelineView", "timeline_view", "frame_label"]

#: Two samples further apart than this many of their own intervals do not merge.
_GAP_FACTOR = 1.5


@dataclass(frozen=True)
class Lane:
    """``kind``: "ops" (a host thread's ops, API calls and syncs), "python" (its sampled stacks),
    "stream" (one GPU stream) or "steps"; ``tid`` the OS thread, ``device``/``stream`` the GPU's."""

    name: str
    kind: str
    tid: int = 0
    device: int = 0
    stream: int = 0


@dataclass(frozen=True)
class Slice:
    lane: int
    depth: int
    start_ns: int
    dur_ns: int
    name: str
    kind: str  # an event kind of dlpt.model.timeline, "frame" or "scope" for sampled stacks
    line: Frame | None  # the innermost Python line it ran at (None: not known)
    corr: int = 0
    gil: float | None = None  # sampled frames: the share of their samples that held the GIL

    @property
    def end_ns(self) -> int:
        return self.start_ns + self.dur_ns


@dataclass(frozen=True)
class Flow:
    """A launch (index of its slice) and the GPU work it queued (index of that slice)."""

    corr: int
    launch: int
    work: int


@dataclass
class TimelineView:
    lanes: list[Lane] = field(default_factory=list)
    slices: list[Slice] = field(default_factory=list)
    flows: list[Flow] = field(default_factory=list)
    steps: list[tuple[int, int]] = field(default_factory=list)
    duration_ns: int = 0
    dropped: int = 0
    steps_kept: int = 0
    steps_requested: int = 0
    first_step: int = 1  # the run's number of the window's first step


def frame_label(f: Frame | None) -> str:
    """``file.py:12 function`` of a frame (the file's base name), "" for none."""
    if f is None:
        return ""
    base = f.file.replace("\\", "/").rsplit("/", 1)[-1] or f.file
    return f"{base}:{f.line} {f.name}" if not f.scope else f'scope "{f.name}"'


def _nest(events: list[Event]) -> list[tuple[Event, int, int]]:
    """(event, depth, end) for events of one lane, sorted, each cut to its parent's end."""
    out: list[tuple[Event, int, int]] = []
    open_ends: list[int] = []
    for e in sorted(events, key=lambda e: (e.start_ns, -e.dur_ns)):
        while open_ends and open_ends[-1] <= e.start_ns:
            open_ends.pop()
        end = min(e.end_ns, open_ends[-1]) if open_ends else e.end_ns
        out.append((e, len(open_ends), end))
        open_ends.append(end)
    return out


def _sampled(tl: Timeline, samples: list[Event], lane: int, out: list[Slice]) -> None:
    """Merge one thread's samples into nested frame slices (a flame chart over time)."""
    open_: list[tuple[int, int, int, int]] = []  # (frame index, start, samples, gil samples)
    prev_end = None
    floor = 0

    def close(to: int, end: int) -> None:
        while len(open_) > to:
            idx, start, n, gil = open_.pop()
            f = tl.frames[idx]
            out.append(
                Slice(
                    lane,
                    len(open_),
                    start,
                    max(0, end - start),
                    f.name,
                    "scope" if f.scope else "frame",
                    f if not f.scope else tl.line(idx),
                    gil=gil / n if n else None,
                )
            )

    for e in sorted(samples, key=lambda e: e.start_ns):
        stack: list[int] = []
        i = e.frame
        while 0 <= i < len(tl.frames) and len(stack) <= len(tl.frames):
            stack.append(i)
            parent = tl.frames[i].parent
            i = parent if parent < i else -1
        stack.reverse()
        gap = prev_end is not None and e.start_ns > prev_end + _GAP_FACTOR * max(e.dur_ns, 1)
        # Slices open and close at times that never go back (a sample stamped before the end of
        # the last one, out of order, would open slices inside closed ones: overlapping, not
        # nested): at the sample's time or the last time used, whichever is later.
        at = max(e.start_ns, floor)
        if prev_end is not None and (gap or e.start_ns < prev_end - e.dur_ns):
            close(0, prev_end)
            at = max(at, prev_end)
        common = 0
        while common < len(open_) and common < len(stack) and open_[common][0] == stack[common]:
            common += 1
        close(common, at)
        for idx in stack[common:]:
            open_.append((idx, at, 0, 0))
        floor = at
        for k, (idx, start, n, gil) in enumerate(open_):
            open_[k] = (idx, start, n + 1, gil + (e.flags & 1))
        prev_end = max(e.end_ns, prev_end or 0)
    if prev_end is not None:
        close(0, prev_end)


def timeline_view(meta: Meta | Mapping[str, Any]) -> TimelineView | None:
    """The lanes, slices and flows of the session's timeline (None: it has none)."""
    tl = timeline_of(meta)
    if tl is None:
        return None
    view = TimelineView(
        duration_ns=tl.duration_ns,
        dropped=tl.dropped,
        steps_kept=tl.steps,
        steps_requested=tl.steps_requested,
        first_step=tl.first_step,
    )
    by_track: dict[int, list[Event]] = {}
    for e in tl.events():
        by_track.setdefault(e.track, []).append(e)
    lane_of: dict[tuple[str, int], int] = {}

    def lane(kind: str, track: int) -> int:
        key = (kind, track)
        if key not in lane_of:
            t = tl.tracks[track]
            if kind == "stream":
                ln = Lane(t.name, kind, device=t.a, stream=t.b)
            elif kind == "steps":
                ln = Lane("steps", kind)
            else:
                ln = Lane(f"{t.name} ({'Python, sampled' if kind == 'python' else 'ops'})", kind, tid=t.a)
            lane_of[key] = len(view.lanes)
            view.lanes.append(ln)
        return lane_of[key]

    order = sorted(by_track, key=lambda t: ({"steps": 0, "thread": 1, "stream": 2}[tl.tracks[t].kind], t))
    launch_of: dict[int, int] = {}
    work_of: dict[int, list[int]] = {}
    for track in order:
        events = by_track[track]
        kind = tl.tracks[track].kind
        if kind == "steps":
            marks = sorted(e.start_ns for e in events)
            view.steps = list(itertools.pairwise(marks))
            ln = lane("steps", track)
            for i, (a, b) in enumerate(view.steps):
                # Named by the run's step numbers, as the report counts steps.
                view.slices.append(Slice(ln, 0, a, b - a, f"step {tl.first_step + i}", "step", None))
            continue
        if kind == "thread":
            host = [e for e in events if e.kind in ("op", "api", "sync")]
            samples = [e for e in events if e.kind == "sample"]
            if host:
                ln = lane("ops", track)
                for e, depth, end in _nest(host):
                    if e.kind == "api" and e.corr:
                        launch_of[e.corr] = len(view.slices)
                    view.slices.append(
                        Slice(
                            ln, depth, e.start_ns, end - e.start_ns, e.name, e.kind, tl.line(e.frame), e.corr
                        )
                    )
            if samples:
                _sampled(tl, samples, lane("python", track), view.slices)
            continue
        ln = lane("stream", track)
        for e, depth, end in _nest(events):
            if e.corr:
                work_of.setdefault(e.corr, []).append(len(view.slices))
            view.slices.append(
                Slice(ln, depth, e.start_ns, end - e.start_ns, e.name, e.kind, tl.line(e.frame), e.corr)
            )
    for corr, works in work_of.items():
        launch = launch_of.get(corr)
        if launch is not None:
            view.flows.extend(Flow(corr, launch, w) for w in works)
    return view
