"""The timeline window (``--timeline N``) into the session: ``meta.timeline``.

The native side returns the window's events with node ids of the core's table (csrc/host/
timeline.h). They are made self-contained here, at stop, before any renumbering of the table:
each node an event refers to becomes a path in a small table of its own (``frames``: the frame
and scope nodes above it, each with its parent), so a timeline names the line of every slice
without the node table, and survives its renumbering. Times become nanoseconds from the window's
start. The format is in docs/session-format.md; :mod:`dlpt.model.timeline` reads it.
"""

from __future__ import annotations

import runpy
from typing import Any

from dlpt.capture.native import api_display_name
from dlpt.model.source_files import is_dlpt_file
from dlpt.model.timeline import EVENT_KINDS, KIND_CODE

__all__ = ["timeline_meta"]


class _Interner:
    def __init__(self) -> None:
        self.strings: list[str] = [""]
        self._index: dict[str, int] = {"": 0}

    def __call__(self, s: str) -> int:
        i = self._index.get(s)
        if i is None:
            i = self._index[s] = len(self.strings)
            self.strings.append(s)
        return i


def _runner(file: str) -> bool:
    """dlpt's own file, or runpy's (the launcher's frames above the program)."""
    return is_dlpt_file(file) or file in ("<frozen runpy>", runpy.__file__)


class _Frames:
    """Node id -> index in the timeline's frame table (frames and scopes on the path to it).
    Sibling nodes of one line (the core keys frames by bytecode offset) share a row."""

    def __init__(self, table: list[dict[str, Any]], strings: _Interner) -> None:
        self.table = table
        self.strings = strings
        self.rows: list[list[Any]] = []
        self._of: dict[int, int] = {}
        self._row: dict[tuple[int, int, int, int, int], int] = {}

    def context(self, node: int) -> int:
        """The index of the innermost frame or scope at or above ``node`` (-1: none)."""
        path: list[int] = []
        i = node
        while 0 < i < len(self.table) and i not in self._of:
            n = self.table[i]
            # dlpt's own frames (the launcher above the program, its hooks) and runpy's (how the
            # launcher runs it) are not the program's: the track starts at the program's
            # outermost frame (issue 33).
            if n["kind"] == "scope" or (n["kind"] == "frame" and not _runner(n["file"])):
                path.append(i)
            i = n["parent"]
        parent = self._of.get(i, -1) if i > 0 else -1
        for nid in reversed(path):
            n = self.table[nid]
            kind = 0 if n["kind"] == "frame" else 1
            key = (parent, kind, self.strings(n["name"]), self.strings(n["file"]), n["line"])
            row = self._row.get(key)
            if row is None:
                row = self._row[key] = len(self.rows)
                self.rows.append(list(key))
            parent = self._of[nid] = row
        if path:
            return self._of[path[0]]
        # Nothing new on the path: the nearest known frame or scope at or above it.
        i = node
        while 0 < i < len(self.table):
            if i in self._of:
                return self._of[i]
            i = self.table[i]["parent"]
        return -1


def timeline_meta(
    table: list[dict[str, Any]], raw: dict[str, Any], thread_names: dict[int, str], gpu: bool
) -> dict[str, Any]:
    """meta.timeline from the native window ``raw`` (dlpt._C.host_result()["timeline"])."""
    strings = _Interner()
    frames = _Frames(table, strings)
    t0 = int(raw.get("start_ns") or 0)
    t1 = int(raw.get("end_ns") or 0)
    api_names = {int(k): api_display_name(str(v)) for k, v in (raw.get("api_names") or {}).items()}
    tracks: list[list[int]] = []
    track_of: dict[tuple[int, int, int], int] = {}

    def track(kind: int, a: int, b: int) -> int:
        key = (kind, a, b)
        t = track_of.get(key)
        if t is None:
            if kind == 0:
                name = thread_names.get(a) or f"thread {a}"
            elif kind == 1:
                name = f"GPU {a} stream {b}"
            else:
                name = "steps"
            t = track_of[key] = len(tracks)
            tracks.append([kind, a, b, strings(name)])
        return t

    events: list[list[int]] = []
    for kind, start, end, where, node, detail, corr, flags in raw.get("events") or []:
        name_kind = EVENT_KINDS[kind] if 0 <= kind < len(EVENT_KINDS) else ""
        if not name_kind:
            continue
        s = max(0, int(start) - t0)
        d = max(0, int(end) - int(start))
        frame = -1
        if name_kind == "step":
            tr = track(2, 0, 0)
            name = f"step {detail}"
        elif name_kind in ("kernel", "memcpy", "memset"):
            tr = track(1, int(where) >> 32, int(where) & 0xFFFFFFFF)
            name = table[node]["name"] if 0 <= node < len(table) else name_kind
            frame = frames.context(node) if node >= 0 else -1
        else:
            tr = track(0, int(where), 0)
            if name_kind == "op":
                name = table[node]["name"] if 0 <= node < len(table) else "op"
                frame = frames.context(table[node]["parent"]) if 0 <= node < len(table) else -1
            elif name_kind in ("api", "sync"):
                name = api_names.get(int(detail), "CUDA API")
                frame = frames.context(node) if node >= 0 else -1
            else:  # sample: its innermost frame names it
                frame = frames.context(node) if node >= 0 else -1
                name = strings.strings[frames.rows[frame][2]] if frame >= 0 else "?"
        events.append([KIND_CODE[name_kind], s, d, tr, strings(name), frame, int(corr), int(flags)])
    events.sort(key=lambda e: (e[3], e[1], -e[2]))
    return {
        "steps": int(raw.get("steps_kept") or 0),
        "steps_requested": int(raw.get("steps_requested") or 0),
        "start_ns": t0,
        "duration_ns": max(0, t1 - t0),
        "clock": "cupti" if gpu else "realtime",
        "dropped": int(raw.get("dropped") or 0),
        "strings": strings.strings,
        "frames": frames.rows,
        "tracks": tracks,
        "events": events,
    }
