"""An op's fastest call (csrc/cct/metrics.h, ``Metrics::add_op_self``): the core keeps each op
context's shortest CPU self time beside its sum, and the session turns it into the op's floor,
its calls times that fastest call (``dlpt.capture.native.FLOOR_KEY``), which a few slow calls
(a busy host's preemptions) do not move. Real capture on the CPU."""

from __future__ import annotations

import torch

from dlpt.capture.native import FLOOR_KEY, core, node_table
from tests.native.test_epochs import under_line

C = core()


def products(xs: list[torch.Tensor]) -> None:
    for x in xs:
        torch.mm(x, x)  # @mm


def test_the_floor_is_the_calls_times_the_fastest_call_and_a_slow_call_does_not_raise_it():
    small, big = torch.ones(4, 4), torch.ones(300, 300)
    products([small] * 3)  # torch's own first-call costs, before recording
    C.start(False, [], True)
    products([small] * 20 + [big] * 2)
    raw = C.stop()
    op = under_line(raw, products, "mm", "op", __file__)
    forward = under_line(raw, products, "mm", "phase", __file__)  # the op's self time and fastest call
    assert op.counted.calls == 22
    assert 0 < forward.counted.min_ns < forward.counted.cpu_ns / 22  # below the mean: the big calls
    node = node_table(raw["nodes"]).nodes[forward.id]
    assert node["m"][FLOOR_KEY] == 22 * forward.counted.min_ns
    assert node["m"][FLOOR_KEY] < node["m"]["cpu_ns"] / 2


def test_an_op_context_without_calls_has_no_floor():
    C.start(False, [], True)
    products([torch.ones(4, 4)] * 5)
    raw = C.stop()
    table = node_table(raw["nodes"]).nodes
    frames = [n for n in table if n["kind"] in ("frame", "root", "thread")]
    assert frames and not any(FLOOR_KEY in n["m"] for n in frames)
