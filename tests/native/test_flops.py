"""FLOPs per line from a real capture on the CPU (``dlpt.profile(flops=True)``): torch's formula
FLOPs of the ops, forward on the line and backward grafted under it, each op counted once
however deeply torch nests the ops that have formulas."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import dlpt
from dlpt.analysis.inputs import analyze
from dlpt.analysis.work import line_work, op_work
from dlpt.model.session import Session
from tests.query import line_of

HERE = __file__
M, K, N = 32, 64, 16
STEPS = 3


def matmul_steps(x, w, prof):
    for _ in range(STEPS):
        y = x @ w  # @matmul
        y.sum().backward()
        prof.step()


def line_flops(session: Session, fn, tag: str):
    line = line_of(tag, fn)
    rows = [lw for lw in line_work(analyze(session).root) if lw.line.file == HERE and lw.line.line == line]
    assert len(rows) == 1, rows
    return rows[0]


def test_matmul_line_flops_are_exactly_2mnk_forward_and_twice_that_backward():
    x = torch.randn(M, K, requires_grad=True)
    w = torch.randn(K, N, requires_grad=True)
    with dlpt.profile(gpu=False, flops=True, skip_first=0) as prof:
        matmul_steps(x, w, prof)
    row = line_flops(prof.session, matmul_steps, "matmul")
    assert row.flops_forward == 2 * M * N * K * STEPS
    assert row.flops_backward == 2 * (2 * M * N * K) * STEPS  # grad of x and grad of w
    assert row.key == "fp32"
    meta = prof.session.meta["flops"]
    assert meta["flops"] == 6 * M * N * K * STEPS and meta["unevaluated"] == {}


def test_without_flops_nothing_is_recorded():
    x, w = torch.randn(M, K, requires_grad=True), torch.randn(K, N, requires_grad=True)
    with dlpt.profile(gpu=False) as prof:
        matmul_steps(x, w, prof)
    assert "flops" not in prof.session.meta
    assert not any("flops" in n["m"] or "mem_bytes" in n["m"] for n in prof.session.nodes)


def nested_steps(x, lin, conv, img, q, k, v, prof):
    for _ in range(STEPS):
        y = lin(x)  # @linear
        z = conv(img)  # @conv
        a = F.scaled_dot_product_attention(q, k, v)  # @sdpa
        (y.sum() + z.sum() + a.sum()).backward()
        prof.step()


def test_nested_formula_ops_are_counted_once_and_match_flop_counter_mode():
    torch.manual_seed(0)
    x = torch.randn(4, 8, K, requires_grad=True)  # 3-d input: linear -> addmm on a view
    lin = torch.nn.Linear(K, N)
    conv = torch.nn.Conv2d(3, 8, 3, padding=1)
    img = torch.randn(2, 3, 12, 12, requires_grad=True)
    q, k, v = (torch.randn(2, 4, 16, 8, requires_grad=True) for _ in range(3))
    with dlpt.profile(gpu=False, flops=True, skip_first=0) as prof:
        nested_steps(x, lin, conv, img, q, k, v, prof)
    # torch's own counter on the same computation, one step, per op.
    from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count

    counter = FlopCounterMode(display=False)
    with counter:
        y, z = lin(x), conv(img)
        a = F.scaled_dot_product_attention(q, k, v)
        (y.sum() + z.sum() + a.sum()).backward()
    theirs = {
        str(op).replace(".", "::", 1): n * STEPS for op, n in counter.get_flop_counts()["Global"].items()
    }
    assert sum(theirs.values()) == counter.get_total_flops() * STEPS
    # The CPU's flash attention: torch >= 2.15's FlopCounterMode counts it, 2.11 to 2.14 have no
    # formula for it (0 FLOPs) while dlpt applies the CUDA flash formula (same arguments). Where
    # the counter left it out, that formula's count is what dlpt must have.
    flash_cpu = {
        "aten::_scaled_dot_product_flash_attention_for_cpu": sdpa_flop_count(q.shape, k.shape, v.shape),
        "aten::_scaled_dot_product_flash_attention_for_cpu_backward": sdpa_backward_flop_count(
            q.shape, q.shape, k.shape, v.shape
        ),
    }
    for op, flops in flash_cpu.items():
        theirs.setdefault(op, flops * STEPS)
    # dlpt's FLOPs per op name: every op the counter counts, with the same FLOPs, each once.
    ours: dict[str, int] = {}
    for w in op_work(analyze(prof.session).root):
        if w.flops:
            ours[w.node.name] = ours.get(w.node.name, 0) + w.flops
    assert ours == theirs
    assert prof.session.meta["flops"]["flops"] == sum(theirs.values())
    lin_row = line_flops(prof.session, nested_steps, "linear")
    assert lin_row.flops_forward == 2 * 32 * K * N * STEPS
    assert lin_row.flops_backward == 4 * 32 * K * N * STEPS
    conv_row = line_flops(prof.session, nested_steps, "conv")
    assert conv_row.flops_backward == 2 * conv_row.flops_forward  # grad of input and weight
    # Only the outermost op with a formula carries FLOPs (never _convolution under convolution).
    counted = {w.node.name for w in op_work(analyze(prof.session).root) if w.flops}
    assert "aten::_convolution" not in counted and "aten::convolution" in counted


def first_layer_steps(conv, img, prof):
    for _ in range(STEPS):
        z = conv(img)  # @first
        z.sum().backward()
        prof.step()


def test_a_first_layers_backward_counts_only_the_weight_gradient():
    """The input needs no gradient: convolution_backward's recorded output_mask says so
    ([False, True, True]), so its backward does the forward's work once (the weight's gradient),
    not twice. On the CPU no kernel name could tell."""
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 8, 3, padding=1)
    img = torch.randn(2, 3, 12, 12)  # no requires_grad: the data
    with dlpt.profile(gpu=False, flops=True, skip_first=0) as prof:
        first_layer_steps(conv, img, prof)
    row = line_flops(prof.session, first_layer_steps, "first")
    assert row.flops_forward > 0
    assert row.flops_backward == row.flops_forward
    assert prof.session.meta["flops"]["unevaluated"] == {}


def test_work_survives_save_and_load(tmp_path):
    x, w = torch.randn(M, K, requires_grad=True), torch.randn(K, N, requires_grad=True)
    with dlpt.profile(gpu=False, flops=True, skip_first=0) as prof:
        matmul_steps(x, w, prof)
    path = tmp_path / "s.json"
    prof.save(path)
    loaded = Session.load(path)
    assert line_flops(loaded, matmul_steps, "matmul").flops == 6 * M * N * K * STEPS
    mm = [n for n in loaded.nodes if n["m"].get("flops")]
    assert mm and all(n["x"]["flop_dtype"] == "Float" and n["m"]["mem_bytes"] > 0 for n in mm)


def test_gpt_step_model_flops_on_the_cpu_match_the_analytic_count():
    """The CPU twin of tests/gpu/test_mfu_and_suggestions.py's MFU test: examples/gpu_gpt.py's training
    step. Its matmuls are exactly 6·N·T; attention (the CPU's flash kernel, which shares the CUDA
    flash formula) adds torch's 14·L·B·seq²·width (PaLM's 12, plus the backward's recomputation
    of q·kᵀ), within 10% of the PaLM estimate overall."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "gpu_gpt.py"
    spec = importlib.util.spec_from_file_location("gpu_gpt", path)
    assert spec is not None and spec.loader is not None
    gpt = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpt)
    layers, width, seq, batch, vocab = 2, 64, 32, 2, 512
    step, _ = gpt.make_step("cpu", False, layers=layers, width=width, seq=seq, batch=batch, vocab=vocab)
    with dlpt.profile(gpu=False, flops=True, skip_first=1) as prof:
        for _ in range(4):
            step()
    s = prof.session
    steps = s.meta["steps"]["profiled"]
    assert steps == 3 and s.meta["flops"]["unevaluated"] == {}
    tokens = batch * seq
    n = layers * 12 * width * width + vocab * width
    mm = sum(nd["m"].get("flops", 0) for nd in s.nodes if nd["name"] in ("aten::addmm", "aten::mm"))
    assert mm == 6 * n * tokens * steps
    per_step = s.meta["flops"]["flops"] / steps
    assert per_step == 6 * n * tokens + 14 * layers * batch * seq * seq * width
    assert per_step == pytest.approx(6 * n * tokens + 12 * layers * tokens * seq * width, rel=0.10)
