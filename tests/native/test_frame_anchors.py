"""Frame anchors (csrc/frames/activations.h, csrc/context/frame_anchors.h): a walk of a thread's
Python frames for a launch's path may stop at an outer frame whose code started no activation
since the anchor was taken. The hazard it must get right: a new call of the same function from
another line of the same caller puts the same code at the same frame address under the same
caller frame, and only the count of starts tells the two activations apart.

CPython 3.12+ counts starts through sys.monitoring (a profile's FrameAnchors source); on any
version the test seam counts every call with a C profile function instead, so these tests run
on 3.11 too. GPU records through the testing seams (no GPU needed)."""

from __future__ import annotations

import sys

import pytest
import torch

import dlpt
from dlpt.capture.native import core
from tests.query import Q, kernel_ns_by_line, line_of

C = core()
T = C._testing


def leaf(corr: int) -> None:
    T.launch(corr)  # @launch


def mid(corr: int) -> None:
    leaf(corr)


def anchored(corr: int, n: int) -> None:
    for k in range(n):  # consecutive launches under one activation of this frame: its anchor
        mid(corr + k)


def driver(corr: int, first: bool) -> None:
    # The two calls leave `anchored` at the same address, under this same frame, with the same
    # code: only its count of starts says the second is a new activation, on another line.
    if first:
        anchored(corr, 3)  # @first
    else:
        anchored(corr, 3)  # @second


def deep(levels: int, corr: int, first: bool) -> None:
    if levels:
        deep(levels - 1, corr, first)
    else:
        driver(corr, first)


def run(plan: list[bool]) -> tuple[dict, dict[str, int]]:
    """Launches 3 kernels per entry of `plan` (first line or second), 12 frames deep."""
    expected = {"first": 0, "second": 0}
    corr = 5000
    for first in plan:
        deep(10, corr, first)
        for k in range(3):
            T.kernel_record(corr + k, 0, 10 + corr + k, 0, "k")
            expected["first" if first else "second"] += 10 + corr + k
        corr += 3
    return C.stop(), expected


@pytest.fixture
def counted_starts():
    """Anchors on, starts counted by the profile-function seam; everything off afterwards."""
    C.anchors_enable(4, None, None, 1)
    T.count_starts_by_profile(True)
    try:
        yield
    finally:
        T.count_starts_by_profile(False)
        C.anchors_disable()
        if C.running():
            C.stop()


PLAN = [True, True, False, True, False, False, True, False] * 6


def test_a_new_activation_at_the_same_address_under_the_same_caller_keeps_its_own_line(counted_starts):
    C.start(False, [], True)
    raw, expected = run(PLAN)
    assert kernel_ns_by_line(raw, driver, ["first", "second"]) == expected
    counters = raw["counters"]
    # The anchors were used (else this test proves nothing about them) ...
    assert counters["anchored_walks"] > len(PLAN), counters
    assert C.anchors_stats()["monitored"] >= 1
    # ... and saved frames: the same launches with every walk going to the root read more.
    T.count_starts_by_profile(False)
    C.anchors_disable()
    C.start(False, [], True)
    plain, _ = run(PLAN)
    assert plain["counters"]["python_walks"] == counters["python_walks"]
    assert counters["python_frames_walked"] < 0.7 * plain["counters"]["python_frames_walked"]


def two_lines(corr: int) -> None:
    T.launch(corr)  # @one
    T.launch(corr + 1)  # @two


def deep_two(levels: int, corr: int) -> None:
    if levels:
        deep_two(levels - 1, corr)
    else:
        two_lines(corr)


