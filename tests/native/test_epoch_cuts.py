"""Cuts (csrc/cct/epochs.h, Epochs::cut): the warm-up counts its steps provisionally and, when it
sees the step time still falling, drops every step so far. After a cut, everything filed as
counted before it is outside the steps, in every holder (node metrics and their per-step squares,
GPU records that arrive late, FLOP signatures, the idle blame), and what comes after counts.
The last cut can be undone before the stop (restore_last_cut: a fall seen too late to count
from): what it dropped counts again, in every holder, and what earlier cuts dropped stays out.
Real capture on the CPU, GPU records through the testing seams: no GPU needed."""

from __future__ import annotations

import pytest
import torch

from dlpt.capture.native import core
from tests.native.test_epochs import launch, ops, under_line

C = core()
T = C._testing


def steps(plan: list[tuple[int, bool | str]]) -> None:
    """Each (ops, cut): a provisional step of that many ops from one call site (one path),
    counted when it ends, then a cut if asked ("extend": one that extends the last drop)."""
    for n, cut in plan:
        ops(n)
        C.end_epoch(True)
        if cut:
            C.cut_counted(extend=cut == "extend")


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


@pytest.mark.parametrize(
    ("steps_", "cuts", "restore", "counted", "outside"),
    [
        (5, (2,), False, [2], [3]),  # the steps before a cut move outside
        (6, (0, 3), True, [5], [1]),  # a restore counts the last drop again, not the first
    ],
)
def test_flop_signatures_follow_the_cuts(steps_, cuts, restore, counted, outside) -> None:
    a, b = torch.ones(4, 8), torch.ones(8, 16)
    C.start(False, [], True, flops_ops=["aten::mm"])
    for i in range(steps_):
        torch.mm(a, b)
        C.end_epoch(True)
        if i in cuts:
            C.cut_counted()
    if restore:
        C.restore_last_cut()
    raw = C.stop(last_counted=False)
    assert [c for _, _, c in raw["op_inputs"]] == counted
    assert [c for _, _, c in raw["op_inputs_outside"]] == outside


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
    C.restore_last_cut()


def test_restoring_the_last_cut_counts_what_it_dropped_and_no_more() -> None:
    C.start(False, [], True)
    steps([(3, True), (5, True), (7, False)])  # the first cut drops 3, the second 5
    C.restore_last_cut()
    raw = C.stop(last_counted=False)
    add = under_line(raw, ops, "add", "op")
    assert (add.counted.calls, add.outside.calls) == (5 + 7, 3)


def test_what_the_last_cut_dropped_is_outside_when_the_run_stops_without_a_restore() -> None:
    C.start(False, [], True)
    steps([(3, True), (5, True), (7, False)])
    raw = C.stop(last_counted=False)
    add = under_line(raw, ops, "add", "op")
    assert (add.counted.calls, add.outside.calls) == (7, 3 + 5)


@pytest.mark.parametrize(
    ("plan", "restored", "kept"),
    [
        # a drop extended by a cut one step later: both steps come back, the first cut's stay out
        ([(2, True), (5, True), (1, "extend"), (7, False)], (5 + 1 + 7, 2), (7, 2 + 5 + 1)),
        # a new drop after an extended one: only the new one comes back
        (
            [(2, True), (5, True), (1, "extend"), (3, True), (7, False)],
            (3 + 7, 2 + 5 + 1),
            (7, 2 + 5 + 1 + 3),
        ),
    ],
)
def test_a_cut_that_extends_the_drop_is_restored_with_it(plan, restored, kept) -> None:
    for restore, want in ((True, restored), (False, kept)):
        C.start(False, [], True)
        steps(plan)
        if restore:
            C.restore_last_cut()
        raw = C.stop(last_counted=False)
        add = under_line(raw, ops, "add", "op")
        assert (add.counted.calls, add.outside.calls) == want, restore


