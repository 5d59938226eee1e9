"""A session assembled (dlpt.capture.assemble) from a capture that ended epochs: counted work in
each node's ``m``, once-work in its ``o`` (the same calling contexts); it passes the session schema
after a save and a load, and the report and HTML page render it apart."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import torch
from rich.console import Console

from dlpt.capture.assemble import RawCapture, build_session, start_meta
from dlpt.capture.native import core
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
        RawCapture(
            raw,
            {
                **start_meta(gpu=False),
                "gpu": {"enabled": False, "reason": "test", "cupti": None},
                "compile": [],
            },
            steps={"profiled": 3, "seen": 3, "skip_first": 0, "active": None, "source": "manual"},
            step_wall_ns=[1, 1, 1],
            wall_ns=3,
            stop_s=0.0,
            keep_source_text=False,
        )
    )


def test_once_work_goes_to_o_and_step_work_stays_in_m(tmp_path: Path) -> None:
    raw = capture()
    session = session_of(raw)
    nodes = session.nodes

    def calls(name: str, field: str) -> int:
        return sum((n.get(field) or {}).get("calls", 0) for n in nodes if n["name"] == name)

    assert (calls("aten::matmul", "m"), calls("aten::matmul", "o")) == (3, 0)
    assert (calls("aten::relu", "m"), calls("aten::relu", "o")) == (3, 0)
    assert (calls("aten::tanh", "m"), calls("aten::tanh", "o")) == (0, 2)
    # parents before children, ids are indices (the session format's rules)
    assert all(n["id"] == i and n["parent"] < n["id"] for i, n in enumerate(nodes))
    path = tmp_path / "s.json"
    session.save(path)
    loaded = Session.load(path)
    assert loaded.nodes == session.nodes
    out = io.StringIO()
    Console(file=out, width=160, color_system=None).print(render(loaded, view="tree", threshold=0.0))
    text = out.getvalue()
    # The tree of counted steps has no tanh; the once-work has it, in its own section, not per step.
    once, main = text.split("Outside steps (once", 1)[1].split("Top-down (callees", 1)
    assert "aten::tanh" not in main and "aten::tanh" in once and "aten::relu" in main
    assert "work outside steps" in render_html(loaded)


def test_gpu_busy_outside_is_kept_in_meta_when_not_zero() -> None:
    raw = capture()
    raw["gpu_busy_ns"] = {"0": 700}
    raw["gpu_busy_outside_ns"] = {"0": 300}
    meta = session_of(raw).meta
    assert meta["gpu_busy_ns"] == {"0": 700} and meta["gpu_busy_outside_ns"] == {"0": 300}
    raw = capture()  # build_session converts the core's node tuples in place: a fresh export
    raw["gpu_busy_ns"], raw["gpu_busy_outside_ns"] = {"0": 700}, {"0": 0}
    assert "gpu_busy_outside_ns" not in session_of(raw).meta
