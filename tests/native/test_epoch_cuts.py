"""Cuts (csrc/cct/epochs.h, Epochs::cut): the warm-up counts its steps provisionally and, when it
sees the step time still falling, drops every step so far. After a cut, everything filed as
counted before it is outside the steps, in every holder (node metrics and their per-step squares,
GPU records that arrive late, FLOP signatures, the idle blame), and what comes after counts.
Real capture on the CPU, GPU records through the testing seams: no GPU needed."""

from __future__ import annotations

import pytest
import torch

from dlpt.capture.native import core
from tests.native.test_epochs import launch, ops, under_line

C = core()
T = C._testing


def steps(plan: list[tuple[int, bool]]) -> None:
    """Each (ops, cut): a provisional step of that many ops from one call site (one path),
    counted when it ends, then a cut if asked."""
    for n, cut in plan:
        ops(n)
        C.end_epoch(True)
        if cut:
            C.cut_counted()


def test_a_cut_moves_every_counted_step_before_it_outside() -> None:
    C.start(False, [], True)
    steps([(3, False), (5, True), (7, False)])  # two provisional steps dropped, one counted
    raw = C.stop(last_counted=False)
    add = under_line(raw, ops, "add", "op")
    assert (add.counted.calls, add.outside.calls) == (7, 3 + 5)


def test_only_steps_after_the_last_cut_are_in_the_per_step_squares() -> None:
    C.start(False, [], True)
    steps([(40, False), (40, True), (2, False), (2, False)])
    raw = C.stop(last_counted=False)
    forward = next(
        t for t in raw["nodes"] if t[2] == "phase" and under_line(raw, ops, "add", "phase").id == t[0]
    )
    counted_cpu, sq_cpu = forward[6][1], forward[9][0]  # RawMetrics.cpu_ns; (sq_cpu, sq_gpu, sq_sync)
    # Two steps of 2 ops each: the sum of squares is about 2 x (cpu / 2)^2; with the dropped
    # 40-op steps still in it, it would be hundreds of times that.
    assert counted_cpu > 0 and sq_cpu <= 4 * counted_cpu**2


def test_a_late_gpu_record_of_a_step_before_the_cut_is_outside() -> None:
    C.start(False, [], True)
    # epochs 0 and 1 provisional, dropped by a cut after epoch 1; epoch 2 counted. Epoch 0's
    # kernel arrives before the cut (filed as counted, then moved), epoch 1's after it.
    for corr, records, cut in ((1, [], False), (2, [(1, 0, 1_000)], True), (3, [(3, 5_000, 5_300)], False)):
        launch(corr)
        C.end_epoch(True)
        for c, start, end in records:
            T.kernel_record(c, start, end, 0, "gemm")
        if cut:
            C.cut_counted()
    T.kernel_record(2, 1_000, 3_000, 0, "gemm")
    raw = C.stop(last_counted=False)
    k = under_line(raw, launch, "launch", "kernel")
    assert (k.counted.gpu_ns, k.counted.completed) == (300, 1)
    assert (k.outside.gpu_ns, k.outside.completed) == (1_000 + 2_000, 2)
    assert (k.counted.min_ns, k.counted.max_ns) == (300, 300)  # the dropped steps' out of min/max too


def test_flop_signatures_counted_before_a_cut_move_outside() -> None:
    a, b = torch.ones(4, 8), torch.ones(8, 16)
    C.start(False, [], True, flops_ops=["aten::mm"])
    for i in range(5):
        torch.mm(a, b)
        C.end_epoch(True)
        if i == 2:
            C.cut_counted()
    raw = C.stop(last_counted=False)
    counted = [c for _, _, c in raw["op_inputs"]]
    outside = [c for _, _, c in raw["op_inputs_outside"]]
    assert counted == [2] and outside == [3]


def test_the_idle_blame_drops_the_steps_before_a_cut() -> None:
    ops_ = [
        ("mark", 0, 1, 0, 0),
        ("sample", 5, 1, 5, 1),
        ("mark", 10, 1, 0, 0),  # step 1 closed (settles only at the end)
        ("sample", 15, 2, 5, 1),
        ("mark", 20, 1, 0, 0),
        ("cut", 0, 0, 0, 0),  # steps 1 and 2 were provisional
        ("sample", 25, 3, 5, 1),
        ("mark", 30, 0, 0, 0),
    ]
    out = T.idle_blame(False, ops_)
    assert out["steps"] == 1 and [n for n, _, _ in out["host"]] == [3]


def test_a_cut_without_a_profile_is_a_no_op() -> None:
    C.cut_counted()  # nothing runs: nothing to cut, nothing raised


@pytest.fixture(autouse=True)
def _no_profile_left():
    yield
    if C.running():
        C.stop()
