"""The report's tree, folded and pruned from the flat table (dlpt.trees.folding), is the tree the
processors give: prune(collapse_lone_forward(collapse_library(build_tree(s)))). Same nodes, same
exclusive and inclusive metrics, same extras, the same forward/backward/compiled context bits as
dlpt.trees.node_contexts.tag_contexts gives before the lone <forward> phases go; library folding keeps model
code inside module calls. report_tree (what the HTML report, exports and dlpt diff start from) is
that folding, unpruned."""

from __future__ import annotations

import random
from typing import Any

import pytest

from dlpt.capture.exec_frames import mark_library_exec_frames
from dlpt.model.metrics import METRICS
from dlpt.model.session import Session
from dlpt.model.tree import Node, build_tree
from dlpt.trees.folding import FoldedTable, report_tree
from dlpt.trees.node_contexts import CTX_KEY, tag_contexts
from dlpt.trees.processors import collapse_library, collapse_lone_forward, prune
from tests.big_sessions import wide_session

TORCH = "/opt/venv/lib/python3.11/site-packages/torch"
PKG = "/opt/venv/lib/python3.11/site-packages"


def canonical(node: Node) -> Any:
    """The tree as nested tuples, children in key order (the order of equal-metric siblings is
    not part of the contract, nor which merged node's extras a node keeps)."""
    kids = sorted((canonical(c) for c in node.children), key=repr)
    return (node.key, node.metrics, node.inclusive, tuple(kids))


def reference(session: Session, metric: str, threshold: float | None, show_all: bool) -> Node:
    root = build_tree(session)
    if not show_all:
        root = collapse_library(root)
    root = collapse_lone_forward(root)
    return root if threshold is None else prune(root, METRICS[metric], threshold)


def random_session(seed: int, n: int = 3000, contexts: bool = False) -> Session:
    """Frames of user files, torch (module calls among them), installed packages and <string>
    exec'd code, ops with one or both phases, duplicate keys everywhere (merges across folds),
    kernels, copies and syncs, all with random costs."""
    rng = random.Random(seed)
    frames = [
        ("/home/u/train.py", "main"),
        ("/home/u/model.py", "Net.forward"),
        (f"{TORCH}/nn/modules/module.py", "Module._call_impl"),
        (f"{TORCH}/nn/functional.py", "linear"),
        (f"{PKG}/transformers/models/gpt2/modeling_gpt2.py", "GPT2Attention.forward"),
        (f"{PKG}/transformers/generation/utils.py", "GenerationMixin.generate"),
        (f"{PKG}/triton/runtime/jit.py", "run"),
        ("<string>", "launcher"),
    ]
    nodes: list[dict[str, Any]] = [{"id": 0, "parent": -1, "kind": "root", "name": "<root>"}]
    for i in range(1, n):
        p = rng.randrange(0, i)
        pk = nodes[p]["kind"]
        if pk in ("kernel", "memcpy", "sync"):
            p, pk = 0, "root"
        choice = rng.random()
        node: dict[str, Any] = {"id": i, "parent": p}
        if pk == "op" and choice < 0.5:
            node.update(kind="phase", name=rng.choice(["<forward>", "<forward>", "<backward>"]))
        elif choice < 0.55:
            node.update(
                kind="kernel",
                name=rng.choice(["gemm", "relu"]),
                m={"kernels": 1, "gpu_ns": rng.randint(0, 9)},
            )
            if rng.random() < 0.5:
                node["x"] = {"grid": [rng.randint(1, 3), 1, 1]}
        elif choice < 0.6:
            node.update(kind="sync", name="[sync cudaStreamSynchronize]", m={"syncs": 1, "sync_ns": 5})
        elif choice < 0.65:
            node.update(kind="memcpy", name="[memcpy HtoD]", m={"copies": 1, "copy_ns": 3, "copy_bytes": 8})
        elif choice < 0.8:
            node.update(
                kind="op",
                name=rng.choice(["aten::mm", "aten::add"]),
                m={"calls": 1, "cpu_ns": rng.randint(0, 9)},
            )
        else:
            file, name = rng.choice(frames)
            node.update(
                kind="frame", name=name, file=file, line=rng.choice([1, 2]), m={"api_ns": rng.randint(0, 2)}
            )
        nodes.append(node)
    for node in nodes:
        node.setdefault("file", "")
    mark_library_exec_frames(nodes)  # <string> frames called from library code, as capture marks them
    if contexts:
        _add_contexts(nodes, rng)
    return Session.from_dict({"format": "dlpt-session", "version": 2, "meta": {}, "nodes": nodes})


