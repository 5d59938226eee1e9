"""Issue 33 on a real GPU (not run on the CPU machine):

- ``timeline=N`` keeps N counted steps after the warm-up: the window holds the kernels of the
  counted steps only (the warm-up steps run another kernel, ``aten::add``'s, the counted ones
  ``aten::mul``'s), and its steps take the counted steps' time, not the CUDA start-up's;
- the compact header fits 10 lines at 80 columns and says GPU 0's busy and idle shares;
- ``--flops``, ``--memory`` and ``--pc-sampling`` each answer in the compact header on a GPU: the
  FLOPs per step with an MFU against the GPU's peak, the peak on GPU 0 with its line, the samples
  PC sampling took and over which steps (issue 48);
- on a host with more than one GPU, a GPU the program never used is one line, "GPU N: unused"
  (skipped on a one-GPU host).
"""

from __future__ import annotations

import io
import itertools
import re

import pytest
import torch
from rich.console import Console

import dlpt
from dlpt.renderers.terminal.header import COMPACT_LINES
from dlpt.renderers.terminal.report import render

pytestmark = pytest.mark.gpu


def _profile() -> dlpt.profile:
    x = torch.ones(1024, 1024, device="cuda")
    with dlpt.profile(skip_first=3, timeline=2) as prof:
        for i in range(8):
            y = x.add(1) if i < 3 else x.mul(2)  # warm-up: add; counted: mul
            y.sum().item()
            prof.step()
    return prof


def test_the_timeline_holds_counted_steps_only() -> None:
    s = _profile().session
    assert s is not None
    tl = s.meta["timeline"]
    names = tl["strings"]
    assert tl["steps"] == 2
    assert tl["first_step"] == 4  # the run's own step number, after the 3 warm-up steps
    ops = {names[e[4]] for e in tl["events"] if e[0] == 1}
    kernels = [names[e[4]] for e in tl["events"] if e[0] == 4]
    assert "aten::mul" in ops and "aten::add" not in ops, sorted(ops)
    assert kernels, "the counted steps' kernels are in the window"
    steps = sorted(e[1] for e in tl["events"] if e[0] == 0)
    walls = [b - a for a, b in itertools.pairwise(steps)]
    assert max(walls) < 0.5e9, walls  # counted steps, not the CUDA start-up's seconds


def test_the_compact_header_at_80_columns() -> None:
    s = _profile().session
    assert s is not None
    out = io.StringIO()
    Console(file=out, width=80, color_system=None).print(render(s))
    lines = out.getvalue().splitlines()
    end = next(i for i, ln in enumerate(lines) if ln.startswith("╰"))
    head = "\n".join(lines[: end + 1])
    assert end + 1 <= COMPACT_LINES, head
    assert "GPU 0: busy" in head and "idle" in head
    assert "Top-down" in "\n".join(lines[-60:])  # the tree ends the report


def test_flags_answer_in_the_compact_header_on_a_gpu() -> None:
    x = torch.randn(2048, 2048, device="cuda", dtype=torch.bfloat16)
    with dlpt.profile(skip_first=2, flops=True, memory=True, pc_sampling=2) as prof:
        for _ in range(8):
            y = x @ x  # @mm
            y.sum().item()
            prof.step()
    assert prof.session is not None
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(render(prof.session))
    lines = out.getvalue().splitlines()
    end = next(i for i, ln in enumerate(lines) if ln.startswith("╰"))
    head = [ln.strip("│ ") for ln in lines[: end + 1]]
    flops = next(ln for ln in head if ln.startswith("FLOPs "))
    assert "17.2 GFLOP/step" in flops and re.search(r"MFU \d+(\.\d+)?%", flops), flops  # 2 x 2048^3
    memory = next(ln for ln in head if ln.startswith("memory peak "))
    assert "cuda" in memory or "GPU 0" in memory, memory
    pc = next(ln for ln in head if ln.startswith("PC sampling"))
    assert re.search(r"[\d,]+ samples in \d+ kernels? over steps 3-4", pc), pc


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs a host with two GPUs")
def test_an_unused_gpu_is_one_line() -> None:
    s = _profile().session
    assert s is not None
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(render(s, verbose=True))
    text = out.getvalue()
    assert "GPU 1: unused" in text and "no busy time recorded" not in text
    # One line names GPU 1 ("GPU 1.52ms" of GPU time per step is no mention of it).
    assert sum(bool(re.search(r"\bGPU 1(?![\d.])", ln)) for ln in text.splitlines()) == 1
