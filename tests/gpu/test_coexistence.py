"""dlpt and torch.profiler in one process: whoever holds CUPTI keeps it, the other degrades or
waits; nobody crashes and nobody's data is silently broken."""

from __future__ import annotations

import pytest

from tests.gpu.fresh_process import run_json

pytestmark = pytest.mark.gpu


def scenario(name: str) -> dict:
    return run_json("tests.gpu.coexist_run", name)


def test_dlpt_degrades_when_torch_profiler_holds_cupti():
    r = scenario("profiler_first")
    assert r["dlpt_gpu"]["enabled"] is False
    assert "CUPTI" in r["dlpt_gpu"]["reason"]
    assert any("GPU capture is off" in w for w in r["warnings"])
    assert "aten::matmul" in r["dlpt_ops"]  # CPU-side attribution still there
    assert r["torch_cuda_events"] > 0  # and torch.profiler's own data intact


def test_torch_profiler_records_gpu_again_after_dlpt_stops():
    r = scenario("dlpt_first")
    assert r["dlpt_kernels"] > 0
    assert r["torch_cuda_events"] > 0
