"""Memory per line on a CUDA GPU (``dlpt.profile(memory=True)``): the CUDA caching allocator's
reports through torch's memory-reporting hook, the backward's allocations on the autograd
engine's device thread, a GPT training step's activation peak against torch's own peak, and a
real out-of-memory failure."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

import dlpt
from dlpt.analysis.report import build_report
from tests.query import Q, line_of

pytestmark = pytest.mark.gpu
HERE = __file__
MIB = 1 << 20
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _phase_node(q: Q, fn, tag: str, op: str, phase: str = "<forward>") -> dict:
    for n in q.under_line(HERE, line_of(tag, fn)):
        if n["kind"] == "op" and n["name"] == op:
            for c in q.children[n["id"]]:
                if q.nodes[c]["kind"] == "phase" and q.nodes[c]["name"] == phase:
                    return q.nodes[c]
    raise AssertionError(f"no {op} {phase} on the line tagged {tag}")


def held(n, steps, prof):
    for i in range(steps):
        keep = torch.empty(n * (i + 1), dtype=torch.uint8, device="cuda")  # @keep
        big = torch.empty(4 * n, dtype=torch.uint8, device="cuda")  # @big
        del big, keep
        prof.step()
    torch.cuda.synchronize()


def test_known_bytes_at_the_peak_on_their_lines():
    n, steps = 8 * MIB, 3  # multiples of the allocator's rounding: block sizes are exact
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    with dlpt.profile(memory=True, skip_first=0, calibrate=False) as prof:  # every step counts
        held(n, steps, prof)
    q = Q(prof.session)
    assert _phase_node(q, held, "keep", "aten::empty")["m"]["mem_peak_bytes"] == n * (1 + 2 + 3)
    assert _phase_node(q, held, "big", "aten::empty")["m"]["mem_peak_bytes"] == 4 * n * steps
    mem = prof.session.meta["memory"]
    assert mem["tracks_cpu"] is False and "cpu" not in mem["devices"]
    dev = mem["devices"][f"cuda:{torch.cuda.current_device()}"]["steps"]
    assert len(dev) == steps
    assert [s["traced_at_peak"] for s in dev] == [n * (i + 1) + 4 * n for i in range(steps)]
    # The allocator's own peak is the largest step peak (both are its allocated-bytes counter).
    assert max(s["peak_allocated"] for s in dev) == torch.cuda.max_memory_allocated()
    assert all(s["reserved_at_peak"] >= s["peak_allocated"] for s in dev)


def _gpu_gpt():
    spec = importlib.util.spec_from_file_location("gpu_gpt_mem", EXAMPLES / "gpu_gpt.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def test_gpt_training_activation_peak_on_forward_lines_agrees_with_torch():
    gpt = _gpu_gpt()
    step, _ = gpt.make_step("cuda", amp=True, layers=6, width=384, seq=256, batch=64, vocab=8192)
    for _ in range(2):  # warm-up: optimizer state and cuBLAS workspaces exist before recording
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    with dlpt.profile(memory=True, skip_first=0, calibrate=False) as prof:  # every step counts
        for _ in range(3):
            step()
        torch.cuda.synchronize()
    torch_peak = torch.cuda.max_memory_allocated()
    s = prof.session
    assert s.meta["steps"]["profiled"] == 3
    dev = s.meta["memory"]["devices"][f"cuda:{torch.cuda.current_device()}"]["steps"]
    ours = max(d["peak_allocated"] for d in dev)
    assert abs(ours - torch_peak) <= 0.05 * torch_peak, (ours, torch_peak)
    q = Q(s)
    model_file = str(EXAMPLES / "gpu_gpt.py")
    peak_total = sum(n["m"].get("mem_peak_bytes", 0) for n in s.nodes)
    on_forward_model_lines = sum(
        n["m"].get("mem_peak_bytes", 0)
        for n in s.nodes
        if n["m"].get("mem_peak_bytes")
        and q.phase_of(n["id"]) == "<forward>"
        and any(a["kind"] == "frame" and a["file"] == model_file for a in q.ancestors(n["id"]))
    )
    # Activations saved for backward are the bulk of what the step holds at its peak, and they
    # sit on the model's forward lines.
    assert on_forward_model_lines >= 0.5 * peak_total, (on_forward_model_lines, peak_total)
    # The backward's gradients were allocated on the autograd engine's device thread: they are
    # on <backward> phases too (the reporter reached that thread through torch's TLS).
    backward = sum(n["m"].get("mem_alloc_bytes", 0) for n in s.nodes if q.phase_of(n["id"]) == "<backward>")
    assert backward > 0
    # The suggestion: checkpoint the blocks at GPT.forward's `x = block(x)`.
    report = build_report(s)
    found = [x.finding for x in report.suggestions if x.finding.rule == "activation_checkpointing"]
    assert found and found[0].file == model_file and found[0].function == "GPT.forward"
    assert "Block" in found[0].title


def fill(chunk):
    kept = []
    try:
        while True:
            kept.append(torch.empty(chunk, dtype=torch.uint8, device="cuda"))  # @grow
    except torch.OutOfMemoryError:
        pass
    return len(kept)


def test_a_real_out_of_memory_is_explained_by_line():
    chunk = 1 << 30
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    with dlpt.profile(memory=True, skip_first=0, calibrate=False) as prof:  # every step counts
        n = fill(chunk)
    torch.cuda.empty_cache()
    assert n > 0
    s = prof.session
    oom = s.meta["memory"]["oom"]
    assert oom["device"] == f"cuda:{torch.cuda.current_device()}" and oom["requested"] == chunk
    grow = _phase_node(Q(s), fill, "grow", "aten::empty")
    assert grow["m"]["mem_oom_bytes"] == n * chunk
    report = build_report(s)
    first = next(f for f in report.header if f.kind not in ("run", "steps"))
    assert first.kind == "oom" and f"test_memory.py:{line_of('grow', fill)} fill" in first.text
    assert f"test_memory.py:{line_of('grow', fill)} fill {n}.0 GiB" in report.facts("oom")[1].text
