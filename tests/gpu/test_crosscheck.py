"""dlpt's kernel totals agree with independent CUPTI clients measuring the same workload:
NVIDIA's cupti-python (count exact, time within 2%) and torch.profiler (within 3%)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.gpu
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def measure(tool: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "tests.gpu.reference_run", tool], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_matches_cupti_python():
    pytest.importorskip("cupti")
    ref, ours = measure("cupti"), measure("dlpt")
    assert ours["kernels"] == ref["kernels"]
    assert abs(ours["kernel_ns"] - ref["kernel_ns"]) <= 0.02 * ref["kernel_ns"], (ours, ref)


def test_matches_torch_profiler():
    ref, ours = measure("torchprof"), measure("dlpt")
    assert ours["kernels"] == ref["kernels"]
    assert abs(ours["kernel_ns"] - ref["kernel_ns"]) <= 0.03 * ref["kernel_ns"], (ours, ref)
