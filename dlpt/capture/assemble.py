"""Assemble a :class:`~dlpt.model.session.Session` from what one profile recorded
(:class:`RawCapture`: the native core's node table and counters, the step window, the meta
known at start) and what its recorders contribute (:mod:`dlpt.capture.recorder`:
memory, host samples and the timeline, communication, compile events and failures, ``step_on``,
PC samples), with the saved source text and what the profile knows about the process (versions,
devices, threads still running).

With ``--flops``, the work of each op (``m.flops``, ``m.mem_bytes``, ``x.flop_dtype``) and its
summary (``meta.flops``) are worked out here from the input signatures the core recorded
(:mod:`dlpt.capture.flops.annotate`).

The meta keys are documented in docs/session-format.md; this module writes them, each capture
source its own (:mod:`dlpt.capture.recorders`), and :func:`dlpt.finish.finish_session`
the two that need the finished session (``meta.suggestions`` and ``meta.host_link_probe``).
"""

from __future__ import annotations

import datetime
import os
import platform
import sys
import threading
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dlpt._version import __version__
from dlpt.capture import native
from dlpt.capture.compile.inductor_lines import map_generated_frames
from dlpt.capture.exec_frames import mark_library_exec_frames
from dlpt.capture.flops.annotate import annotate
from dlpt.capture.recorder import Recorder
from dlpt.capture.source_text import collect_sources
from dlpt.model.session import Session

__all__ = ["RawCapture", "start_meta", "gpu_meta", "build_session", "threads_running"]


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


def gpu_meta(gpu: bool, have_devices: bool, start_info: Mapping[str, Any]) -> dict[str, Any]:
    """``meta.gpu``: whether GPU capture ran and why not (``gpu``: it was asked for;
    ``start_info``: what the native core's start said), warned about when it was asked for."""
    if not gpu:
        reason = "GPU capture disabled (gpu=False / --no-gpu)"
    elif not have_devices:
        reason = "no CUDA GPU available"
    else:
        reason = start_info["reason"]
        if reason:
            warnings.warn(
                f"dlpt: GPU capture is off, CPU-side attribution only: {reason}",
                RuntimeWarning,
                stacklevel=4,
            )
    return {
        "enabled": bool(start_info["gpu"]),
        "reason": reason,
        "cupti": start_info.get("cupti_path") or None,
    }


def threads_running() -> list[str]:
    """Names of the non-daemon threads other than this one still running: work they do after the
    profile stops is not in it (the interpreter waits for such threads before exiting)."""
    me = threading.current_thread()
    return [t.name for t in threading.enumerate() if t is not me and not t.daemon and t.is_alive()]


@dataclass(frozen=True)
class RawCapture:
    """What a stopped profile hands to :func:`build_session` besides its recorders: the
    native core's ``stop()`` (``raw``), the meta known at start (:func:`start_meta` plus the
    profile's own keys: gpu), the step window the schedule measured, how long the stop took,
    and two options: ``keep_source_text`` (save the profiled lines' text) and ``flops`` (the core
    recorded op input signatures: ``raw["op_inputs"]``)."""

    raw: dict[str, Any]
    start: dict[str, Any]
    steps: dict[str, Any]
    step_wall_ns: list[int]
    wall_ns: int
    stop_s: float
    step_time: dict[str, Any] = field(default_factory=dict)
    keep_source_text: bool = True
    flops: bool = False


def build_session(capture: RawCapture, recorders: Sequence[Recorder] = ()) -> Session:
    """The session of a stopped profile: what the core recorded (``capture``), with what each
    recorder contributes (:mod:`dlpt.capture.recorder`: into the core's table, into
    the nodes after line mapping, into the meta, into the built session)."""
    raw, flops = capture.raw, capture.flops
    c = raw["counters"]
    table = native.node_table(raw["nodes"], raw.get("collectives"), raw.get("collectives_outside")).nodes
    for recorder in recorders:  # by the core's node ids: before line mapping renumbers them
        recorder.into_table(table, raw)
    # Before line mapping renumbers the nodes: op_inputs name nodes by the core's ids. The work
    # of counted epochs is the summary (meta.flops); that of the others goes on ``o``.
    work = annotate(table, raw.get("op_inputs") or []) if flops else None
    if flops and raw.get("op_inputs_outside"):
        annotate(table, raw["op_inputs_outside"], field="o")
    mapped = map_generated_frames(table)
    nodes = mark_library_exec_frames(mapped.nodes)
    for recorder in recorders:  # communication marked (dlpt.capture.recorders.Collectives), ...
        recorder.into_nodes(nodes)
    meta = dict(capture.start)
    if work is not None:
        meta["flops"] = work
    if raw.get("gpu_steps"):
        meta["gpu_steps"] = native.gpu_steps(raw["gpu_steps"])
    collectives = native.gpu_collectives(
        raw.get("gpu_collectives") or [], raw.get("gpu_collectives_over_limit", 0)
    )
    if collectives is not None:
        meta["gpu_collectives"] = collectives
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
            "wall_ns": capture.wall_ns,
            "steps": dict(capture.steps),
            "step_wall_ns": list(capture.step_wall_ns),
            "step_time": capture.step_time,
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
                op_mode=raw["op_mode"],
                stop_s=capture.stop_s,
                pid=os.getpid(),
                inductor_unmapped_frames=mapped.unmapped_frames,
                inductor_unmapped_kernels=mapped.unmapped_kernels,
                **({"folded_names": dict(raw["folded_names"])} if raw.get("folded_names") else {}),
            ),
            "threads_running": threads_running(),
            "sources": collect_sources(nodes) if capture.keep_source_text else {},
        }
    )
    for recorder in recorders:  # after the assembly's own keys: recorders add to meta.capture and meta.steps
        recorder.into_meta(meta)
    session = Session(nodes, meta)
    for recorder in recorders:
        recorder.into_session(session)
    return session
