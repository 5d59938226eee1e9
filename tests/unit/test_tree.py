"""Tree building: sibling merge, inclusive/exclusive sums, deep trees."""

from __future__ import annotations

import sys

from dlpt.model.meta import Extras
from dlpt.model.metrics import METRICS
from dlpt.model.session import Session
from dlpt.model.tree import Node, build_tree, walk
from dlpt.trees.folding import FoldedTable
from dlpt.trees.processors import prune


def test_merge_duplicate_siblings(h) -> None:
    b = h.Builder()
    f1 = b.frame(0, h.TRAIN, 43, "train_step", api_ns=5)
    f2 = b.frame(0, h.TRAIN, 43, "train_step", api_ns=7)
    b.kernel(b.op(f1, "aten::mm", calls=1), "gemm", 1, 100, grid=(8, 1, 1))
    b.kernel(b.op(f2, "aten::mm", calls=2), "gemm", 3, 300, grid=(16, 1, 1))
    b.op(f2, "aten::add", calls=1)
    b.frame(0, h.TRAIN, 44, "train_step")  # other line: not merged
    root = build_tree(b.session())
    assert [c.line for c in root.children] == [43, 44]
    frame = root.children[0]
    assert frame.metrics == {"api_ns": 12}
    assert [c.name for c in frame.children] == ["aten::mm", "aten::add"]
    mm = frame.children[0]
    assert mm.metrics["calls"] == 3
    (kernel,) = mm.children  # the kernels under the merged ops merged too
    assert kernel.metrics["kernels"] == 4 and kernel.metrics["gpu_ns"] == 400
    assert kernel.extras["grid"] == [8, 1, 1]  # extras of the first
    # min/max combine as min/max, not as sums
    assert kernel.metrics["min_ns"] == 90 and kernel.metrics["max_ns"] == 120


def test_kinds_differ_no_merge(h) -> None:
    b = h.Builder()
    b.op(0, "x")
    b.add(0, "scope", "x")
    root = build_tree(b.session())
    assert len(root.children) == 2


def test_inclusive_exclusive(h) -> None:
    root = build_tree(h.build_gpu(steps=1).session())
    # Exclusive metrics sum to the root's inclusive ones (nothing lost or double counted).
    totals: dict[str, int] = {}
    for node, _ in walk(root):
        for k, v in node.metrics.items():
            if k not in ("min_ns", "max_ns"):
                totals[k] = totals.get(k, 0) + v
    assert {k: root.inclusive[k] for k in totals} == totals
    assert root.inclusive["gpu_ns"] == 2 * (6_000_000 + 9_000_000) + 400_000 + 2_000_000 + 120_000
    for node, _ in walk(root):
        expect = node.metrics.get("gpu_ns", 0) + sum(c.inclusive.get("gpu_ns", 0) for c in node.children)
        assert node.inclusive.get("gpu_ns", 0) == expect
    assert root.metrics == {}


def _chain(h, depth: int):
    b = h.Builder()
    parent = 0
    for i in range(depth):
        parent = b.frame(parent, h.MODEL, 30 + i % 2, "recurse")
    b.kernel(b.op(parent, "aten::add"), "add_kernel", 1, 1000)
    return b.session()


def test_deep_tree_builds_iteratively(h) -> None:
    assert sys.getrecursionlimit() < 10_000
    root = build_tree(_chain(h, 10_000))
    assert root.inclusive["gpu_ns"] == 1000
    depth = max(d for _, d in walk(root))
    assert depth == 10_002


def test_typed_extras_type_the_keys_reports_read_and_leave_the_rest_as_they_came() -> None:
    x = {"full_name": "_Z1k", "grid": [8, 1, 1], "regs": "many", "direction": None, "other_tool": {"a": 1}}
    node = Node("kernel", "k", extras=x)
    # A key of the wrong shape (a session made in memory; a loaded one was checked) reads as absent.
    assert node.typed_extras == Extras(full_name="_Z1k", grid=[8, 1, 1]) == Extras.of(x)
    assert node.typed_extras is node.typed_extras  # built once
    assert node.extras == x  # every key kept, other tools' too
    assert Node("frame", "f", extras={"ctx": 1}).typed_extras == Extras()


def test_dlpts_notes_are_kept_among_the_extras_so_copies_carry_them() -> None:
    node = Node("frame", "f")
    assert (node.ctx, node.marker) == (0, "")
    node.ctx, node.marker = 5, "graph break"
    assert node.extras == {"ctx": 5, "marker": "graph break"}
    copy = Node(node.kind, node.name, extras=node.extras)
    assert (copy.ctx, copy.marker, copy.typed_extras) == (5, "graph break", Extras())


def test_a_loaded_sessions_extras_are_typed_once_at_load_and_its_trees_take_them() -> None:
    x = {"full_name": "_Z1k", "grid": [8, 1, 1], "direction": None, "other_tool": 1}
    nodes = [
        {"id": 0, "parent": -1, "kind": "root", "name": "<root>"},
        {"id": 1, "parent": 0, "kind": "kernel", "name": "k", "m": {"gpu_ns": 5}, "x": x},
    ]
    s = Session.from_dict({"format": "dlpt-session", "version": 3, "meta": {}, "nodes": nodes})
    held = s.held_extras(1)
    assert held == Extras(full_name="_Z1k", grid=[8, 1, 1]) == Extras.of(x)
    assert s.held_extras(0) is None  # no extras
    kernel = build_tree(s).children[0]
    assert kernel.typed_extras is held
    folded = FoldedTable(s, show_all=True).tree()
    assert folded.children[0].typed_extras is held
    assert prune(folded, METRICS["gpu"], 0.0).children[0].typed_extras is held  # copies carry it
    s.nodes[1]["x"] = {"full_name": "_Z1j"}  # replaced: typed again where read
    assert s.held_extras(1) is None
    assert build_tree(s).children[0].typed_extras == Extras(full_name="_Z1j")
    assert Session(nodes).held_extras(1) is None  # made in memory: typed where read
