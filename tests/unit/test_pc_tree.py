"""PC samples on the tree (dlpt.capture.pc_annotate, dlpt.renderers.terminal.pc_rows, the HTML
model): a sampled kernel node gets its lines and top stalls, a model line the sampled share of
the fused kernel split onto it, the kernel file's text is saved in the session, the extras are
validated, and a session without them renders as before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import tests.sessions as S
from dlpt.capture.pc_annotate import annotate_session
from dlpt.model.session import Session, SessionFormatError
from dlpt.renderers.html.data import build_model
from dlpt.renderers.terminal.report import render

FUSED = "triton_red_fused__log_softmax_nll_loss_1"
KERNEL_SRC = """\
@triton.jit
def triton_red_fused__log_softmax_nll_loss_1(in_ptr0, out_ptr0, xnumel, rnumel):
    tmp0 = tl.load(in_ptr0 + r1)
    tmp1 = tl_math.exp(tmp0)
    tmp2 = tl.sum(tmp1, 1)
    tl.store(out_ptr0 + x0, tmp2)
"""


def _sampled(kernel_file: str) -> dict[str, Any]:
    d = S.gpt_compiled()
    d["meta"]["pc_sampling"] = {
        "steps": 3,
        "period_log2": 10,
        "reason": None,
        "first_step": 7,
        "last_step": 9,
        "total_samples": 1200,
        "kernels": [
            {
                "name": FUSED,
                "samples": 1000,
                "stalls": {"long_scoreboard": 600, "math_pipe_throttle": 300, "selected": 100},
                "lines": [
                    [kernel_file, 4, 700, {"math_pipe_throttle": 300, "long_scoreboard": 400}],
                    [kernel_file, 3, 300, {"long_scoreboard": 200, "selected": 100}],
                ],
            },
            {
                "name": S.GEMM,
                "samples": 200,
                "stalls": {"barrier": 150, "wait": 50},
                "lines": [["", 0, 200, {"barrier": 150}]],
            },
        ],
        "model_lines": [
            {
                "kernel": FUSED,
                "samples": 1000,
                "unassigned": 100,
                "lines": [
                    {"file": S.RUN_PY, "line": 47, "samples": 810, "share": 0.9},
                    {"file": S.RUN_PY, "line": 46, "samples": 90, "share": 0.1},
                ],
            }
        ],
    }
    return d


@pytest.fixture
def kernel_file(tmp_path: Path) -> str:
    f = tmp_path / "torchinductor_me" / "ab" / "cab.py"
    f.parent.mkdir(parents=True)
    f.write_text(KERNEL_SRC)
    return str(f)


def test_kernel_and_model_line_nodes_get_their_samples(kernel_file: str) -> None:
    d = _sampled(kernel_file)
    annotate_session(d["nodes"], d["meta"])
    session = Session.from_dict(json.loads(json.dumps(d)))  # validated, through JSON
    kernels = [n for n in session.nodes if n["kind"] == "kernel" and n["name"].startswith(FUSED + " [")]
    assert kernels and all(n["x"]["pc"]["samples"] == 1000 for n in kernels)
    pc = kernels[0]["x"]["pc"]
    assert pc["unassigned"] == 100 and list(pc["stalls"]) == [
        "long_scoreboard",
        "math_pipe_throttle",
        "selected",
    ]
    assert pc["lines"][0] == [kernel_file, 4, 700, {"long_scoreboard": 400, "math_pipe_throttle": 300}]
    gemm = next(n for n in session.nodes if n["kind"] == "kernel" and n["name"] == S.GEMM)
    assert (
        gemm["x"]["pc"]["lines"] == [["", 0, 200, {"barrier": 150}]] and "unassigned" not in gemm["x"]["pc"]
    )
    line47 = [n for n in session.nodes if n["kind"] == "frame" and n["file"] == S.RUN_PY and n["line"] == 47]
    assert line47 and line47[0]["x"]["pc_fused"] == [
        {"kernel": FUSED, "samples": 810, "share": 0.9, "of": 900, "unassigned": 100}
    ]
    # The generated kernel's text is in the session: reports never open the file.
    assert session.meta["sources"][kernel_file]["4"] == "    tmp1 = tl_math.exp(tmp0)"


def test_the_tree_shows_lines_stalls_and_the_sampled_share(kernel_file: str, h: Any) -> None:
    d = _sampled(kernel_file)
    annotate_session(d["nodes"], d["meta"])
    text = h.render_text(render(Session.from_dict(d), view="tree", threshold=0.0), width=400)
    assert "PC samples 1,000" in text and "long_scoreboard 60%, math_pipe_throttle 30%" in text
    assert "100 on lines of no model line (unassigned)" in text
    assert "cab.py:4 70%" in text and "tmp1 = tl_math.exp(tmp0)" in text
    assert "PC samples 200  barrier 75%, wait 25%; no line info" in text
    assert (
        f"≈90% of {FUSED}" in text
        and "sampled estimate: 810 of 900 samples on its model lines; 100 unassigned" in text
    )
    plain = h.render_text(render(Session.from_dict(S.gpt_compiled()), view="tree", threshold=0.0), width=400)
    assert "PC samples" not in plain and "sampled estimate" not in plain


def test_bad_pc_extras_are_rejected(kernel_file: str) -> None:
    d = _sampled(kernel_file)
    annotate_session(d["nodes"], d["meta"])
    node = next(n for n in d["nodes"] if n["kind"] == "kernel" and "pc" in (n.get("x") or {}))
    node["x"]["pc"]["lines"][0] = ["f.py", "4", 1, {}]
    with pytest.raises(SessionFormatError, match="pc"):
        Session.from_dict(d)


def test_the_html_source_view_gets_the_kernel_file_with_samples(kernel_file: str) -> None:
    d = _sampled(kernel_file)
    annotate_session(d["nodes"], d["meta"])
    model = build_model(Session.from_dict(d))
    strings = model["strings"]
    sampled = {strings[int(f)]: v for f, v in model["sampled"].items()}
    assert kernel_file in sampled
    rows = {r[0]: r for r in sampled[kernel_file]["lines"]}
    assert rows[4][1] == 700 and "long_scoreboard 57%" in strings[rows[4][2]]
    assert sampled[kernel_file]["kernels"] == [strings.index(FUSED)]
    sources = {strings[int(f)]: dict(v) for f, v in model["sources"].items()}
    assert strings[sources[kernel_file][4]] == "    tmp1 = tl_math.exp(tmp0)"
    details = {strings[i] for i in model["nodes"]["detail"]}
    assert any(
        d.endswith(
            "PC samples 1,000: long_scoreboard 60%, math_pipe_throttle 30%, selected 10%; "
            "100 unassigned to model lines"
        )
        for d in details
    )
    assert (
        f"≈90% of {FUSED} (sampled estimate: 810 of 900 samples on its model lines; 100 unassigned)"
        in details
    )
    assert build_model(Session.from_dict(S.gpt_compiled()))["sampled"] == {}
