"""Why is this line slow, on a real GPU (written for an H100 80GB with torch 2.11 CUDA):

- the model FLOPs dlpt counts with ``flops=True`` for a nanoGPT-size GPT training step are the
  analytic 6·N·T + attention estimate within 10%, and so is its MFU;
- a loop copying from pageable memory gets the pin-memory suggestion, and the same loop with
  ``pin_memory()`` + ``non_blocking=True`` gains per step what the suggestion estimated, within
  30%;
- an fp32 GEMM loop gets the bf16/TF32 suggestion, with and without ``flops=True``.

Each test takes a few seconds; shapes and steps are fixed, so they are deterministic.
"""

from __future__ import annotations

import importlib.util
import statistics
from pathlib import Path

import pytest
import torch

import dlpt
from dlpt.analysis.finding import Finding
from dlpt.analysis.inputs import analyze
from dlpt.analysis.mfu import mfu
from dlpt.analysis.suggest import findings
from dlpt.model.session import Session
from tests.query import line_of

pytestmark = pytest.mark.gpu
HERE = __file__
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _gpu_gpt():
    spec = importlib.util.spec_from_file_location("gpu_gpt", EXAMPLES / "gpu_gpt.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def suggestions(session: Session, rule: str) -> list[Finding]:
    return [f for f in findings(analyze(session)) if f.rule == rule]


# -- MFU of a GPT training step -------------------------------------------------------------

LAYERS, WIDTH, SEQ, BATCH, VOCAB = 6, 384, 256, 64, 65


def analytic_flops_per_step() -> tuple[int, int]:
    """(matmul FLOPs, total FLOPs) of one training step, counted per token.

    Every weight matrix of N parameters costs 2·N FLOPs per token forward and 4·N backward
    (the gradients of its input and of its weight): 6·N·T for T tokens. Per block the matmul
    weights are qkv 3w² + proj w² + fc 4w² + out 4w² = 12w²; the tied LM head adds vocab·w
    (embedding lookups and biases do no matmul). Attention adds, per layer and token,
    2·seq·w for q·kᵀ and 2·seq·w for att·v forward and twice that backward: 12·L·T·seq·w
    (PaLM's estimate, no causal saving; torch's flash formula also counts the backward's
    recomputation of q·kᵀ, 2·L·T·seq·w more, i.e. about 2% of this step)."""
    tokens = BATCH * SEQ
    n = LAYERS * 12 * WIDTH * WIDTH + VOCAB * WIDTH
    matmuls = 6 * n * tokens
    return matmuls, matmuls + 12 * LAYERS * tokens * SEQ * WIDTH


def test_gpt_step_mfu_matches_the_analytic_estimate():
    gpt = _gpu_gpt()
    step, cfg = gpt.make_step("cuda", True, layers=LAYERS, width=WIDTH, seq=SEQ, batch=BATCH, vocab=VOCAB)
    assert cfg["heads"] == WIDTH // 64 and cfg["amp"]
    with dlpt.profile(skip_first=3, active=10, flops=True) as prof:
        for _ in range(13):
            step()
        torch.cuda.synchronize()
    session = prof.session
    assert session.meta["steps"]["profiled"] == 10
    assert session.meta["flops"]["unevaluated"] == {}
    steps = session.meta["steps"]["profiled"]
    matmul_flops, analytic = analytic_flops_per_step()
    # The linear layers' matmuls are exactly 6·N·T: nothing counted twice, nothing missed.
    mm = sum(n["m"].get("flops", 0) for n in session.nodes if n["name"] in ("aten::addmm", "aten::mm"))
    assert mm == matmul_flops * steps
    a = analyze(session)
    m = mfu(a)
    assert m is not None and m.key == "bf16" and m.share > 0.99
    assert m.flops_per_step == pytest.approx(analytic, rel=0.10)
    # MFU against the same step wall and peak: within 10% of the analytic MFU.
    assert m.peak_tflops is not None and m.value is not None
    analytic_mfu = analytic / m.step_wall_ns / 1e3 / m.peak_tflops
    assert m.value == pytest.approx(analytic_mfu, rel=0.10)
    assert 0 < m.value < 1
    tflop = m.flops_per_step / 1e12
    print(f"MFU {100 * m.value:.1f}% (analytic {100 * analytic_mfu:.1f}%), {tflop:.3f} TFLOP per step")


# -- pageable copies -> pin_memory + non_blocking ---------------------------------------------

COPY_BYTES = 256 * 1024 * 1024
COPY_STEPS, COPY_SKIP = 10, 2


def copy_loop(host: torch.Tensor, non_blocking: bool, prof: dlpt.profile) -> None:
    for _ in range(COPY_SKIP + COPY_STEPS):
        x = host.to("cuda", non_blocking=non_blocking)  # @copy
        (x * 2).sum().item()
        prof.step()


def copy_run(host: torch.Tensor, non_blocking: bool) -> Session:
    with dlpt.profile(skip_first=COPY_SKIP, active=COPY_STEPS) as prof:
        copy_loop(host, non_blocking, prof)
    return prof.session


def test_pageable_copies_get_the_pin_memory_suggestion_and_its_gain_is_measured():
    host = torch.randn(COPY_BYTES // 4)
    pageable = copy_run(host, non_blocking=False)
    found = suggestions(pageable, "pinned_memory")
    assert len(found) == 1, findings(analyze(pageable))
    f = found[0]
    assert f.line == line_of("copy", copy_loop) and f.file == HERE
    assert "measured" in f.basis  # the probe after the profile (no pinned copy in the run)
    # The change the suggestion asks for, measured the same way.
    pinned = copy_run(host.pin_memory(), non_blocking=True)
    assert suggestions(pinned, "pinned_memory") == []
    gained = statistics.median(pageable.meta["step_wall_ns"]) - statistics.median(pinned.meta["step_wall_ns"])
    print(f"estimated {f.gain_ns / 1e6:.2f} ms/step, measured {gained / 1e6:.2f} ms/step ({f.basis})")
    assert gained == pytest.approx(f.gain_ns, rel=0.30)


# -- fp32 GEMM -> bf16 / TF32 ---------------------------------------------------------------------


def gemm_loop(a: torch.Tensor, b: torch.Tensor, prof: dlpt.profile) -> None:
    for _ in range(12):
        c = a @ b  # @gemm
        prof.step()
    c.sum().item()


@pytest.mark.parametrize("flops", [True, False], ids=["flops", "kernel-names"])
def test_fp32_gemm_gets_the_bf16_suggestion(flops: bool):
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False  # the default: fp32 GEMMs on CUDA cores
    try:
        a = torch.randn(4096, 4096, device="cuda")
        b = torch.randn(4096, 4096, device="cuda")
        with dlpt.profile(skip_first=2, flops=flops) as prof:
            gemm_loop(a, b, prof)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old
    found = suggestions(prof.session, "fp32_matmul")
    assert len(found) == 1, findings(analyze(prof.session))
    f = found[0]
    assert f.line == line_of("gemm", gemm_loop)
    assert "bfloat16" in f.action and "set_float32_matmul_precision('high')" in f.action
    assert f.gain_ns > 0.5 * f.numbers["ns"]  # fp32 CUDA cores vs bf16 tensor cores: most of it
    if flops:
        assert "TFLOP/s" in f.evidence
