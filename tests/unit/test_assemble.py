"""What the profiler writes, the loader reads: a session assembled (dlpt.capture.assemble) from everything
the native core's stop() returns (GPU steps, communication time, collectives, every capture
counter, and with ``--flops`` the work per op and the suggestions added at stop) passes the
session schema after a save and a load, and every output renders it."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from rich.console import Console

from dlpt.analysis.diff import diff_sessions
from dlpt.capture.assemble import RawCapture, build_session, start_meta
from dlpt.capture.recorders import Collectives, CompileEvents
from dlpt.finish import finish_session
from dlpt.model.metrics import METRICS
from dlpt.model.schema import EXTRAS, SCHEMA
from dlpt.model.session import Session
from dlpt.renderers.exports import folded, speedscope
from dlpt.renderers.html import render_html
from dlpt.renderers.terminal.diff import render_diff
from dlpt.renderers.terminal.report import VIEWS, render
from dlpt.views.diff import DiffView

# What csrc/bindings.cpp puts in stop()["counters"] (RawMetrics order: calls, cpu_ns, gpu_ns,
# completed, bytes, sync_ns, api_ns, min_ns, max_ns).
COUNTERS: dict[str, Any] = {
    "activity_records": 40,
    "delivered_gpu_ns": 9_000,
    "dropped_records": 0,
    "unknown_correlation": 0,
    "unknown_gpu_ns": 0,
    "submitted": 3,
    "completed": 3,
    "outside_window": 1,
    "backward_unresolved": 0,
    "code_lost": 0,
    "graph_nodes_captured": 0,
    "graph_replay_ns": 0,
    "graph_unmapped_ns": 0,
    "tree_overflow": 0,
    "unmatched_op_ends": 0,
    "rf_windows": 2,
    "op_records": 12,
    "api_callbacks": 6,
    "self_ns": 40_000,
    "self_python_ns": 10_000,
    "self_window_ns": 5_000,
    "self_api_ns": 20_000,
    "tsc": True,
    "cupti_unsubscribe_error": "CUPTI_ERROR_NOT_INITIALIZED",
}


def _raw(script: str) -> dict[str, Any]:
    k_nccl = (0, 0, 7_000, 1, 0, 0, 0, 7_000, 7_000)
    k_gemm = (0, 0, 2_000, 1, 0, 0, 0, 2_000, 2_000)
    nodes = [
        (0, -1, "root", "<root>", "", 0, (0,) * 9, {}),
        (1, 0, "frame", "main", script, 2, (0,) * 9, {}),
        (2, 1, "op", "c10d::allreduce_", "", 0, (1, 5_000, 0, 0, 0, 0, 800, 0, 0), {}),
        (3, 2, "kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "", 0, k_nccl, {"grid": (2, 1, 1)}),
        (4, 1, "op", "aten::mm", "", 0, (1, 3_000, 0, 0, 0, 0, 400, 0, 0), {}),
        (5, 4, "kernel", "void gemm<float>(float*)", "", 0, k_gemm, {"device": 0}),
    ]
    collective = {
        "collective": "allreduce",
        "dtype": "Float",
        "pg_name": "0",
        "pg_desc": "default_pg",
        "world_size": 8,
        "calls": 1,
        "in_bytes": 4096,
        "out_bytes": 4096,
    }
    return {
        "nodes": nodes,
        "collectives": {2: collective},
        # aten::mm's input signature (core node id 4): a 4x8 by 8x16 fp32 matmul, three calls.
        "op_inputs": [(4, '[["T",["Float",[4,8]]],["T",["Float",[8,16]]]]', 3)],
        "api": [("cudaLaunchKernel_v7000", 2, 900, 400, 500)],
        "gpu_busy_ns": {"0": 9_000},
        "gpu_comm_ns": {"0": 7_000},
        "gpu_comm_exposed_ns": {"0": 5_000},
        # (start, end, recorded, busy, first, last, carried_until) per step interval; a clock
        # step backwards (end < start) must not write a negative span.
        "gpu_steps": {
            "0": [(100, 20_100, True, 9_000, 1_000, 19_000, 0), (20_100, 20_000, True, 0, 0, 0, 0)],
        },
        "counters": dict(COUNTERS),
        "gpu": True,
        "op_mode": "lean",
        "flush_s": 0.01,
    }


def _session(tmp_path: Path, flops: bool = True) -> Session:
    """What dlpt.profile(flops=flops).stop() makes of _raw(): build_session, then the stop step
    (no probe: the raw data's GPU is not this machine's)."""
    script = tmp_path / "train.py"
    script.write_text("import torch\ntorch.distributed.all_reduce(x)\ny = x @ x\n")
    start = {**start_meta(gpu=False), "gpu": {"enabled": True, "reason": None, "cupti": None}, "compile": []}
    capture = RawCapture(
        _raw(str(script)),
        start,
        steps={"profiled": 1, "seen": 1, "skip_first": 0, "active": None, "source": "optimizer"},
        step_wall_ns=[20_000],
        wall_ns=20_000,
        stop_s=0.02,
        keep_source_text=True,
        flops=flops,
    )
    # The sources every profile has that contribute without hooking (nothing was wrapped).
    session = build_session(capture, [Collectives(), CompileEvents()])
    finish_session(session, probe=False)
    return session


def test_every_key_the_profiler_writes_loads_back(tmp_path: Path) -> None:
    session = _session(tmp_path)
    meta = session.meta
    assert meta["gpu_comm_ns"] == {"0": 7_000} and meta["gpu_comm_exposed_ns"] == {"0": 5_000}
    assert [s["span_ns"] for s in meta["gpu_steps"]["0"]] == [20_000, 0]
    assert meta["capture"]["cupti_unsubscribe_error"] and meta["capture"]["tsc"] is True
    assert meta["sources"][str(tmp_path / "train.py")]["2"] == "torch.distributed.all_reduce(x)"
    coll = session.nodes[2]
    assert coll["x"]["collective"] == "allreduce" and coll["m"]["comm_in_bytes"] == 4096
    mm = session.nodes[4]
    assert mm["name"] == "aten::mm" and mm["m"]["flops"] == 3 * 2 * 4 * 8 * 16
    assert mm["x"]["flop_dtype"] == "Float" and mm["m"]["mem_bytes"] == 3 * (32 + 128 + 64) * 4
    assert meta["flops"] == {"ops": 1, "flops": 3 * 1024, "unevaluated": {}}
    assert isinstance(meta["suggestions"], list)
    # The schema types every key the profiler writes that a reader relies on.
    assert {"gpu_comm_ns", "gpu_comm_exposed_ns", "gpu_steps", "capture", "sources"} <= set(SCHEMA)
    assert {"flops", "suggestions", "host_link_probe"} <= set(SCHEMA) and "flop_dtype" in EXTRAS
    path = tmp_path / "s.json"
    session.save(path)
    loaded = Session.load(path)
    assert loaded.meta == session.meta and loaded.nodes == session.nodes


def test_without_flops_no_work_is_written(tmp_path: Path) -> None:
    session = _session(tmp_path, flops=False)
    assert "flops" not in session.meta
    assert not any(
        "flops" in n["m"] or "mem_bytes" in n["m"] or "flop_dtype" in n.get("x", {}) for n in session.nodes
    )


def test_every_output_renders_it(tmp_path: Path) -> None:
    session = _session(tmp_path)
    out = io.StringIO()
    console = Console(file=out, width=140, color_system=None)
    for view in VIEWS:
        console.print(render(session, view=view, threshold=0.0, verbose=True))
    console.print(render_diff(DiffView(diff_sessions(session, session, "a.json", "b.json"), METRICS["gpu"])))
    text = out.getvalue()
    assert "train.py:2 main" in text and "ncclDevKernel" in text
    assert "profiling: dlpt's own callbacks took" in text
    assert '"format":"dlpt-html-model"' in render_html(session)
    assert folded(session).strip() and speedscope(session)["profiles"]


def test_a_collective_run_only_outside_the_steps_still_says_what_it_is() -> None:
    # DDP's initial parameter broadcast runs before the first counted step: its signature comes
    # from the record of the other epochs, its bytes go on ``o``, nothing on ``m``.
    from dlpt.capture.native import _NO_METRICS, RawMetrics, node_table

    calls = RawMetrics(1, 5_000, 0, 0, 0, 0, 0, 0, 0)
    raw: list = [
        (0, -1, "root", "<root>", "", 0, _NO_METRICS, _NO_METRICS, {}),
        (1, 0, "op", "c10d::broadcast_", "", 0, _NO_METRICS, calls, {}),
    ]
    sig = {
        "collective": "broadcast",
        "dtype": "Float",
        "pg_name": "0",
        "pg_desc": "default_pg",
        "world_size": 2,
        "calls": 1,
        "in_bytes": 4096,
        "out_bytes": 4096,
    }
    (_, op) = node_table(raw, {}, {1: sig}).nodes  # type: ignore[arg-type]
    assert op["x"]["collective"] == "broadcast" and op["x"]["dtype"] == "Float"
    assert op["m"] == {} and op["o"]["comm_in_bytes"] == 4096 and op["o"]["calls"] == 1


def test_an_ops_floor_is_its_calls_times_its_fastest_call_on_the_node_its_time_is_on() -> None:
    # An outermost op: calls on the op, its self time and fastest call on its <forward> phase.
    # A backward op: all three on itself. The <backward> phase (the engine wrapper's time, once
    # per backward node) and frames get none. Counted (m) and outside (o) each by their own.
    from dlpt.capture.native import _NO_METRICS, FLOOR_KEY, RawMetrics, node_table

    def m(calls: int, cpu: int, fastest: int) -> RawMetrics:
        return RawMetrics(calls, cpu, 0, 0, 0, 0, 0, fastest, 0)

    raw: list = [
        (0, -1, "root", "<root>", "", 0, _NO_METRICS, _NO_METRICS, {}),
        (1, 0, "frame", "f", "/p/x.py", 3, _NO_METRICS, _NO_METRICS, {}),
        (2, 1, "op", "aten::mm", "", 0, m(10, 0, 0), m(2, 0, 0), {}),
        (3, 2, "phase", "<forward>", "", 0, m(0, 900, 40), m(0, 300, 100), {}),
        (4, 2, "phase", "<backward>", "", 0, m(0, 500, 30), _NO_METRICS, {}),
        (5, 4, "op", "MmBackward0", "", 0, m(10, 700, 50), _NO_METRICS, {}),
        (6, 1, "op", "aten::add", "", 0, m(3, 0, 0), _NO_METRICS, {}),
        (7, 6, "phase", "<forward>", "", 0, m(0, 9, 4), _NO_METRICS, {}),  # floor above its time
    ]
    nodes = node_table(raw).nodes
    assert nodes[3]["m"][FLOOR_KEY] == 10 * 40 and nodes[3]["o"][FLOOR_KEY] == 2 * 100
    assert nodes[5]["m"][FLOOR_KEY] == 10 * 50
    assert FLOOR_KEY not in nodes[4]["m"] and FLOOR_KEY not in nodes[2]["m"]
    assert nodes[7]["m"][FLOOR_KEY] == 9  # never above the time it is the floor of
