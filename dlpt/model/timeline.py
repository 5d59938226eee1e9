"""Reading a session's timeline window (``meta.timeline``, written by --timeline N; the format is
in docs/session-format.md): its events with their names, tracks and source lines.

A timeline is self-contained: strings, a table of frames (each with its parent, so a slice's
line and its whole Python path can be named) and tracks (host threads, GPU streams, the steps).
Events are rows ``[kind, start_ns, dur_ns, track, name, frame, corr, flags]`` with times from the
window's start. The typed meta (dlpt.model.meta.Timeline) checks the types at load; the indices are checked
here, where they are followed (a hostile file may point anywhere).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from dlpt.model.meta import Meta, typed
from dlpt.model.meta import Timeline as SavedTimeline

__all__ = ["EVENT_KINDS", "KIND_CODE", "TRACK_KINDS", "Timeline", "Event", "Frame", "Track", "timeline_of"]

#: Event kinds by code (the rows' first field).
EVENT_KINDS = ("step", "op", "api", "sync", "kernel", "memcpy", "memset", "sample")
KIND_CODE = {k: i for i, k in enumerate(EVENT_KINDS)}
#: Track kinds by code: a host thread (a = OS thread id), a GPU stream (a = device, b = stream),
#: the steps.
TRACK_KINDS = ("thread", "stream", "steps")


@dataclass(frozen=True)
class Frame:
    parent: int  # index in the frame table, -1 at the top
    scope: bool  # a dlpt.scope / record_function region rather than a Python frame
    name: str
    file: str
    line: int


@dataclass(frozen=True)
class Track:
    kind: str  # one of TRACK_KINDS
    a: int
    b: int
    name: str


@dataclass(frozen=True)
class Event:
    kind: str  # one of EVENT_KINDS
    start_ns: int
    dur_ns: int
    track: int
    name: str
    frame: int  # -1: none
    corr: int
    flags: int

    @property
    def end_ns(self) -> int:
        return self.start_ns + self.dur_ns


class Timeline:
    """A session's timeline with its indices checked (out-of-range ones read as none)."""

    def __init__(self, saved: SavedTimeline) -> None:
        self.saved = saved
        self.strings: list[str] = list(saved.strings) or [""]
        self.frames: list[Frame] = []
        for row in saved.frames:
            parent = row[0] if 0 <= row[0] < len(self.frames) else -1
            self.frames.append(Frame(parent, bool(row[1]), self._s(row[2]), self._s(row[3]), int(row[4])))
        self.tracks = [
            Track(TRACK_KINDS[t[0]] if 0 <= t[0] < len(TRACK_KINDS) else "thread", t[1], t[2], self._s(t[3]))
            for t in saved.tracks
        ]
        self.steps = saved.steps or 0
        self.steps_requested = saved.steps_requested or 0
        # The run's number of the window's first step (1 in a session saved before it was kept).
        first = saved.first_step
        self.first_step = first if first is not None and first > 0 else 1
        self.duration_ns = saved.duration_ns or 0
        self.dropped = saved.dropped or 0
        self.clock = saved.clock or ""

    def _s(self, i: int) -> str:
        return self.strings[i] if 0 <= i < len(self.strings) else ""

    def events(self) -> Iterator[Event]:
        """Every event whose kind and track are known, in the stored order (by track, then start)."""
        for row in self.saved.events:
            kind, start, dur, track, name, frame, corr, flags = row
            if not 0 <= kind < len(EVENT_KINDS) or not 0 <= track < len(self.tracks):
                continue
            yield Event(
                EVENT_KINDS[kind],
                start,
                dur,
                track,
                self._s(name),
                frame if 0 <= frame < len(self.frames) else -1,
                corr,
                flags,
            )

    def path(self, frame: int) -> list[Frame]:
        """The frames from the top down to ``frame`` (a table index; [] for -1)."""
        out: list[Frame] = []
        seen = 0
        while 0 <= frame < len(self.frames) and seen <= len(self.frames):
            f = self.frames[frame]
            out.append(f)
            frame = f.parent if f.parent < frame else -1  # parents come first: no cycles
            seen += 1
        out.reverse()
        return out

    def line(self, frame: int) -> Frame | None:
        """The innermost Python frame (not a scope) at or above ``frame``."""
        for f in reversed(self.path(frame)):
            if not f.scope:
                return f
        return None

    def step_bounds(self) -> list[tuple[int, int]]:
        """(start, end) of each step of the window, from its step marks."""
        marks = sorted(e.start_ns for e in self.events() if e.kind == "step")
        return list(itertools.pairwise(marks))


def timeline_of(meta: Meta | Mapping[str, Any]) -> Timeline | None:
    """The session's timeline, or None when it has none (or an empty one)."""
    saved = typed(meta).timeline
    return Timeline(saved) if saved is not None and saved.events else None
