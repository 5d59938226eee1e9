"""The insights in the terminal report: MFU with its formula and idle per step in the header, the
Suggestions section after it in the default view, and ``--view suggestions`` with the work
tables (golden)."""

from __future__ import annotations

from typing import Any

import pytest

from dlpt.analysis.inputs import analyze
from dlpt.analysis.mfu import mfu
from dlpt.analysis.work import line_work
from dlpt.errors import UsageError
from dlpt.model.session import Session
from dlpt.model.tree import walk
from dlpt.renderers.terminal.report import render
from dlpt.trees.folding import report_tree
from dlpt.trees.processors import flatten_by_line
from dlpt.views.run import build_view

STEPS = 4
M, K, N = 8192, 4096, 4096  # tokens x width x width of each linear in the golden MLP
FWD = 2 * M * N * K


def flops_session(h: Any) -> Session:
    """The golden GPU session with FLOPs on its matmuls (as --flops records them) and the GPU's
    step time line."""
    d = h.build_gpu(STEPS).dict(h.gpu_meta(STEPS))
    for n in d["nodes"]:
        if n["kind"] == "op" and n["name"] == "aten::addmm":
            n["m"].update(flops=FWD * STEPS, mem_bytes=(M * K + K * N + M * N) * 2 * STEPS)
            n["x"] = {"flop_dtype": "BFloat16"}
        elif n["kind"] == "op" and n["name"] == "aten::mm":
            n["m"].update(flops=2 * FWD * STEPS, mem_bytes=2 * (M * K + K * N + M * N) * 2 * STEPS)
            n["x"] = {"flop_dtype": "BFloat16"}
    row = {
        "span_ns": 40_000_000,
        "busy_ns": 31_000_000,
        "idle_before_ns": 4_000_000,
        "idle_after_ns": 2_500_000,
    }
    d["meta"]["gpu_steps"] = {"0": [dict(row) for _ in range(STEPS)]}
    d["meta"]["flops"] = {
        "ops": 4,
        "flops": 6 * FWD * 2 * STEPS,
        "unevaluated": {"aten::convolution_backward": 2},
    }
    return Session.from_dict(d)


def test_mfu_is_model_flops_per_step_over_step_wall_over_peak(h: Any) -> None:
    a = analyze(flops_session(h))
    m = mfu(a)
    assert m is not None and m.key == "bf16" and m.share == 1.0
    assert m.flops_per_step == 2 * 3 * FWD  # two linears, forward + backward
    assert m.step_wall_ns == 40_000_000 and m.peak_tflops == 989.5
    assert m.value == pytest.approx(2 * 3 * FWD / 40e-3 / 989.5e12)
    assert mfu(analyze(flops_session(h), peak_tflops=500.0)).value == pytest.approx(
        2 * 3 * FWD / 40e-3 / 500e12
    )
    assert mfu(analyze(h.build_gpu(STEPS).session(h.gpu_meta(STEPS)))) is None  # no --flops


def test_line_flops_split_forward_and_backward(h: Any) -> None:
    rows = {(lw.line.file, lw.line.line): lw for lw in line_work(analyze(flops_session(h)).root)}
    fc1 = rows[(h.MODEL, 20)]
    assert (fc1.flops_forward, fc1.flops_backward) == (FWD * STEPS, 2 * FWD * STEPS)
    b = fc1.bound(analyze(flops_session(h)))
    assert b.kind == "compute" and b.tflops == pytest.approx(3 * FWD / 15e-3 / 1e12)


def _shape(root: Any) -> list[tuple[Any, ...]]:
    return [(d, n.kind, n.name, n.file, n.line, n.inclusive) for n, d in walk(root)]


def test_insights_read_the_same_folded_tree_as_every_other_view(h: Any) -> None:
    """The analysis' tree is report_tree's (FoldedTable: library frames folded, lone <forward>
    phases dropped), so a line's kernel time in the work table is its self time in the flat
    view's "By source line" and its FLOPs the tree's."""
    session = flops_session(h)
    a = analyze(session)
    whole = report_tree(session)
    assert _shape(a.root) == _shape(whole) and dict(a.totals) == whole.inclusive
    flat = {row.key: row for row in flatten_by_line(whole)}
    rows = [lw for lw in line_work(a.root) if lw.flops]
    assert rows
    for lw in rows:
        row = flat[(lw.line.file, lw.line.line)]
        assert lw.kernel_ns == row.self.get("gpu_ns", 0)
        assert lw.flops == row.self.get("flops", 0)  # forward on the line, backward grafted under it
    # The report's analysis walks the run's view's own tree (built once, when something walks it).
    sv = build_view(session)
    h.render_text(render(sv, view="all", threshold=0.0))
    assert sv.report().analysis is sv.analysis and sv.analysis.root is sv.whole
    assert _shape(sv.whole) == _shape(whole)


def test_header_prints_the_mfu_formula_and_the_idle_split(h: Any) -> None:
    text = h.render_text(render(flops_session(h), verbose=True), width=160)
    assert (
        "MFU 4.2% = model FLOPs per step / step wall / peak = 1.65 TFLOP / 40.00ms / 989.5 TFLOP/s "
        "(bf16 dense, H100 SXM datasheet)" in text
    )
    assert (
        "GPU 0 idle per step: 4.00ms before its first kernel, 2.50ms between kernels, 2.50ms after its last"
        in text
    )
    assert "FLOPs not counted (formula could not take the inputs): aten::convolution_backward x2" in text
    text = h.render_text(render(flops_session(h), peak_tflops=100.0, verbose=True), width=160)
    assert "/ 100 TFLOP/s (--peak-tflops)" in text and "MFU 41.2%" in text


def test_default_view_puts_suggestions_after_the_header(h: Any) -> None:
    text = h.render_text(render(flops_session(h), verbose=True), width=120)
    header_end, sug, tree = text.index("╰"), text.index("Suggestions"), text.index("Top-down")
    assert header_end < sug < tree
    assert "-1.24ms/step  train.py:40 train_step" in text


def test_no_suggestions_section_without_findings(h: Any) -> None:
    b = h.Builder()
    b.kernel(b.op(b.frame(0, h.TRAIN, 43, "train_step"), "aten::mm"), "gemm", STEPS, 30_000_000 * STEPS)
    text = h.render_text(render(b.session(h.gpu_meta(STEPS))))
    assert "Suggestions" not in text
    text = h.render_text(render(b.session(h.gpu_meta(STEPS)), view="suggestions"))
    assert "No suggestions" in text and "run with --flops" in text


def test_suggestions_view_golden(h: Any) -> None:
    h.check_golden("suggestions_view", h.render_text(render(flops_session(h), view="suggestions"), width=130))


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), True, "9"])
def test_peak_tflops_must_be_a_positive_number(h: Any, bad: Any) -> None:
    with pytest.raises(UsageError, match="peak_tflops"):
        render(flops_session(h), peak_tflops=bad)
