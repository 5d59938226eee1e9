"""CUPTI PC sampling on the GPU (--pc-sampling): samples land on the lines inside kernels, with
stall reasons; a fused Inductor kernel's samples are shared among the model lines it fused; library
kernels keep per-kernel stall reasons; the sampled steps are held outside the counted steps; and
when CUPTI is taken, a one-line reason and the rest of the profile. What the mode costs (the
sampled steps, and the steps after them) is measured paired in bench/paired.py (dlpt_pcs modes),
never by a timed test.

The kernels and model lines are defined in this file so the lines can be checked exactly. The
step-by-step view of the same cases, for when one of these fails: tools/pc_sampling_check.py.
"""

from __future__ import annotations

import inspect
import os
import time
from typing import Any

import pytest
import torch

import dlpt

triton = pytest.importorskip("triton")  # CUDA builds of torch bring it; the CPU CI has none
tl = pytest.importorskip("triton.language")

pytestmark = pytest.mark.gpu
HERE = __file__


def _pcs(prof: Any) -> dict[str, Any]:
    pcs = prof.session.meta.get("pc_sampling")
    assert pcs is not None, "the session has no meta.pc_sampling"
    assert not pcs.get("reason"), f"PC sampling was off: {pcs.get('reason')}"
    assert pcs.get("total_samples", 0) > 0, pcs
    return pcs


def _kernel(pcs: dict[str, Any], part: str) -> dict[str, Any]:
    found = [k for k in pcs["kernels"] if part in k["name"]]
    assert found, f"no sampled kernel named *{part}*; sampled: {[k['name'][:60] for k in pcs['kernels'][:8]]}"
    return found[0]


@triton.jit
def heavy_loop_kernel(x_ptr, out_ptr, n, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)  # prologue
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    acc = tl.load(x_ptr + offs, mask=mask, other=0.0)
    for _ in range(ITERS):  # the loop
        acc = tl.sin(acc) * 1.0001 + tl.cos(acc)
    tl.store(out_ptr + offs, acc, mask=mask)


def test_triton_loop_lines_hold_the_samples_with_stall_reasons() -> None:
    x = torch.randn(1 << 22, device="cuda")
    out = torch.empty_like(x)
    grid = (triton.cdiv(x.numel(), 1024),)
    with dlpt.profile(skip_first=2, calibrate=False, pc_sampling=2) as prof:
        for _ in range(6):
            for _ in range(5):
                heavy_loop_kernel[grid](x, out, x.numel(), ITERS=256, BLOCK=1024)
            prof.step()
    pcs = _pcs(prof)
    assert (pcs["first_step"], pcs["last_step"]) == (3, 4), pcs
    k = _kernel(pcs, "heavy_loop_kernel")
    src, first = inspect.getsourcelines(heavy_loop_kernel.fn)
    loop = {first + i for i, text in enumerate(src) if "for _ in range" in text or "tl.sin(acc)" in text}
    here = [ln for ln in k["lines"] if ln[0] == HERE]
    assert here, f"no sample resolved to this file; lines: {k['lines'][:5]}"
    on_file = sum(ln[2] for ln in here)
    on_loop = sum(ln[2] for ln in here if ln[1] in loop)
    assert on_loop >= 0.8 * k["samples"], (on_loop, on_file, k["samples"], loop, here)
    assert sum(k["stalls"].values()) == k["samples"] and len(k["stalls"]) >= 2, k["stalls"]
    assert not any(r.endswith("_not_issued") for r in k["stalls"]), k["stalls"]
    # On the tree: the kernel node's lines, and the loop line's text saved in the session.
    node = next(n for n in prof.session.nodes if n["kind"] == "kernel" and "heavy_loop_kernel" in n["name"])
    assert node["x"]["pc"]["lines"][0][1] in loop, node["x"]["pc"]
    assert "tl.sin(acc)" in "".join(prof.session.meta["sources"][HERE].values())


