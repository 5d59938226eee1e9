"""Step epochs and tracing suspension with real CUPTI (csrc/cct/epochs.h, set_tracing): kernels are
filed by the epoch of their launch whatever their record's arrival, and while tracing is
suspended (either SuspendMode) launches leave no trace; after resuming they are traced again."""

from __future__ import annotations

import pytest
import torch

from dlpt.capture.native import RawNode, core, cupti_candidates
from tests.query import line_of

pytestmark = pytest.mark.gpu
C = core()


def gemm(x: torch.Tensor) -> torch.Tensor:
    return x @ x  # @gemm


def gemm_kernels(raw) -> tuple[int, int]:
    """(counted, outside) kernels completed under the gemm line."""
    ns = [RawNode.of(t) for t in raw["nodes"]]
    line = line_of("gemm", gemm)
    frames = {n.id for n in ns if n.kind == "frame" and n.line == line and n.file == __file__}
    counted = outside = 0
    for n in ns:
        p = n.parent
        while p >= 0 and p not in frames:
            p = ns[p].parent
        if p in frames and n.kind == "kernel":
            counted += n.counted.completed
            outside += n.outside.completed
    return counted, outside


def start() -> None:
    info = C.start(True, cupti_candidates(), True)
    assert info["gpu"], info["reason"]


def test_kernels_are_filed_by_their_launch_epoch():
    x = torch.randn(2048, 2048, device="cuda")
    gemm(x)
    torch.cuda.synchronize()
    start()
    for i in range(6):
        gemm(x)  # no synchronisation: records of epoch 0 arrive after the boundary
        if i == 2:
            C.end_epoch(True)
    torch.cuda.synchronize()
    raw = C.stop(last_counted=False)
    assert gemm_kernels(raw) == (3, 3)
    assert raw["counters"]["unknown_correlation"] == 0
    steps = raw["gpu_steps"]["0"]
    assert steps and steps[0][2] is True  # the interval of epoch 0: counted
    assert raw["gpu_busy_ns"]["0"] > 0 and raw["gpu_busy_outside_ns"]["0"] > 0


@pytest.mark.parametrize("mode", ["disable", "detach"])
def test_suspended_launches_leave_no_trace(monkeypatch, mode):
    monkeypatch.setenv("DLPT_SUSPEND", mode)
    x = torch.randn(2048, 2048, device="cuda")
    gemm(x)
    torch.cuda.synchronize()
    start()
    for n, on in [(3, False), (5, True), (2, None)]:
        for _ in range(n):
            gemm(x)
        if on is not None:
            torch.cuda.synchronize()  # set_tracing's contract
            C.set_tracing(on)
    torch.cuda.synchronize()
    raw = C.stop()
    assert sum(gemm_kernels(raw)) == 3 + 2
    c = raw["counters"]
    assert c["tracing_switches"] == 2 and "tracing_error" not in c
    assert c["completed"] == c["submitted"] and c["unknown_correlation"] == 0
