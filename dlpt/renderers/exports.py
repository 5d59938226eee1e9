"""Exports of a session's tree for other tools.

- ``speedscope``: speedscope's JSON file format (https://www.speedscope.app/file-format-schema.json),
  one "sampled" profile per metric with any value: each tree node with a self value is one
  sample whose stack is its path from the root and whose weight is that value. Open it at
  speedscope.app or with ``npx speedscope FILE``.
- ``folded``: Brendan Gregg's folded stacks, ``frame;frame;frame value`` per line, for
  ``flamegraph.pl`` and ``inferno-flamegraph``; one metric (``--metric``, default as in the
  terminal report).
- ``perfetto``: the session's timeline window (``--timeline N``) as a Chrome trace (the JSON
  trace-event format that ui.perfetto.dev and chrome://tracing open): a process for the host with
  a track per thread (its ops, CUDA API calls and syncs), one for the sampled Python stacks, one
  per GPU with a track per stream, the steps, and a flow from each launch to the GPU work it
  queued. Each slice names its source line in its args.

Both hold raw totals over the profiled window (not per step), from the same tree the terminal
report shows (the run's :class:`~dlpt.analysis.view.SessionView`'s whole tree: library frames
folded unless ``show_all``), so the weights of all samples, or the values of all folded lines, sum
to the session's total of the metric.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

from dlpt._version import __version__
from dlpt.analysis.timeline import frame_label as line_label
from dlpt.analysis.view import SessionView, view_of
from dlpt.errors import UsageError
from dlpt.files.own_files import FOLDED_HEADER
from dlpt.files.safe_files import write_text_file
from dlpt.model.meta import program_argv
from dlpt.model.metrics import METRICS, Metric, default_metric, get_metric
from dlpt.model.render_limit import check_sessions
from dlpt.model.resume_names import display_name
from dlpt.model.session import Session
from dlpt.model.tree import Node, walk

__all__ = ["FORMATS", "frame_label", "speedscope", "folded", "perfetto", "write_export"]

FORMATS = ("speedscope", "folded", "perfetto")
SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"
_UNITS = {"ns": "nanoseconds", "bytes": "bytes", "count": "none"}


def _printable(s: str) -> str:
    return "".join(c if c.isprintable() else " " for c in s)


def frame_label(node: Node) -> str:
    """How a node is named in an export: ``file.py:12 function`` for source lines (what the
    terminal shows first), ``scope "name"`` for scopes, the name for everything else."""
    if node.kind == "frame":
        return _printable(f"{os.path.basename(node.file) or node.file}:{node.line} {display_name(node.name)}")
    if node.kind == "scope":
        return _printable(f'scope "{node.name}"')
    if node.kind == "root":
        return "<root>"
    return _printable(node.name)


def _paths(root: Node, metric: Metric) -> Iterator[tuple[list[Node], int]]:
    """(path below the root, self value) of every node with a self value of ``metric``; the
    root's own value, if any, comes with an empty path."""
    path: list[Node] = []
    for node, depth in walk(root):
        del path[max(depth - 1, 0) :]
        if depth > 0:
            path.append(node)
        v = metric(node.metrics)
        if v > 0:
            yield list(path), v


def _program(session: Session) -> str:
    return " ".join(program_argv(session.meta)) or "dlpt profile"


def speedscope(
    source: Session | SessionView, metric: str | Metric | None = None, show_all: bool | None = None
) -> dict[str, Any]:
    """The speedscope file of a session or of the run's view of it (``show_all`` None: as the
    view is): one profile per metric with a non-zero total; ``metric`` (default: GPU time if
    any, else CPU op time) is the one speedscope opens."""
    sv = view_of(source, show_all)
    session, root = sv.session, sv.whole
    first = get_metric(metric) if metric is not None else default_metric(root)
    frames: list[dict[str, Any]] = []
    index: dict[tuple[str, str, int], int] = {}

    def frame_of(node: Node) -> int:
        key = (frame_label(node), node.file, node.line)
        i = index.get(key)
        if i is None:
            i = index[key] = len(frames)
            f: dict[str, Any] = {"name": key[0]}
            if node.kind == "frame" and node.file:
                f.update(file=node.file, line=node.line)
            frames.append(f)
        return i

    profiles: list[dict[str, Any]] = []
    active = 0
    for m in METRICS.values():
        total = m(root.inclusive)
        if total <= 0:
            continue
        if m.name == first.name:
            active = len(profiles)
        samples, weights = [], []
        for path, v in _paths(root, m):
            # Work recorded on the root itself (no context at all) gets a frame of its own.
            samples.append([frame_of(n) for n in path] if path else [frame_of(root)])
            weights.append(v)
        profiles.append(
            {
                "type": "sampled",
                "name": m.label,
                "unit": _UNITS[m.unit],
                "startValue": 0,
                "endValue": total,
                "samples": samples,
                "weights": weights,
            }
        )
    return {
        "$schema": SPEEDSCOPE_SCHEMA,
        # Right after the schema: how dlpt recognises its own export before replacing a file
        # (dlpt.files.own_files), whatever the length of the name.
        "exporter": f"dlpt {__version__}",
        "name": _program(session),
        "activeProfileIndex": active,
        "profiles": profiles,
        "shared": {"frames": frames},
    }


