"""What the host sampler recorded, into the session: host time on the nodes (``m.host_ns``,
``m.host_gil_ns``, ``m.host_cpu_ns``) and ``meta.host`` (the sampler's numbers, where the step's
thread spent its time per step, and which lines it was in while each GPU idled).

Lines are named here, at stop, from the node table the core exported (before any renumbering):
each sampled node is charged to the nearest frame of the user's own files at or above it (else an
installed package's, else the innermost frame), so ``json.loads`` called from ``data.py:41``
counts on ``data.py:41``, with the innermost frame kept as ``inner``. The format of ``meta.host``
is in docs/session-format.md.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from dlpt.model.meta import SAMPLER_STATS
from dlpt.model.source_files import file_kind, is_dlpt_file

__all__ = ["add_host_metrics", "host_meta", "LINES_KEPT"]

#: Lines kept per list in meta.host (the rest is summed in ``other_ns``).
LINES_KEPT = 20


def add_host_metrics(
    table: list[dict[str, Any]],
    cells: Iterable[tuple[int, int, int, int, int]],
    cells_outside: Iterable[tuple[int, int, int, int, int]] = (),
) -> None:
    """Add the sampler's per-node sums (node id, wall, GIL, CPU, samples) to the core's table:
    those of counted steps to each node's ``m``, those outside them (set-up, warm-up, untraced
    steps, the end of the run) to its ``o``, as the core files every other cost.

    A thread with no frame of the user's or of an installed package (a DataLoader's queue feeder
    or pin-memory thread, a thread pool's idle worker: the stdlib's and torch's code only)
    counts its CPU time, not its wall time: such threads mostly wait, and their waiting folded
    into the report's ``total`` put several steps' worth of wall time on each step (issue 33).
    The program's own threads keep their wall time (a user's line waiting on a queue is the
    point)."""
    own = _OwnCode(table)
    for field, rows in (("m", cells), ("o", cells_outside)):
        for node, wall, gil, cpu, _samples in rows:
            if not 0 <= node < len(table):
                continue
            if not own.on_path(node):
                wall, gil = min(wall, cpu), min(gil, cpu)
            m = table[node].setdefault(field, {})
            for key, v in (("host_ns", wall), ("host_gil_ns", gil), ("host_cpu_ns", cpu)):
                if v:
                    m[key] = m.get(key, 0) + v


class _OwnCode:
    """Whether a node's path holds a frame of the user's or of an installed package, memoised."""

    def __init__(self, table: list[dict[str, Any]]) -> None:
        self.table = table
        self._memo: dict[int, bool] = {}

    def on_path(self, node: int) -> bool:
        path: list[int] = []
        i, found = node, False
        while 0 < i < len(self.table):
            if i in self._memo:
                found = self._memo[i]
                break
            n = self.table[i]
            path.append(i)
            f = n["file"] if n["kind"] == "frame" else ""
            if f and file_kind(f) != "framework" and not is_dlpt_file(f):
                found = True
                break
            i = n["parent"]
        for j in path:
            self._memo[j] = found
        return found


class _Lines:
    """Node id -> (user line, innermost frame) of the core's table, memoised."""

    def __init__(self, table: list[dict[str, Any]]) -> None:
        self.table = table
        self._memo: dict[int, tuple[tuple[str, int, str], str] | None] = {}

    @staticmethod
    def _label(n: dict[str, Any]) -> str:
        return f"{os.path.basename(n['file']) or n['file']}:{n['line']} {n['name']}"

    def of(self, node: int) -> tuple[tuple[str, int, str], str] | None:
        if node in self._memo:
            return self._memo[node]
        best: dict[str, Any] | None = None
        rank = 3
        innermost: dict[str, Any] | None = None
        any_dlpt = False
        i = node
        while 0 < i < len(self.table):
            n = self.table[i]
            if n["kind"] == "frame":
                if is_dlpt_file(n["file"]):
                    any_dlpt = True
                    i = n["parent"]
                    continue
                innermost = innermost or n
                kind = file_kind(n["file"])
                r = {"user": 0, "package": 1}.get(kind, 2)
                if r < rank:
                    best, rank = n, r
                    if r == 0:
                        break
            i = n["parent"]
        if rank == 2 and any_dlpt:
            # No user or package frame, and dlpt's own code on the stack (its start, stop and
            # hooks): dlpt's time, never a line of the user's (issue 33).
            self._memo[node] = None
            return None
        best = best or innermost
        out = None
        if best is not None:
            inner = self._label(innermost) if innermost is not None and innermost is not best else ""
            out = ((best["file"], best["line"], best["name"]), inner)
        self._memo[node] = out
        return out


def _line_list(lines: _Lines, cells: Iterable[tuple[int, int, int]]) -> dict[str, Any]:
    """{"ns", "gil_ns", "lines": [...], "other_ns"} of (node, ns, gil_ns) cells."""
    by_line: dict[tuple[str, int, str], dict[str, Any]] = {}
    inner_ns: dict[tuple[tuple[str, int, str], str], int] = {}
    total = gil_total = 0
    for node, ns, gil in cells:
        total += ns
        gil_total += gil
        where = lines.of(node)
        if where is None:
            continue
        key, inner = where
        row = by_line.setdefault(
            key, {"file": key[0], "line": key[1], "function": key[2], "ns": 0, "gil_ns": 0}
        )
        row["ns"] += ns
        row["gil_ns"] += gil
        if inner:
            inner_ns[(key, inner)] = inner_ns.get((key, inner), 0) + ns
    for key, inner in sorted(inner_ns, key=inner_ns.__getitem__):
        by_line[key]["inner"] = inner  # the busiest innermost frame of the line (last wins)
    rows = sorted(by_line.values(), key=lambda r: (-r["ns"], r["file"], r["line"]))
    kept = rows[:LINES_KEPT]
    return {
        "ns": total,
        "gil_ns": gil_total,
        "lines": kept,
        "other_ns": total - sum(r["ns"] for r in kept),
    }


def host_meta(table: list[dict[str, Any]], raw: dict[str, Any]) -> dict[str, Any]:
    """meta.host of a profile whose host side returned ``raw`` (dlpt.capture.host.HostCapture.result)."""
    start = raw.get("start") or {}
    stats = raw.get("stats") or {}
    out: dict[str, Any] = {
        "sample_hz": int(raw.get("hz") or 0),
        "sampling": bool(raw.get("sampled")),
        "method": str(raw.get("method") or ""),
    }
    if start.get("reason"):
        out["off"] = str(start["reason"])
    for key in SAMPLER_STATS:  # the native names are the saved ones
        out[key] = int(stats.get(key, 0))
    blame = raw.get("blame")
    if blame:
        lines = _Lines(table)
        out["steps"] = int(blame["steps"])
        out["step_thread"] = _line_list(lines, blame["host"])
        idle: dict[str, dict[str, Any]] = {}
        for dev, gaps in (blame.get("devices") or {}).items():
            idle[str(dev)] = {gap: _line_list(lines, cells) for gap, cells in gaps.items()}
        if idle:
            out["idle"] = idle
        out["dropped"] = {
            "samples": int(blame.get("samples_dropped", 0)),
            "gpu_spans": int(blame.get("spans_dropped", 0)),
        }
        out["resolved_early"] = int(blame.get("resolved_early", 0))
    return out
