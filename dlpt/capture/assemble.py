"""Assemble a :class:`~dlpt.model.session.Session` from what one profile recorded: the native core's
node table and counters, the step window, compile events and failures, the saved source text,
and what the profile knows about the process (versions, devices, threads still running).

With ``--flops``, the work of each op (``m.flops``, ``m.mem_bytes``, ``x.flop_dtype``) and its
summary (``meta.flops``) are worked out here from the input signatures the core recorded
(:mod:`dlpt.capture.flops.annotate`).

The meta keys are documented in docs/session-format.md; this module is their single writer, but
for the two that :func:`dlpt.finish.finish_session` adds to the finished session
(``meta.suggestions`` and ``meta.host_link_probe``: they need the whole session).
"""

from __future__ import annotations

import datetime
import os
import platform
import sys
import threading
from collections.abc import Sequence
from typing import Any

from dlpt._version import __version__
from dlpt.capture import native
from dlpt.capture.compile import failures
from dlpt.capture.compile.inductor_lines import map_generated_frames
from dlpt.capture.exec_frames import mark_library_exec_frames
from dlpt.capture.flops.annotate import annotate
from dlpt.capture.host_session import add_host_metrics, host_meta
from dlpt.capture.memory import MemoryCapture, merge_into
from dlpt.capture.ranks.annotate import annotate_comm
from dlpt.capture.sources import collect_sources
from dlpt.capture.timeline import timeline_meta
from dlpt.model.session import Session

__all__ = ["start_meta", "build_session", "threads_running"]


def _cuda_devices() -> list[dict[str, Any]]:
    import torch

    if not torch.cuda.is_available():
        return []
    out = []
    for i in range(torch.cuda.device_count()):
        p = torch.cuda.get_device_properties(i)
        out.append({"index": i, "name": p.name, "capability": f"{p.major}.{p.minor}"})
    return out


def start_meta(gpu: bool) -> dict[str, Any]:
    """What is known when the profile starts (argv, versions, devices when ``gpu``)."""
    import torch

    return {
        "argv": list(sys.argv),
        "cwd": os.getcwd(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "dlpt": __version__,
        "started_at": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "devices": _cuda_devices() if gpu else [],
    }


def threads_running() -> list[str]:
    """Names of the non-daemon threads other than this one still running: work they do after the
    profile stops is not in it (the interpreter waits for such threads before exiting)."""
    me = threading.current_thread()
    return [t.name for t in threading.enumerate() if t is not me and not t.daemon and t.is_alive()]


def build_session(
    raw: dict[str, Any],
    start: dict[str, Any],
    *,
    steps: dict[str, Any],
    step_time: dict[str, Any] | None = None,
    step_wall_ns: list[int],
    wall_ns: int,
    stop_s: float,
    failures_before: dict[str, int],
    sources: bool,
    step_on_matched: list[str] | None,
    flops: bool = False,
    comm_signatures: Sequence[dict[str, Any]] = (),
    distributed: dict[str, Any] | None = None,
    memory: tuple[MemoryCapture, Any] | None = None,
    host: dict[str, Any] | None = None,
) -> Session:
    """The session of a stopped profile: ``raw`` is what the native core's stop() returned,
    ``start`` the meta from :func:`start_meta` plus the profile's own keys (gpu, compile),
    ``failures_before`` the compile-integration failure counts when the profile started,
    ``flops`` whether the core recorded op input signatures (``raw["op_inputs"]``),
    ``comm_signatures`` what the wrapped Python collectives moved (dlpt.capture.ranks.pycomm) and
    ``distributed`` this rank's place in the job (dlpt.capture.ranks.env), if it is one of several,
    ``memory`` the memory capture and what it recorded (dlpt.capture.memory), when it ran, and
    ``host`` what the host sampler and the timeline window recorded (dlpt.capture.host)."""
    c = raw["counters"]
    table = native.node_table(raw["nodes"], raw.get("collectives"), raw.get("collectives_outside")).nodes
    if memory is not None:
        merge_into(table, memory[1])  # by the core's node ids, before line mapping renumbers
    # Host time and the timeline name the core's node ids: taken in before renumbering.
    host_info: dict[str, Any] | None = None
    timeline: dict[str, Any] | None = None
    if host is not None:
        add_host_metrics(table, host.get("cells") or [], host.get("cells_outside") or [])
        host_info = host_meta(table, host)
        if host.get("timeline"):
            timeline = timeline_meta(
                table, host["timeline"], host.get("thread_names") or {}, bool(raw.get("gpu"))
            )
    # Before line mapping renumbers the nodes: op_inputs name nodes by the core's ids. The work
    # of counted epochs is the summary (meta.flops); that of the others goes on ``o``.
    work = annotate(table, raw.get("op_inputs") or []) if flops else None
    if flops and raw.get("op_inputs_outside"):
        annotate(table, raw["op_inputs_outside"], field="o")
    mapped = map_generated_frames(table)
    # Communication kernels and collective calls marked (comm_ns, comm_wait_ns, bytes).
    nodes = annotate_comm(mark_library_exec_frames(mapped.nodes), comm_signatures)
    meta = dict(start)
    if work is not None:
        meta["flops"] = work
    if distributed is not None:
        meta["distributed"] = distributed
    if memory is not None:
        meta["memory"] = memory[0].meta(memory[1])
    if host_info is not None:
        meta["host"] = host_info
    if timeline is not None:
        meta["timeline"] = timeline
    if raw.get("gpu_steps"):
        meta["gpu_steps"] = native.gpu_steps(raw["gpu_steps"])
    if any((raw.get("gpu_busy_outside_ns") or {}).values()):
        # GPU busy time outside counted epochs' step intervals (meta.gpu_busy_ns: inside them).
        meta["gpu_busy_outside_ns"] = dict(raw["gpu_busy_outside_ns"])
    if raw.get("gpu_comm_ns"):
        # Collective-communication kernels (NCCL): their busy time per device, and the part of
        # it with no other GPU work running on that device (exposed).
        meta["gpu_comm_ns"] = dict(raw["gpu_comm_ns"])
        meta["gpu_comm_exposed_ns"] = dict(raw["gpu_comm_exposed_ns"])
    meta.update(
        {
            "wall_ns": wall_ns,
            "steps": steps,
            "step_wall_ns": step_wall_ns,
            "step_time": step_time or {},
            "gpu_busy_ns": dict(raw["gpu_busy_ns"]),
            "api": native.api_table(raw["api"]),
            "dropped": {
                "activity_records": c["dropped_records"],
                "correlations_missing": max(0, c["submitted"] - c["completed"]),
                "tree_overflow": c["tree_overflow"],
            },
            "unattributed": {"gpu_ns": c["unknown_gpu_ns"], "records": c["unknown_correlation"]},
            "cuda_graphs": {
                "replay_gpu_ns": c.get("graph_replay_ns", 0),
                "uncaptured_gpu_ns": c.get("graph_unmapped_ns", 0),
                "nodes_captured": c.get("graph_nodes_captured", 0),
            },
            "capture": dict(
                c,
                flush_s=raw["flush_s"],
                stop_s=stop_s,
                pid=os.getpid(),
                compile_failures=failures.since(failures_before),  # line-map failures included
                inductor_unmapped_frames=mapped.unmapped_frames,
                inductor_unmapped_kernels=mapped.unmapped_kernels,
            ),
            "threads_running": threads_running(),
            "sources": collect_sources(nodes) if sources else {},
        }
    )
    if step_on_matched is not None:
        meta["steps"]["step_on_matched"] = list(step_on_matched)
    return Session(nodes, meta)
