"""dlpt's kernel totals agree with independent CUPTI clients measuring the same workload:
NVIDIA's cupti-python (count exact, time within 2%) and torch.profiler (within 3%)."""

from __future__ import annotations

import pytest

from tests.gpu.fresh_process import run_json

pytestmark = pytest.mark.gpu


def measure(tool: str) -> dict:
    return run_json("tests.gpu.reference_run", tool)


def test_matches_cupti_python():
    pytest.importorskip("cupti")
    ref, ours = measure("cupti"), measure("dlpt")
    assert ours["kernels"] == ref["kernels"]
    assert abs(ours["kernel_ns"] - ref["kernel_ns"]) <= 0.02 * ref["kernel_ns"], (ours, ref)


def test_matches_torch_profiler():
    ref, ours = measure("torchprof"), measure("dlpt")
    assert ours["kernels"] == ref["kernels"]
    assert abs(ours["kernel_ns"] - ref["kernel_ns"]) <= 0.03 * ref["kernel_ns"], (ours, ref)
