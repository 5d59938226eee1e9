"""``dlpt diff``: known per-line deltas, moved lines still matched, per-step normalisation,
eager vs compiled kernels on the same model line, and output that is safe to print."""

from __future__ import annotations

import io
from typing import Any

import pytest

from dlpt.analysis.diff import default_diff_metric, diff_sessions, function_key
from dlpt.model.metrics import METRICS
from dlpt.model.session import Session
from dlpt.renderers.terminal.diff import render_diff
from dlpt.views.diff import DiffView
from tests import sessions as S

GPU = METRICS["gpu"]
MODEL = "/home/a/proj/model.py"  # checkouts differ: matching uses the file name only
MODEL_B = "/home/b/other-checkout/model.py"
TRAIN = "/home/a/proj/train.py"


def _session(
    steps: int, lines: list[tuple[str, int, str, int]], sources: dict | None, file: str = MODEL
) -> dict[str, Any]:
    """A session whose ``train.py:10`` line calls model lines; each model line (line number,
    function, kernel ns) launches one kernel named after its function and line text."""
    b = S.Builder(steps=1)
    top = b.frame(0, TRAIN, 10, "main")
    for text, line, func, ns in lines:
        op = b.op(b.frame(top, file, line, func), "aten::op", cpu_ns=1_000)
        b.kernel(op, f"kernel_{text.split()[0]}", ns)
    meta: dict[str, Any] = {"steps": {"profiled": steps} if steps else {}}
    if sources is not None:
        meta["sources"] = sources
    return b.session(meta)


A_LINES = [
    ("x = self.fc1(x)", 20, "Net.forward", 100_000),
    ("x = self.act(x)", 21, "Net.forward", 50_000),
    ("x = self.drop(x)", 22, "Net.forward", 30_000),
]
# B: two lines inserted above (everything moves by 2), fc1 faster, act slower, drop gone,
# a new norm line; B ran twice as many steps.
B_LINES = [
    ("x = self.fc1(x)", 22, "Net.forward", 2 * 60_000),
    ("x = self.act(x)", 23, "Net.forward", 2 * 80_000),
    ("x = self.norm(x)", 24, "Net.forward", 2 * 10_000),
]


def _sources(lines, file: str) -> dict:
    return {file: {str(line): "        " + text for text, line, _, _ in lines}, TRAIN: {"10": "    run()"}}


def _pair(with_sources: bool = True) -> tuple[Session, Session]:
    a = _session(1, A_LINES, _sources(A_LINES, MODEL) if with_sources else None)
    b = _session(2, B_LINES, _sources(B_LINES, MODEL_B) if with_sources else None, file=MODEL_B)
    return Session.from_dict(a), Session.from_dict(b)


def _by_text(d, metric=GPU) -> dict[str, tuple[float, float, int | None, int | None]]:
    out = {}
    for r in d.ranked(metric):
        one = r.a or r.b
        out[one.text] = (d.value(metric, r, "a"), d.value(metric, r, "b"), r.a and r.a.line, r.b and r.b.line)
    return out


def test_known_deltas_moved_lines_and_per_step_values() -> None:
    a, b = _pair()
    d = diff_sessions(a, b, "a.json", "b.json")
    assert d.match_by == "text"
    assert d.a.scale == 1 and d.b.scale == 2 and "per step (A /1, B /2)" in d.note
    rows = _by_text(d)
    assert rows["x = self.fc1(x)"] == (100_000, 60_000, 20, 22)  # moved by two lines, still matched
    assert rows["x = self.act(x)"] == (50_000, 80_000, 21, 23)
    assert rows["x = self.drop(x)"] == (30_000, 0, 22, None)  # only in A
    assert rows["x = self.norm(x)"] == (0, 10_000, None, 24)  # only in B
    # Sorted by absolute change: fc1 -40, then act +30 before drop -30 (ties: larger cost first), norm +10.
    order = [(r.a or r.b).text for r in d.ranked(GPU)]
    assert order == ["x = self.fc1(x)", "x = self.act(x)", "x = self.drop(x)", "x = self.norm(x)"]
    assert d.total(GPU, "a") == 180_000 and d.total(GPU, "b") == 150_000


def test_line_costs_and_work_off_lines_add_up_to_the_totals() -> None:
    for make in (S.gpt_eager, S.gpt_compiled):
        s = Session.from_dict(make())
        d = diff_sessions(s, s)
        for metric in (GPU, METRICS["cpu"], METRICS["api"]):
            lines = sum(d.value(metric, r, "a") for r in d.rows)
            assert lines + metric(d.a.off_lines) / d.a.scale == pytest.approx(d.total(metric, "a"))


def test_without_source_text_lines_match_by_number_and_say_so() -> None:
    a, b = _pair(with_sources=False)
    d = diff_sessions(a, b, "a.json", "b.json")
    assert d.match_by == "line"
    assert "line number" in d.note and "A and B hold no source text" in d.note
    rows = {(r.a.line if r.a else None, r.b.line if r.b else None) for r in d.rows}
    # Lines 22 of both match (different code!), 20/21 only in A, 23/24 only in B.
    assert (22, 22) in rows and (20, None) in rows and (None, 24) in rows
    text = _render(d)
    assert "line number" in text


def test_one_session_without_sources_matches_by_number() -> None:
    a, _ = _pair(with_sources=True)
    _, b = _pair(with_sources=False)
    d = diff_sessions(a, b, "a.json", "b.json")
    assert d.match_by == "line" and "B holds no source text" in d.note