def _fused(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    y = x.sin().exp().cos().sin().exp().cos().sin().exp().cos().sin().exp().cos().sin().exp().cos().sin().exp().cos()  # noqa: E501  # fmt: skip
    return y * w  # the light line


def test_fused_kernel_split_onto_its_two_model_lines() -> None:
    torch._dynamo.reset()
    f = torch.compile(_fused)
    x = torch.randn(1 << 24, device="cuda")
    w = torch.randn(1 << 24, device="cuda")
    with dlpt.profile(skip_first=2, calibrate=False, pc_sampling=2) as prof:
        for _ in range(6):  # the first call compiles, inside the warm-up (module load watched)
            for _ in range(5):
                f(x, w)
            prof.step()
    pcs = _pcs(prof)
    src, first = inspect.getsourcelines(_fused)
    heavy = first + next(i for i, t in enumerate(src) if ".sin()" in t)
    light = first + next(i for i, t in enumerate(src) if "y * w" in t)
    splits = [s for s in pcs["model_lines"] if any(ml["file"] == HERE for ml in s["lines"])]
    assert splits, f"no fused kernel was split onto this file: {pcs['model_lines']}"
    s = max(splits, key=lambda s: s["samples"])
    shares = {ml["line"]: ml for ml in s["lines"] if ml["file"] == HERE}
    assert heavy in shares and light in shares, (heavy, light, s)
    assert shares[heavy]["share"] >= 0.8, s
    assert shares[heavy]["samples"] > shares[light]["samples"] > 0, s
    print(f"fused split: {s['samples']} samples, {s['unassigned']} unassigned; {s['lines']}")
    assert s["unassigned"] < s["samples"], s
    # On the model lines the tree has: the sampled share of the fused kernel (the line the
    # kernel sits under, at least).
    frames = [
        n
        for n in prof.session.nodes
        if n["kind"] == "frame" and n["file"] == HERE and "pc_fused" in (n.get("x") or {})
    ]
    assert frames, "no model line of this file carries x.pc_fused"
    for n in frames:
        part = next(f for f in n["x"]["pc_fused"] if f["kernel"] == s["kernel"])
        assert part["samples"] == shares[n["line"]]["samples"], (n["line"], part, shares)


def test_gemm_keeps_per_kernel_stall_reasons() -> None:
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    with dlpt.profile(skip_first=2, calibrate=False, pc_sampling=2) as prof:
        for _ in range(6):
            for _ in range(5):
                a @ b
            prof.step()
    pcs = _pcs(prof)
    gemm = max(pcs["kernels"], key=lambda k: k["samples"])
    assert gemm["samples"] > 0 and sum(gemm["stalls"].values()) == gemm["samples"], gemm["stalls"]
    assert len(gemm["stalls"]) >= 2, gemm["stalls"]
    assert not any(r.endswith("_not_issued") or r == "sample_count" for r in gemm["stalls"]), gemm["stalls"]
    # A sample counts once: the kernels' samples and CUPTI's non-user samples make its total
    # (phase 1 summed every listed reason: 1.9x the GEMM's samples).
    counted = sum(k["samples"] for k in pcs["kernels"]) + pcs["non_user_samples"]
    assert abs(counted - pcs["total_samples"]) <= 0.01 * pcs["total_samples"], (counted, pcs["total_samples"])


def test_sampled_steps_are_held_outside_the_counted_steps() -> None:
    """The sampled steps (slow kernels, the read-back at their end) are outside steps: the
    counted steps, their step times and the host's per-step lines never hold them, and the first
    untraced window opens FIRST_WINDOW counted steps after them. (What the other steps cost with
    the mode on is measured paired in bench/paired.py --modes dlpt_pcs, not timed here.)"""
    from dlpt.capture.schedule import FIRST_WINDOW, WINDOW

    a = torch.randn(2048, 2048, device="cuda")
    total = 2 + 3 + FIRST_WINDOW + WINDOW + 4
    with dlpt.profile(skip_first=2, pc_sampling=3) as prof:
        for _ in range(total):
            for _ in range(5):
                a = torch.tanh(a @ a)
            prof.step()
    pcs = _pcs(prof)
    meta = prof.session.meta
    assert (pcs["first_step"], pcs["last_step"]) == (3, 5), pcs
    assert meta["steps"]["held"] == 3, meta["steps"]
    assert meta["step_time"]["windows"][0][0] == 6 + FIRST_WINDOW, meta["step_time"]
    assert meta["steps"]["profiled"] == total - 5 - meta["steps"]["untraced"], meta["steps"]
    step_lines = (meta.get("host") or {}).get("step_thread") or {}
    named = [f"{ln.get('file')} {ln.get('inner', '')}" for ln in step_lines.get("lines", [])]
    # dlpt's read-back (dlpt/capture/pc_sampling.py) is no line of the steps' host time.
    assert not any(os.path.join("capture", "pc_sampling.py") in n for n in named), named
    # The tree: the GEMM's kernel node carries its samples and stalls.
    sampled = [n for n in prof.session.nodes if n["kind"] == "kernel" and "pc" in (n.get("x") or {})]
    assert sampled and all(n["x"]["pc"]["samples"] > 0 and n["x"]["pc"]["stalls"] for n in sampled), sampled[
        :2
    ]


def test_cupti_held_by_torch_profiler_gives_a_reason_and_the_profile() -> None:
    x = torch.randn(1024, 1024, device="cuda")
    with (
        torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]),
        pytest.warns(RuntimeWarning),
        dlpt.profile(skip_first=1, calibrate=False, pc_sampling=2) as prof,
    ):
        for _ in range(4):
            x = x @ x
            x = x / x.norm()
            prof.step()
            time.sleep(0.001)
    pcs = prof.session.meta["pc_sampling"]
    assert pcs.get("reason") and "\n" not in pcs["reason"], pcs
    assert prof.session.nodes, "the rest of the profile is there"
