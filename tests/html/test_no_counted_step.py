"""The HTML page of a run with no counted step (issue 48): every cost ran outside steps, so the
page shows that work (the tree, the flame graph and the tables) with a note saying so, ranked by
the CPU time of ops on a CPU run, instead of an empty tree and "No GPU time recorded"."""

from __future__ import annotations

from dlpt.model.session import Session
from dlpt.renderers.html.data import OUTSIDE_NOTE, build_model
from dlpt.renderers.terminal.report import render
from tests import sessions as S

TRAIN = "/home/u/proj/train.py"


def no_counted_step(steps_seen: int = 1) -> Session:
    """One optimizer step, taken as warm-up: its ops are recorded outside steps only."""
    b = S.Builder(steps=1)
    top = b.frame(0, TRAIN, 50, "<module>")
    b.op(b.frame(top, TRAIN, 5, "<module>"), "aten::matmul", cpu_ns=5_000_000)
    b.op(b.frame(top, TRAIN, 2, "<module>"), "aten::ones", cpu_ns=200_000)
    for n in b.nodes:  # everything outside steps (the session's "o" metrics)
        if n["m"]:
            n["o"], n["m"] = n["m"], {}
    meta = {
        "argv": ["train.py"],
        "wall_ns": 2_000_000_000,
        "devices": [],
        "gpu": {"enabled": False, "reason": "no CUDA GPU available"},
        "steps": {
            "profiled": 0,
            "seen": steps_seen,
            "skip_first": 0,
            "active": None,
            "source": "optimizer",
            "outside": {"before_ns": 1_900_000_000, "after_ns": 0},
        },
        "sources": {TRAIN: {"5": "y = (w @ w).sum()", "2": "w = torch.ones(128, 128)"}},
    }
    return Session.from_dict(b.session(meta))


def test_the_page_shows_the_work_outside_steps() -> None:
    model = build_model(no_counted_step())
    assert model["metric"] == "cpu" and model["steps"] == 0
    assert [d["name"] for d in model["metrics"]][:1] == ["cpu"]
    strings, nodes = model["strings"], model["nodes"]
    lines = {strings[f] + f":{ln}" for f, ln in zip(nodes["file"], nodes["line"], strict=True) if strings[f]}
    assert f"{TRAIN}:5" in lines and f"{TRAIN}:2" in lines
    rows = model["flat"]["line"]
    assert rows and any(strings[nodes["file"][r[0]]] == TRAIN and nodes["line"][r[0]] == 5 for r in rows)
    assert {"level": "info", "text": OUTSIDE_NOTE} in model["header"]["warnings"]


def test_the_terminal_points_at_the_outside_section() -> None:
    from tests.unit.conftest import render_text

    text = render_text(render(no_counted_step()), width=200)
    assert text.index("Outside steps (once") < text.index("no CPU time of aten ops in counted steps")
    assert 'the work is under "Outside steps"' in text