def test_totals_when_either_run_has_no_steps() -> None:
    a = Session.from_dict(_session(0, A_LINES, _sources(A_LINES, MODEL)))
    b = Session.from_dict(_session(2, B_LINES, _sources(B_LINES, MODEL_B), file=MODEL_B))
    d = diff_sessions(a, b, "a.json", "b.json")
    assert d.a.scale == d.b.scale == 1 and "totals" in d.note and "A: no steps" in d.note
    assert _by_text(d)["x = self.fc1(x)"][:2] == (100_000, 120_000)


def test_repeated_text_in_a_function_matches_in_order() -> None:
    lines_a = [("x = layer(x)", 10, "f", 1_000), ("x = layer(x)", 12, "f", 2_000)]
    lines_b = [("x = layer(x)", 11, "f", 1_500), ("x = layer(x)", 14, "f", 2_500)]
    d = diff_sessions(
        Session.from_dict(_session(1, lines_a, _sources(lines_a, MODEL))),
        Session.from_dict(_session(1, lines_b, _sources(lines_b, MODEL))),
    )
    pairs = sorted(
        (r.a.line, r.b.line, d.value(GPU, r, "a"), d.value(GPU, r, "b"))
        for r in d.rows
        if r.a and r.b and r.a.file == MODEL
    )
    assert pairs == [(10, 11, 1_000, 1_500), (12, 14, 2_000, 2_500)]


def test_function_names_compare_without_class_and_resume_prefix() -> None:
    assert function_key("Block.forward") == function_key("forward") == "forward"
    assert function_key("torch_dynamo_resume_in_forward_at_44") == "forward"
    assert function_key("LoggedGPT.torch_dynamo_resume_in_forward_at_44") == "forward"
    assert function_key("make_step.<locals>.step") == "step"


def test_eager_vs_compiled_kernels_side_by_side_on_the_model_line() -> None:
    d = diff_sessions(
        Session.from_dict(S.gpt_eager()), Session.from_dict(S.gpt_compiled()), "eager", "compiled"
    )
    assert default_diff_metric(d) is GPU
    gelu = next(r for r in d.rows if r.a and r.a.file == S.GPT_PY and r.a.line == 44)
    assert gelu.b is not None and gelu.b.line == 44
    per_step = S.LAYERS  # four blocks, one launch each per step
    assert d.value(GPU, gelu, "a") == (S.GELU_FWD_NS + S.GELU_BWD_NS) * per_step
    assert d.value(GPU, gelu, "b") == (S.FUSED_GELU_FWD_NS + S.FUSED_GELU_BWD_NS) * per_step
    assert d.ranked(GPU)[0] is gelu, "the largest change comes first"
    a_kernels = {leaf.name: leaf for leaf in gelu.a.leaves.values()}
    b_kernels = {leaf.name: leaf for leaf in gelu.b.leaves.values()}
    assert set(a_kernels) == {S.GELU, S.GELU_BW}
    assert set(b_kernels) == {
        "triton_poi_fused_gelu_view_10 [0_forward]",
        "triton_poi_fused_gelu_gelu_backward_view_4 [0_backward]",
    }
    assert a_kernels[S.GELU_BW].backward_ns > 0 and a_kernels[S.GELU].forward_ns > 0
    assert b_kernels["triton_poi_fused_gelu_view_10 [0_forward]"].detail == "fuses aten.view+aten.gelu"
    # After the graph break the compiled frames belong to Dynamo's resume function: same line.
    head = next(r for r in d.rows if (r.a or r.b).line == 46 and (r.a or r.b).file == S.RUN_PY)
    assert head.a is not None and head.b is not None and head.b.function.startswith("torch_dynamo_resume")
    # The compiled frame at `def forward` exists only in the compiled run.
    assert any(r.a is None and r.b.line == 39 for r in d.rows)

    text = _render(d, width=200)
    assert "gpu_gpt.py:44 forward" in text and "-74.0µs" in text and "0.46x" in text
    assert "triton_poi_fused_gelu_view_10 [0_forward]" in text
    assert "vectorized_elementwise_kernel<4, GeluCUDAKernelImpl" in text  # namespaces dropped


def _render(d, width: int = 160, **kw) -> str:
    from rich.console import Console

    console = Console(width=width, color_system=None, force_terminal=False, record=True, file=io.StringIO())
    console.print(render_diff(DiffView(d, default_diff_metric(d)), **kw))
    return console.export_text()


def test_terminal_output_moved_lines_ascii_and_threshold() -> None:
    a, b = _pair()
    d = diff_sessions(a, b, "a.json", "b.json")
    text = _render(d)
    assert "model.py:20→22" in text and "model.py:21→23" in text
    assert "A only" in text and "B only" in text
    # A line both runs have, with no cost in one of them, is not "only" in the other.
    b2 = Session.from_dict(
        _session(
            2,
            [*B_LINES, ("x = self.drop(x)", 25, "Net.forward", 0)],
            _sources([*B_LINES, ("x = self.drop(x)", 25, "", 0)], MODEL_B),
            file=MODEL_B,
        )
    )
    assert "to 0" in _render(diff_sessions(a, b2, "a.json", "b.json"))
    ascii_text = _render(d, ascii=True)
    assert "model.py:20->22" in ascii_text and "µ" not in ascii_text and ascii_text.isascii()
    hidden = _render(d, threshold=0.5)  # only lines >= 50% of the larger total
    assert "fc1" in hidden and "norm" not in hidden and "more lines below 50%" in hidden


def test_hostile_names_do_not_reach_the_terminal() -> None:
    h = Session.from_dict(S.hostile())
    text = _render(diff_sessions(h, h, "\x1b[2Ja.json", "b.json"))
    assert "\x1b" not in text and "\x07" not in text
    assert "model.py" in text
