"""set_tracing (csrc/controller.h): tracing suspended and resumed within one profile, on the CPU.
Off, dlpt's callbacks are disabled: ops run and leave no trace, and dlpt's callback does not run
(op_records); on again, everything records as before. GPU launches through the testing seams."""

from __future__ import annotations

import os

import pytest
import torch
from torch.profiler import record_function

from dlpt.capture.native import RawNode, core
from tests.query import line_of

C = core()
T = C._testing
X = torch.ones(2)


def ops(n: int) -> None:
    for _ in range(n):
        torch.add(X, 1)  # @add


def nodes(raw) -> list[RawNode]:
    return [RawNode.of(t) for t in raw["nodes"]]


def calls_on_line(raw, fn, tag: str, name: str) -> int:
    """Calls of op `name` anywhere under frames of the line tagged `tag` in `fn`."""
    ns = nodes(raw)
    line = line_of(tag, fn)
    frames = {n.id for n in ns if n.kind == "frame" and n.file == __file__ and n.line == line}
    total = 0
    for n in ns:
        p = n.parent
        while p >= 0 and p not in frames:
            p = ns[p].parent
        if p in frames and n.name == name:
            total += n.counted.calls + n.outside.calls
    return total


def test_off_nothing_is_recorded_and_dlpt_does_not_run_per_op():
    C.start(False, [], True)
    for n, on in [(3, False), (500, True), (5, None)]:
        ops(n)
        if on is not None:
            C.set_tracing(on)
    raw = C.stop()
    assert calls_on_line(raw, ops, "add", "aten::add") == 3 + 5
    # dlpt's op callback ran for the traced ops only: not for the 500 while suspended
    assert raw["counters"]["op_records"] < 100
    assert raw["counters"]["tracing_switches"] == 2 and raw["counters"]["tracing_switch_ns"] > 0
    assert [on for on, _ in raw["tracing_switches"]] == [False, True]
    assert all(ns > 0 for _, ns in raw["tracing_switches"])


def test_switching_is_idempotent_and_a_no_op_without_a_profile():
    C.set_tracing(False)  # nothing running: nothing happens
    C.start(False, [], True)
    for on in (False, False, True, True):
        C.set_tracing(on)
    ops(2)
    raw = C.stop()
    assert raw["counters"]["tracing_switches"] == 2
    assert calls_on_line(raw, ops, "add", "aten::add") == 2


def scope_open_across_switches() -> None:
    with record_function("traced_then_suspended"):  # start seen, end while suspended
        C.set_tracing(False)
    with record_function("suspended_then_traced"):  # start while off, end after on
        C.set_tracing(True)
        ops(1)  # @inside
    with record_function("traced_around_a_pause"):  # start seen, end after off and on again
        C.set_tracing(False)
        C.set_tracing(True)
    ops(4)  # @after


def test_switching_inside_open_records_keeps_the_record_stack_straight():
    C.start(False, [], True)
    scope_open_across_switches()
    raw = C.stop()
    ns = nodes(raw)
    assert raw["counters"]["unmatched_op_ends"] == 0
    # the ops after the scopes are outermost ops on their own line, under no scope
    assert calls_on_line(raw, scope_open_across_switches, "after", "aten::add") == 4
    after = line_of("after", scope_open_across_switches)
    for n in ns:
        if n.kind == "frame" and n.line == after:
            p = n.parent
            while p >= 0:
                assert ns[p].kind != "scope", ns[p].name
                p = ns[p].parent
    # the scope whose start came while suspended is not recorded; its op is (it ran traced)
    assert "suspended_then_traced" not in {n.name for n in ns if n.kind == "scope"}
    assert calls_on_line(raw, scope_open_across_switches, "inside", "aten::add") == 1
    assert sum(n.counted.calls for n in ns if n.name == "aten::add") == 1 + 4


def test_stop_while_suspended_and_the_next_profile_records_again():
    C.start(False, [], True)
    ops(2)
    C.set_tracing(False)
    ops(50)
    raw = C.stop()
    assert sum(n.counted.calls for n in nodes(raw) if n.name == "aten::add") == 2
    C.start(False, [], True)  # callbacks installed afresh: enabled
    ops(3)
    raw = C.stop()
    assert sum(n.counted.calls for n in nodes(raw) if n.name == "aten::add") == 3
    assert raw["counters"]["tracing_switches"] == 0


def test_backward_pauses_and_suspension_hold_the_function_callback_off_together():
    C.start(False, [], True, split_backward=True)
    C.set_tracing(False)
    token = C.pause_function_records()  # a backward pass starts while suspended ...
    C.resume_function_records(token)  # ... and ends: the FUNCTION callback stays off
    ops(40)
    C.set_tracing(True)
    ops(3)
    token = C.pause_function_records()  # a backward pass holds it off ...
    C.set_tracing(False)
    C.set_tracing(True)  # ... resuming tracing does not turn it on under the pass
    ops(40)
    C.resume_function_records(token)
    ops(5)
    raw = C.stop()
    assert sum(n.counted.calls for n in nodes(raw) if n.name == "aten::add") == 3 + 5


def launch(corr: int) -> None:
    T.launch(corr)  # @launch


def test_a_launch_call_cut_by_a_switch_is_dropped_not_matched_with_the_next():
    C.start(False, [], True)
    T.api_call(7, True)  # a driver call enters ...
    C.set_tracing(False)  # ... tracing is suspended: its exit callback never comes
    C.set_tracing(True)
    launch(8)  # the next call is an outermost call of its own, on its own line
    T.kernel_record(8, 0, 100, 0, "k")
    raw = C.stop()
    ns = nodes(raw)
    k = next(n for n in ns if n.kind == "kernel")
    assert ns[k.parent].kind == "frame" and ns[k.parent].line == line_of("launch", launch)
    assert ns[k.parent].counted.api_ns > 0


def test_a_forked_child_is_unaffected():
    C.start(False, [], True)
    C.set_tracing(False)
    pid = os.fork()
    if pid == 0:  # the child: no profile of its own; switching and ops do nothing to dlpt
        code = 0
        try:
            C.set_tracing(True)
            C.set_tracing(False)
            assert C.end_epoch(True) == 0
            ops(5)
            assert torch.add(X, 1).sum().item() == 4
        except BaseException:  # noqa: BLE001 - any failure becomes the child's exit status
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    C.set_tracing(True)
    ops(2)
    raw = C.stop()
    assert raw["counters"]["tracing_switches"] == 2  # the child's calls switched nothing here
    assert calls_on_line(raw, ops, "add", "aten::add") == 2


def test_epochs_end_while_suspended():
    C.start(False, [], True)
    for n, step in [(2, "off"), (30, "end"), (30, "on"), (4, None)]:
        ops(n)
        if step == "off":
            C.set_tracing(False)
        elif step == "on":
            C.set_tracing(True)
        elif step == "end":
            assert C.end_epoch(False) == 1
    raw = C.stop(last_counted=True)
    adds = [n for n in nodes(raw) if n.name == "aten::add"]
    assert (sum(n.outside.calls for n in adds), sum(n.counted.calls for n in adds)) == (2, 4)


@pytest.fixture(autouse=True)
def _no_profile_left():
    yield
    if C.running():
        C.stop()