def _add_contexts(nodes: list[dict[str, Any]], rng: random.Random) -> None:
    """What the context bits read: optimizer scopes, compiled regions, Inductor's generated and
    mapped frames and graph kernels, CUDA graph replays. As the core records them, nodes whose
    extras differ never share a key (a graph kernel's name carries its graph, generated and mapped
    frames have lines of their own here) and an op that has phases has nothing else directly
    beneath it: no merge is decided by which node comes first (not part of the contract)."""
    for n in nodes[1:]:
        r = rng.random()
        if n["kind"] == "op" and r < 0.15:
            n["name"] = rng.choice(["CompiledFunction", "Torch-Compiled Region: 0/0"])
        elif n["kind"] == "frame" and r < 0.05:
            n.update(kind="scope", name="Optimizer.step#AdamW.step", file="", line=0)
        elif n["kind"] == "frame" and r < 0.2:
            extra = rng.choice(["generated", "mapped_from"])
            n["x"] = {**n.get("x", {}), extra: "inductor"}
            n["line"] = 7 if extra == "generated" else 8
        elif n["kind"] == "kernel" and r < 0.3:
            n["x"] = {**n.get("x", {}), "graph": "0_forward"}
            n["name"] += " [0_forward]"
        elif n["kind"] == "phase" and n["name"] == "<backward>" and r < 0.2:
            n["name"] = "<cuda graph replay>"
    # Only outermost ops (no op above them) have phases, and nothing else directly beneath them.
    outermost = [False] * len(nodes)
    below_op = [False] * len(nodes)
    for n in nodes[1:]:
        p = n["parent"]
        below_op[n["id"]] = below_op[p] or nodes[p]["kind"] == "op"
        outermost[n["id"]] = n["kind"] == "op" and not below_op[n["id"]]
    first_phase: dict[int, int] = {}
    for n in nodes[1:]:
        p = n["parent"]
        if n["kind"] == "phase" and not outermost[p]:
            n["kind"] = "scope"  # a nested op's "phase": any other region
        elif n["kind"] == "phase":
            first_phase.setdefault(p, n["id"])
    for n in nodes[1:]:
        p = n["parent"]
        if outermost[p] and n["kind"] != "phase":
            n["parent"] = first_phase[p] if first_phase.get(p, n["id"]) < n["id"] else nodes[p]["parent"]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("threshold", [None, 0.0, 0.01, 0.2])
@pytest.mark.parametrize("show_all", [False, True])
def test_same_tree_as_the_processors(seed: int, threshold: float | None, show_all: bool) -> None:
    session = random_session(seed)
    for metric in ("gpu", "cpu"):
        fast = FoldedTable(session, show_all).tree(METRICS[metric], threshold)
        assert canonical(fast) == canonical(reference(session, metric, threshold, show_all))


def canonical_ctx(node: Node) -> Any:
    kids = sorted((canonical_ctx(c) for c in node.children), key=repr)
    return (node.key, node.metrics, node.inclusive, node.extras.get(CTX_KEY), tuple(kids))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("show_all", [False, True])
def test_same_context_bits_as_tagging_the_tree(seed: int, show_all: bool) -> None:
    session = random_session(seed, contexts=True)
    root = build_tree(session)
    if not show_all:
        root = collapse_library(root)
    tag_contexts(root)
    expected = canonical_ctx(collapse_lone_forward(root))
    assert canonical_ctx(FoldedTable(session, show_all, contexts=True).tree()) == expected
    assert canonical_ctx(report_tree(session, show_all, contexts=True)) == expected
    assert canonical(report_tree(session, show_all)) == canonical(reference(session, "gpu", None, show_all))


def test_same_tree_for_the_golden_sessions(h) -> None:
    session = h.build_gpu().session(h.gpu_meta())
    for threshold in (None, 0.01, 0.05):
        fast = FoldedTable(session, False).tree(METRICS["gpu"], threshold)
        assert canonical(fast) == canonical(reference(session, "gpu", threshold, False))


def test_same_tree_for_a_generated_session() -> None:
    session = Session.from_dict(wide_session(20_000))
    fast = FoldedTable(session, False).tree(METRICS["gpu"], 0.01)
    assert canonical(fast) == canonical(reference(session, "gpu", 0.01, False))


def test_the_root_holds_the_session_totals(h) -> None:
    session = h.build_gpu().session(h.gpu_meta())
    folded = FoldedTable(session, False)
    tree = folded.tree(METRICS["gpu"], 0.5)
    assert tree.inclusive == build_tree(session).inclusive == folded.totals()


def test_model_code_in_installed_packages_is_kept_inside_module_calls() -> None:
    """transformers' modeling file runs inside nn.Module.__call__: its lines stay. Its generate()
    loop runs outside any module: folded, like torch's own frames."""
    module = f"{TORCH}/nn/modules/module.py"
    gen = f"{PKG}/transformers/generation/utils.py"
    modeling = f"{PKG}/transformers/models/gpt2/modeling_gpt2.py"
    nodes = [
        {"id": 0, "parent": -1, "kind": "root", "name": "<root>"},
        {"id": 1, "parent": 0, "kind": "frame", "name": "main", "file": "/home/u/run.py", "line": 9},
        {"id": 2, "parent": 1, "kind": "frame", "name": "generate", "file": gen, "line": 2400},
        {
            "id": 3,
            "parent": 2,
            "kind": "frame",
            "name": "Module._wrapped_call_impl",
            "file": module,
            "line": 1,
        },
        {
            "id": 4,
            "parent": 3,
            "kind": "frame",
            "name": "GPT2LMHeadModel.forward",
            "file": modeling,
            "line": 1100,
        },
        {
            "id": 5,
            "parent": 4,
            "kind": "frame",
            "name": "linear",
            "file": f"{TORCH}/nn/functional.py",
            "line": 5,
        },
        {"id": 6, "parent": 5, "kind": "op", "name": "aten::linear", "m": {"calls": 1}},
        {"id": 7, "parent": 6, "kind": "kernel", "name": "gemm", "m": {"kernels": 1, "gpu_ns": 90}},
        {"id": 8, "parent": 2, "kind": "op", "name": "aten::topk", "m": {"calls": 1}},
        {"id": 9, "parent": 8, "kind": "kernel", "name": "topk", "m": {"kernels": 1, "gpu_ns": 10}},
    ]
    session = Session.from_dict({"format": "dlpt-session", "version": 2, "nodes": nodes})
    tree = FoldedTable(session, False).tree(METRICS["gpu"], None)
    (main,) = tree.children
    assert sorted(c.name for c in main.children) == ["GPT2LMHeadModel.forward", "aten::topk"]
    fwd = next(c for c in main.children if c.kind == "frame")
    assert [c.name for c in fwd.children] == ["aten::linear"]  # torch's functional.py folded
    assert canonical(tree) == canonical(reference(session, "gpu", None, False))
