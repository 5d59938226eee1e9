"""A session assembled (dlpt.capture.assemble) from a capture that ended epochs: counted work in the
main tree, once-work in the ``<outside steps>`` subtree with the same calling contexts; it passes
the session schema after a save and a load, and the report and HTML page render it."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import torch
from rich.console import Console

from dlpt.capture.assemble import build_session, start_meta
from dlpt.capture.native import OUTSIDE_STEPS, core
from dlpt.model.session import Session
from dlpt.renderers.html import render_html
from dlpt.renderers.terminal.report import render

C = core()


def train_step(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x @ x)


def evaluate(x: torch.Tensor) -> torch.Tensor:
    return torch.tanh(x)


def capture() -> dict[str, Any]:
    x = torch.ones(8, 8)
    C.start(False, [], True)
    evaluate(x)  # set-up before the first step: outside
    C.end_epoch(False)
    for _ in range(3):
        train_step(x)
        C.end_epoch(True)
    evaluate(x)  # after the last step boundary: the tail, outside
    return C.stop(last_counted=False)


def session_of(raw: dict[str, Any]) -> Session:
    return build_session(
        raw,
        {**start_meta(gpu=False), "gpu": {"enabled": False, "reason": "test", "cupti": None}, "compile": []},
        steps={"profiled": 3, "seen": 3, "skip_first": 0, "active": None, "source": "manual"},
        step_wall_ns=[1, 1, 1],
        wall_ns=3,
        stop_s=0.0,
        failures_before={},
        sources=False,
        step_on_matched=None,
    )


def test_once_work_goes_under_outside_steps_and_step_work_stays_in_the_main_tree(tmp_path: Path) -> None:
    raw = capture()
    session = session_of(raw)
    nodes = session.nodes
    by_id = {n["id"]: n for n in nodes}
    top = [n for n in nodes if n["name"] == OUTSIDE_STEPS]
    assert len(top) == 1 and top[0]["parent"] == 0 and top[0]["kind"] == "phase"

    def under_top(n: dict) -> bool:
        while n["parent"] >= 0:
            if n["id"] == top[0]["id"]:
                return True
            n = by_id[n["parent"]]
        return False

    def calls(name: str, outside: bool) -> int:
        return sum(n["m"].get("calls", 0) for n in nodes if n["name"] == name and under_top(n) == outside)

    assert (calls("aten::matmul", False), calls("aten::matmul", True)) == (3, 0)
    assert (calls("aten::relu", False), calls("aten::relu", True)) == (3, 0)
    assert (calls("aten::tanh", False), calls("aten::tanh", True)) == (0, 2)
    # the same calling context: evaluate's line under <outside steps> as in the main tree
    evaluate_frames = {(n["file"], n["line"], under_top(n)) for n in nodes if n["name"] == "evaluate"}
    assert {(f, line) for f, line, out in evaluate_frames if out} <= {
        (f, line) for f, line, out in evaluate_frames if not out
    }
    # parents before children, ids are indices (the session format's rules)
    assert all(n["id"] == i and n["parent"] < n["id"] for i, n in enumerate(nodes))
    path = tmp_path / "s.json"
    session.save(path)
    loaded = Session.load(path)
    assert loaded.nodes == session.nodes
    out = io.StringIO()
    Console(file=out, width=120, color_system=None).print(render(loaded, view="all", threshold=0.0))
    assert "<outside steps>" in out.getvalue()
    assert "outside steps" in render_html(loaded)  # (its JSON data escapes "<")


def test_gpu_busy_outside_is_kept_in_meta_when_not_zero() -> None:
    raw = capture()
    raw["gpu_busy_ns"] = {"0": 700}
    raw["gpu_busy_outside_ns"] = {"0": 300}
    meta = session_of(raw).meta
    assert meta["gpu_busy_ns"] == {"0": 700} and meta["gpu_busy_outside_ns"] == {"0": 300}
    raw["gpu_busy_outside_ns"] = {"0": 0}
    assert "gpu_busy_outside_ns" not in session_of(raw).meta