def folded(
    source: Session | SessionView, metric: str | Metric | None = None, show_all: bool | None = None
) -> str:
    """Folded stacks of a session or of the run's view of it for one metric: ``a;b;c value`` per
    distinct stack (in tree order), integer values. Semicolons inside names would split frames,
    so they become commas."""
    root = view_of(source, show_all).whole
    m = get_metric(metric) if metric is not None else default_metric(root)
    lines: dict[str, int] = {}
    for path, v in _paths(root, m):
        stack = ";".join(frame_label(n).replace(";", ",") for n in path) if path else "<root>"
        lines[stack] = lines.get(stack, 0) + v
    # The header marks the file as dlpt's (dlpt.files.own_files): only it may be replaced.
    return FOLDED_HEADER + "".join(f"{stack} {v}\n" for stack, v in lines.items())


_HOST_PID, _PYTHON_PID, _GPU_PID = 1, 2, 100


def _us(ns: int) -> float:
    return ns / 1000.0


def perfetto(source: Session | SessionView) -> dict[str, Any]:
    """The Chrome trace (trace-event JSON) of the timeline window of a session or of the run's
    view of it; UsageError when the session holds none."""
    sv = view_of(source)
    session, view = sv.session, sv.timeline
    if view is None:
        raise UsageError("the session holds no timeline: profile with --timeline N to keep one")
    pid = (
        session.meta.get("capture", {}).get("pid", 0) if isinstance(session.meta.get("capture"), dict) else 0
    )
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": _HOST_PID, "args": {"name": f"host (pid {pid})"}},
        {"ph": "M", "name": "process_sort_index", "pid": _HOST_PID, "args": {"sort_index": 0}},
        {"ph": "M", "name": "process_name", "pid": _PYTHON_PID, "args": {"name": "Python stacks (sampled)"}},
        {"ph": "M", "name": "process_sort_index", "pid": _PYTHON_PID, "args": {"sort_index": 1}},
    ]
    where: list[tuple[int, int]] = []
    gpus: set[int] = set()
    for lane in view.lanes:
        if lane.kind == "stream":
            p, t, name = _GPU_PID + lane.device, lane.stream, f"stream {lane.stream}"
            gpus.add(lane.device)
        elif lane.kind == "steps":
            p, t, name = _HOST_PID, 0, "steps"
        else:
            p, t, name = (_PYTHON_PID if lane.kind == "python" else _HOST_PID), lane.tid, lane.name
        where.append((p, t))
        events.append(
            {"ph": "M", "name": "thread_name", "pid": p, "tid": t, "args": {"name": _printable(name)}}
        )
    for d in sorted(gpus):
        events.append({"ph": "M", "name": "process_name", "pid": _GPU_PID + d, "args": {"name": f"GPU {d}"}})
        events.append(
            {"ph": "M", "name": "process_sort_index", "pid": _GPU_PID + d, "args": {"sort_index": 2 + d}}
        )
    for s in view.slices:
        p, t = where[s.lane]
        args: dict[str, Any] = {"kind": s.kind}
        if s.line is not None:
            args.update(line=line_label(s.line), file=s.line.file, lineno=s.line.line, function=s.line.name)
        if s.corr:
            args["correlation"] = s.corr
        if s.gil is not None:
            args["gil_share"] = round(s.gil, 3)
        events.append(
            {
                "ph": "X",
                "name": _printable(s.name),
                "cat": s.kind,
                "ts": _us(s.start_ns),
                "dur": _us(s.dur_ns),
                "pid": p,
                "tid": t,
                "args": args,
            }
        )
    for f in view.flows:
        launch, work = view.slices[f.launch], view.slices[f.work]
        lp, lt = where[launch.lane]
        wp, wt = where[work.lane]
        events.append(
            {
                "ph": "s",
                "id": f.corr,
                "name": "launch",
                "cat": "launch",
                "ts": _us(launch.start_ns),
                "pid": lp,
                "tid": lt,
            }
        )
        events.append(
            {
                "ph": "f",
                "bp": "e",
                "id": f.corr,
                "name": "launch",
                "cat": "launch",
                "ts": _us(work.start_ns),
                "pid": wp,
                "tid": wt,
            }
        )
    return {
        # First, the exporter first: dlpt knows the file as its own from its start (own_files).
        "otherData": {
            "exporter": f"dlpt {__version__}",
            "program": _program(session),
            "steps": view.steps_kept,
            "steps_requested": view.steps_requested,
            "events_dropped": view.dropped,
        },
        "traceEvents": events,
        "displayTimeUnit": "ns",
    }


def write_export(
    source: Session | SessionView,
    fmt: str,
    path: str | os.PathLike[str],
    metric: str | Metric | None = None,
    show_all: bool | None = None,
    *,
    force: bool = False,
) -> None:
    """Write the ``fmt`` export of a session or of the run's view of it to ``path`` atomically
    (an existing file only if dlpt wrote it, or with ``force``: dlpt.files.safe_files). Every
    export is made of at most dlpt.model.render_limit's nodes and timeline events."""
    session = source.session if isinstance(source, SessionView) else source
    check_sessions(f"a {fmt} export", session)
    if fmt == "speedscope":
        text = (
            json.dumps(speedscope(source, metric, show_all), separators=(",", ":"), ensure_ascii=True) + "\n"
        )
    elif fmt == "folded":
        text = folded(source, metric, show_all)
    elif fmt == "perfetto":
        text = json.dumps(perfetto(source), separators=(",", ":"), ensure_ascii=True) + "\n"
    else:
        raise UsageError(f"unknown export format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    write_text_file(path, text, f"{fmt} exports", force=force)