@pytest.mark.parametrize("min_inner", ["2", "0"])
def test_an_anchor_at_the_innermost_frame_keeps_each_line_of_it(counted_starts, monkeypatch, min_inner):
    # DLPT_ANCHOR_MIN_INNER=0 (bench/paired.py's dlpt_inner0) lets the frame that launches be an
    # anchor: the second launch of each call walks that one frame, and its line must come from
    # the frame's instruction, not from the anchor's path; each call is a new activation at the
    # same address, on which the first launch must not reuse the last call's anchor. (Here the
    # default reads fewer frames, 1,168 against 1,884: the innermost anchor, void at every call,
    # keeps the stable outer frame from being anchored, and the first launch of each call walks
    # to the root.)
    monkeypatch.setenv("DLPT_ANCHOR_MIN_INNER", min_inner)
    C.start(False, [], True)
    expected = {"one": 0, "two": 0}
    for i in range(40):
        corr = 20_000 + 2 * i
        deep_two(10, corr)
        for k, line in enumerate(("one", "two")):
            T.kernel_record(corr + k, 0, 10 + i + k, 0, "k")
            expected[line] += 10 + i + k
    raw = C.stop()
    assert kernel_ns_by_line(raw, two_lines, ["one", "two"]) == expected
    counters = raw["counters"]
    if min_inner == "2":  # one outer frame anchors every walk below it
        assert counters["anchored_walks"] > 70 and counters["anchors_taken"] <= 2, counters
    else:  # each call's frame is anchored, and its second launch stops there
        assert counters["anchored_walks"] >= 39 and counters["anchors_taken"] >= 39, counters


def test_without_counted_starts_every_walk_goes_to_the_root():
    C.start(False, [], True)
    raw, expected = run(PLAN[:8])
    assert kernel_ns_by_line(raw, driver, ["first", "second"]) == expected
    assert raw["counters"]["anchored_walks"] == 0
    assert raw["counters"]["python_walks"] >= 3 * 8


def test_anchors_are_void_once_monitoring_ends(counted_starts):
    C.start(False, [], True)
    for i in range(6):
        deep(10, 7000 + 3 * i, True)
    C.anchors_disable()  # as a profile's stop does first: no start is counted from here on
    T.count_starts_by_profile(False)
    before = C.anchors_stats()
    for i in range(6, 12):
        deep(10, 7000 + 3 * i, i % 2 == 0)
    raw = C.stop()
    assert before == {"monitored": 0, "requested": 0}
    # Anchors were taken before, and none was used after (their walks would have been
    # counted as anchored): 6 rounds of 3 launches at most anchored in the first half.
    assert 0 < raw["counters"]["anchored_walks"] <= 6 * 3


def scoped(corr: int, n: int, scope: bool) -> None:
    if scope:
        with dlpt.scope("region"):
            anchored(corr, n)  # @scoped
    else:
        anchored(corr, n)  # @plain


def test_a_scope_entered_under_an_anchor_still_lands_its_kernels_under_the_scope(counted_starts):
    C.start(False, [], True)
    plan = [False, True, False, False, True, True, False, True]
    corr = 9000
    for s in plan:
        for _ in range(2):
            scoped(corr, 3, s)
            for k in range(3):
                T.kernel_record(corr + k, 0, 100, 0, "k")
            corr += 3
    raw = C.stop()
    assert kernel_ns_by_line(raw, scoped, ["scoped", "plain"]) == {
        "scoped": 600 * sum(plan),
        "plain": 600 * (len(plan) - sum(plan)),
    }


def relu_ops(x: torch.Tensor, n: int) -> None:
    for _ in range(n):
        torch.relu(x)


def ops_at(x: torch.Tensor, first: bool) -> None:
    if first:
        relu_ops(x, 4)  # @relu_first
    else:
        relu_ops(x, 4)  # @relu_second


@pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring is CPython 3.12+")
def test_a_profile_lends_a_monitoring_tool_and_gives_it_back():
    mon = sys.monitoring  # type: ignore[attr-defined,unused-ignore]
    x = torch.ones(8)
    with dlpt.profile(gpu=False, calibrate=False, sample_hz=0) as prof:
        held = [t for t in (3, 4) if mon.get_tool(t) == "dlpt"]
        for i in range(60):
            ops_at(x, i % 3 != 0)
    assert len(held) == 1
    assert mon.get_tool(held[0]) is None
    assert C.anchors_stats() == {"monitored": 0, "requested": 0}
    capture = prof.session.meta["capture"]
    assert capture["anchored_walks"] > 60, capture
    q = Q(prof.session)
    first, second = (
        sum(n["m"].get("calls", 0) for n in q.under_line(__file__, line_of(tag, ops_at)) if n["kind"] == "op")
        for tag in ("relu_first", "relu_second")
    )
    assert (first, second) == (40 * 4, 20 * 4)
