"""Backward passes make no aten-op records by default (csrc/context/aten_ops.cpp,
dlpt/capture/backward_records.py): the FUNCTION-scope callback is paused around each backward
pass started from Python, and backward nodes are still recorded and grafted under their forward
ops. Real capture on the CPU."""

from __future__ import annotations

import threading

import torch
import torch.autograd

import dlpt
import dlpt.capture.profiler
from dlpt.capture import native
from tests.query import Q, line_of

HERE = __file__


def train(x, w, steps):
    for _ in range(steps):
        h = torch.tanh(x @ w)  # @forward
        loss = (h * h).sum()
        loss.backward()


def test_backward_passes_make_no_op_records_yet_nodes_keep_their_forward_lines(monkeypatch):
    x, w = torch.randn(8, 16), torch.randn(16, 16, requires_grad=True)
    train(x, w, 2)
    with dlpt.profile(gpu=False) as paused:
        train(x, w, 5)
    monkeypatch.setattr(dlpt.capture.profiler, "backward_ops", lambda nested_ops, flops: "kept")
    with dlpt.profile(gpu=False) as kept:
        train(x, w, 5)
    assert paused.session.meta["capture"]["backward_ops"] == "paused"
    assert kept.session.meta["capture"]["backward_ops"] == "kept"
    # The engine's evaluate_function wrappers and the ops inside nodes are gone...
    assert paused.session.meta["capture"]["op_records"] < kept.session.meta["capture"]["op_records"]
    for prof in (paused, kept):
        q = Q(prof.session)
        line = line_of("forward", train)
        names = {n["name"]: n for n in q.under_line(HERE, line) if n["kind"] == "op"}
        # ...and the nodes still sit under the forward line, once per step.
        assert {"aten::matmul", "aten::tanh", "MmBackward0", "TanhBackward0"} <= set(names), names
        assert names["MmBackward0"]["m"]["calls"] == 5 and names["aten::tanh"]["m"]["calls"] == 5
        assert prof.session.meta["capture"]["backward_unresolved"] == 0


def test_forward_ops_after_a_backward_pass_are_recorded_again():
    x, w = torch.randn(8, 16), torch.randn(16, 16, requires_grad=True)
    with dlpt.profile(gpu=False) as prof:
        train(x, w, 3)
        after = torch.sin(x)  # @after
    q = Q(prof.session)
    sins = [
        n
        for n in q.under_line(
            HERE, line_of("after", test_forward_ops_after_a_backward_pass_are_recorded_again)
        )
    ]
    assert any(n["name"] == "aten::sin" and n["m"]["calls"] == 1 for n in sins)
    assert after.shape == x.shape


def test_the_autograd_entry_point_is_restored_at_stop():
    original = torch.autograd._engine_run_backward
    with dlpt.profile(gpu=False):
        assert torch.autograd._engine_run_backward is not original
        assert torch.autograd._engine_run_backward.__wrapped__ is original
    assert torch.autograd._engine_run_backward is original


def test_nested_ops_keep_backward_records():
    x, w = torch.randn(8, 16), torch.randn(16, 16, requires_grad=True)
    original = torch.autograd._engine_run_backward
    with dlpt.profile(gpu=False, nested_ops=True) as prof:
        assert torch.autograd._engine_run_backward is original  # nothing to pause
        train(x, w, 1)
    assert prof.session.meta["capture"]["backward_ops"] == "kept"


def test_a_pause_left_over_from_a_stopped_capture_changes_nothing():
    C = native.core()
    C.start(False, [], True, split_backward=True)
    token = C.pause_function_records()
    assert token
    C.stop()
    C.start(False, [], True, split_backward=True)
    try:
        C.resume_function_records(token)  # of the old capture: ignored
        C.resume_function_records(token)
        torch.sin(torch.randn(4))
        torch.cos(torch.randn(4))
    finally:
        res = C.stop()
    assert res["counters"]["op_records"] >= 4  # randn, sin, randn, cos: records were on


def _records(fn) -> int:
    C = native.core()
    C.start(False, [], True, split_backward=True)
    try:
        fn(C)
    finally:
        res = C.stop()
    return res["counters"]["op_records"]


def test_concurrent_backward_passes_resume_only_when_the_last_ends():
    def ops():
        torch.cos(torch.randn(4))

    def on_a_thread():
        t = threading.Thread(target=ops)
        t.start()
        t.join()

    def two_passes(C):
        a, b = C.pause_function_records(), C.pause_function_records()
        C.resume_function_records(a)
        on_a_thread()  # one pass still under way: no FUNCTION records, on any thread
        C.resume_function_records(b)
        ops()

    plain = _records(lambda C: ops())
    assert plain > 0
    assert _records(lambda C: on_a_thread()) == plain
    assert _records(two_passes) == plain  # only the ops after the last resume
