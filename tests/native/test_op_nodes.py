"""Outermost ops find their op node and its forward phase through a per-thread memo keyed by
(context node, op name) (csrc/context/op_node_memo.h), ahead of the tree cache. 3,200 (line, op)
sites in its 2,048 slots overwrite each other, and each must still land on its own line, op and
phase: a memo that left the context out of its key filed ops of one line under another's (tried:
fails). The eight ops of one line share the context (same frame, same instruction) and differ in
the name only; the index spreads consecutive name ids to distinct slots, so leaving the name out
of the compare is not seen here (tried). No GPU needed."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from dlpt.capture.native import RawNode, core

C = core()
FILE = "<many_ops>"


@pytest.fixture(autouse=True)
def _no_profile_left():
    yield
    if C.running():
        C.stop()


@pytest.mark.parametrize("memo", ["1", "0"])
def test_more_op_sites_than_the_memo_holds_each_keep_their_ops(monkeypatch, memo):
    monkeypatch.setenv("DLPT_OP_MEMO", memo)  # read at start (BenchSwitches): 0 = tree cache only
    ops = (torch.neg, torch.abs, torch.sin, torch.cos, torch.exp, torch.tanh, torch.sigmoid, torch.relu)
    names = [f"aten::{op.__name__}" for op in ops]
    lines, passes = 400, 3  # 3,200 (line, op) sites in 2,048 slots
    src = "def many(ops, x):\n" + "    for op in ops: op(x)\n" * lines
    scope: dict = {}
    exec(compile(src, FILE, "exec"), scope)
    x = torch.ones(2)
    C.start(False, [], True)
    for _ in range(passes):
        scope["many"](ops, x)
    raw = C.stop()
    ns = [RawNode.of(t) for t in raw["nodes"]]
    calls: Counter = Counter()
    for n in ns:
        if n.kind == "op" and ns[n.parent].file == FILE:
            calls[(ns[n.parent].line, n.name)] += n.counted.calls
    assert calls == {(2 + k, op): passes for k in range(lines) for op in names}
    # Each op's CPU time went to its own forward phase (the op entry's context).
    timed = Counter(
        ns[p.parent].id
        for p in ns
        if p.kind == "phase"
        and p.counted.cpu_ns > 0
        and ns[p.parent].kind == "op"
        and ns[ns[p.parent].parent].file == FILE
    )
    assert len(timed) == len(ops) * lines and set(timed.values()) == {1}
    assert raw["counters"]["outermost_ops"] == len(ops) * lines * passes