def test_a_restore_brings_back_the_dropped_steps_squares() -> None:
    C.start(False, [], True)
    steps([(2, False), (40, True), (2, False)])
    C.restore_last_cut()
    raw = C.stop(last_counted=False)
    forward = next(
        t for t in raw["nodes"] if t[2] == "phase" and under_line(raw, ops, "add", "phase").id == t[0]
    )
    counted_cpu, sq_cpu = forward[6][1], forward[9][0]
    # Steps of 2, 40 and 2 ops: the 40-op step dominates the squares (over a third of the sum
    # squared); without it they would be about 2 x (cpu / 22)^2.
    assert sq_cpu >= counted_cpu**2 / 3


@pytest.mark.parametrize("restore", [True, False])
def test_late_gpu_records_of_dropped_steps_follow_the_restore_wherever_they_were_filed(restore: bool) -> None:
    C.start(False, [], True)
    # Epoch 0 is dropped by the first cut (for good at the second); epochs 1 and 2 by the second
    # cut; epoch 3 counts. Epoch 2's kernel arrives before the second cut, epoch 1's right after
    # it, to a node that has not followed that cut yet (it holds epoch 2), epoch 0's at the end.
    kernel = {1: (0, 10), 2: (1_000, 1_100), 3: (2_000, 2_200), 4: (5_000, 5_400)}
    after = {1: ["cut"], 3: [3, "cut", 2], 4: [4, "restore" if restore else None, 1]}
    for corr in (1, 2, 3, 4):
        launch(corr)  # one call site: one kernel node
        C.end_epoch(True)
        for what in after.get(corr, []):
            if what == "cut":
                C.cut_counted()
            elif what == "restore":
                C.restore_last_cut()
            elif isinstance(what, int):
                T.kernel_record(what, *kernel[what], 0, "gemm")
    raw = C.stop(last_counted=False)
    k = under_line(raw, launch, "launch", "kernel")
    dropped = (100 + 200, 2)
    counted, outside = ((400, 1), (10, 1))
    if restore:
        counted = (counted[0] + dropped[0], counted[1] + dropped[1])
    else:
        outside = (outside[0] + dropped[0], outside[1] + dropped[1])
    assert (k.counted.gpu_ns, k.counted.completed) == counted
    assert (k.outside.gpu_ns, k.outside.completed) == outside


def test_the_idle_blame_counts_the_restored_steps_again() -> None:
    ops_ = [
        ("mark", 0, 1, 0, 0),
        ("sample", 5, 1, 5, 1),
        ("mark", 10, 1, 0, 0),
        ("cut", 0, 0, 0, 0),  # step 1 dropped for good
        ("sample", 15, 2, 5, 1),
        ("mark", 20, 1, 0, 0),
        ("settle", 1_000_000_000_000, 0, 0, 0),  # step 2 resolved before the cut that drops it
        ("sample", 25, 3, 5, 1),
        ("mark", 30, 1, 0, 0),
        ("cut", 0, 0, 0, 0),  # steps 2 and 3 dropped
        ("sample", 35, 4, 5, 1),
        ("mark", 40, 0, 0, 0),
    ]
    kept = T.idle_blame(False, ops_)
    assert kept["steps"] == 1 and [n for n, _, _ in kept["host"]] == [4]
    restored = T.idle_blame(False, [*ops_[:-1], ("restore", 0, 0, 0, 0), ops_[-1]])
    assert restored["steps"] == 3 and sorted(n for n, _, _ in restored["host"]) == [2, 3, 4]
    # The second cut extending the first one's drop: step 1 comes back too.
    extended = [*ops_[:9], ("cut", 1, 0, 0, 0), ops_[10], ("restore", 0, 0, 0, 0), ops_[-1]]
    out = T.idle_blame(False, extended)
    assert out["steps"] == 4 and sorted(n for n, _, _ in out["host"]) == [1, 2, 3, 4]


@pytest.fixture(autouse=True)
def _no_profile_left():
    yield
    if C.running():
        C.stop()
