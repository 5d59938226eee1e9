"""The session's timeline window (``--timeline N``) as a Chrome trace (the JSON trace-event format
that ui.perfetto.dev and chrome://tracing open): a process for the host with a track per thread
(its ops, CUDA API calls and syncs), one for the sampled Python stacks, one per GPU with a track
per stream, the steps, and a flow from each launch to the GPU work it queued. Each slice names
its source line in its args."""

from __future__ import annotations

from typing import Any

from dlpt._version import __version__
from dlpt.errors import UsageError
from dlpt.model.session import Session
from dlpt.renderers.exports.stacks import printable, program_name
from dlpt.views.run import RunView, TimelineView, view_of
from dlpt.views.run import frame_label as line_label

__all__ = ["perfetto"]

_HOST_PID, _PYTHON_PID, _GPU_PID = 1, 2, 100


def _us(ns: int) -> float:
    return ns / 1000.0


def perfetto(source: Session | RunView) -> dict[str, Any]:
    """The Chrome trace (trace-event JSON) of the timeline window of a session or of the run's
    view of it; UsageError when the session holds none."""
    sv = view_of(source)
    session, view = sv.session, sv.timeline
    if view is None:
        raise UsageError("the session holds no timeline: profile with --timeline N to keep one")
    capture = session.typed_meta.capture
    pid = capture.pid if capture is not None and capture.pid is not None else 0
    where, lanes = _lanes(view)
    events = [*_processes(pid, lanes), *_slices(view, where), *_flows(view, where)]
    return {
        # First, the exporter first: dlpt knows the file as its own from its start (own_files).
        "otherData": {
            "exporter": f"dlpt {__version__}",
            "program": program_name(session),
            "steps": view.steps_kept,
            "steps_requested": view.steps_requested,
            "events_dropped": view.dropped,
        },
        "traceEvents": events,
        "displayTimeUnit": "ns",
    }


def _lanes(view: TimelineView) -> tuple[list[tuple[int, int]], list[dict[str, Any]]]:
    """Each lane's (process, thread) in the trace, and the events naming the lanes' threads and
    the GPUs' processes."""
    where: list[tuple[int, int]] = []
    events: list[dict[str, Any]] = []
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
            {"ph": "M", "name": "thread_name", "pid": p, "tid": t, "args": {"name": printable(name)}}
        )
    for d in sorted(gpus):
        events.append({"ph": "M", "name": "process_name", "pid": _GPU_PID + d, "args": {"name": f"GPU {d}"}})
        events.append(
            {"ph": "M", "name": "process_sort_index", "pid": _GPU_PID + d, "args": {"sort_index": 2 + d}}
        )
    return where, events


def _processes(pid: int, lanes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The host's and the Python stacks' processes, then the lanes' threads and GPUs."""
    return [
        {"ph": "M", "name": "process_name", "pid": _HOST_PID, "args": {"name": f"host (pid {pid})"}},
        {"ph": "M", "name": "process_sort_index", "pid": _HOST_PID, "args": {"sort_index": 0}},
        {"ph": "M", "name": "process_name", "pid": _PYTHON_PID, "args": {"name": "Python stacks (sampled)"}},
        {"ph": "M", "name": "process_sort_index", "pid": _PYTHON_PID, "args": {"sort_index": 1}},
        *lanes,
    ]


def _slices(view: TimelineView, where: list[tuple[int, int]]) -> list[dict[str, Any]]:
    """One complete event per slice, its source line, correlation and GIL share in its args."""
    events = []
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
                "name": printable(s.name),
                "cat": s.kind,
                "ts": _us(s.start_ns),
                "dur": _us(s.dur_ns),
                "pid": p,
                "tid": t,
                "args": args,
            }
        )
    return events


def _flows(view: TimelineView, where: list[tuple[int, int]]) -> list[dict[str, Any]]:
    """A flow from each launch to the GPU work it queued: its start and its end."""
    events = []
    for f in view.flows:
        launch, work = view.slices[f.launch], view.slices[f.work]
        lp, lt = where[launch.lane]
        wp, wt = where[work.lane]
        common = {"id": f.corr, "name": "launch", "cat": "launch"}
        events.append({"ph": "s", **common, "ts": _us(launch.start_ns), "pid": lp, "tid": lt})
        events.append({"ph": "f", "bp": "e", **common, "ts": _us(work.start_ns), "pid": wp, "tid": wt})
    return events
