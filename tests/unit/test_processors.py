"""Processors: metrics, pruning, depth limit, library collapse, lone <forward>, bottom-up, flat."""

from __future__ import annotations

import sysconfig

import pytest

from dlpt.errors import UsageError
from dlpt.model.metrics import METRICS, default_metric, get_metric
from dlpt.model.source_files import file_kind, is_library_file
from dlpt.model.tree import Node, build_tree, walk
from dlpt.trees.processors import (
    collapse_library,
    collapse_lone_forward,
    flatten_by_kind,
    flatten_by_line,
    invert,
    limit_depth,
    mark_lines,
    prune,
)

GPU = METRICS["gpu"]


def _names(root: Node) -> list[str]:
    return [f"{'  ' * (d - 1)}{n.name}" for n, d in walk(root)][1:]


def test_metric_table() -> None:
    m = {"gpu_ns": 1, "copy_ns": 2, "memset_ns": 4, "cpu_ns": 8, "sync_ns": 16}
    assert METRICS["gpu"](m) == 7
    assert METRICS["cpu"](m) == 8
    assert METRICS["sync"](m) == 16
    assert METRICS["kernels"]({}) == 0
    assert get_metric("sync") is METRICS["sync"]
    with pytest.raises(UsageError, match="unknown metric 'bogus'"):
        get_metric("bogus")


def test_default_metric(h) -> None:
    assert default_metric(build_tree(h.build_gpu().session())).name == "gpu"
    b = h.Builder()
    b.op(0, "aten::mm", cpu_ns=5)
    assert default_metric(build_tree(b.session())).name == "cpu"


@pytest.mark.parametrize(
    "path, lib",
    [
        ("/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", True),
        ("/usr/lib/python3/dist-packages/numpy/core/fromnumeric.py", True),
        ("/usr/lib/python3.12/threading.py", True),
        ("<frozen runpy>", True),
        (sysconfig.get_paths()["stdlib"] + "/json/__init__.py", True),
        ("/home/user/proj/train.py", False),
        ("/home/user/proj/lib/model.py", False),
        ("<string>", False),
    ],
)
def test_is_library_file(path: str, lib: bool) -> None:
    assert is_library_file(path) is lib


def test_dlpt_itself_is_library() -> None:
    import dlpt.trees.processors as p

    assert is_library_file(p.__file__)


def test_collapse_library_vs_show_all(h) -> None:
    root = build_tree(h.build_gpu(steps=1).session())
    raw = _names(root)
    assert "_wrapped_call_impl" in {n.strip() for n in raw}
    col = collapse_library(root)
    names = [n.strip() for n in _names(col)]
    files = {n.file for n, _ in walk(col) if n.kind == "frame"}
    assert not any(is_library_file(f) for f in files)
    assert files == {h.TRAIN, h.MODEL}
    # <frozen runpy> at the top is gone: the user's module is a child of the root now.
    assert col.children[0].name == "<module>"
    # model.py:20 forward now calls aten::linear directly (through linear.py/module.py before).
    fwd = next(n for n, _ in walk(col) if n.file == h.MODEL and n.line == 20)
    assert [c.name for c in fwd.children] == ["aten::linear"]
    # Totals are conserved and the input tree is untouched.
    assert col.inclusive == root.inclusive
    assert _names(root) == raw
    assert "_call_impl" not in names


def test_collapse_library_merges_siblings(h) -> None:
    b = h.Builder()
    u = b.frame(0, h.TRAIN, 10, "main")
    for lib_line in (100, 200):  # two different library frames under the same user line
        lib = b.frame(u, h.MODULE, lib_line, "_call_impl", api_ns=1)
        b.kernel(b.op(b.frame(lib, h.MODEL, 5, "forward"), "aten::mm"), "gemm", 1, 10)
    col = collapse_library(build_tree(b.session()))
    (main,) = col.children
    assert main.metrics == {"api_ns": 2}  # library self metrics fold into the user parent
    (fwd,) = main.children
    (mm,) = fwd.children
    assert mm.metrics["calls"] == 2 and mm.children[0].metrics["gpu_ns"] == 20
    assert fwd.inclusive["gpu_ns"] == 20


def test_collapse_lone_forward(h) -> None:
    b = h.Builder()
    relu = b.op(0, "aten::relu")
    b.op(b.phase(relu, "<forward>"), "aten::clamp_min")
    lin = b.op(0, "aten::linear")
    b.op(b.phase(lin, "<forward>"), "aten::addmm")
    b.op(b.phase(lin, "<backward>"), "AddmmBackward0")
    out = collapse_lone_forward(build_tree(b.session()))
    assert _names(out) == [
        "aten::relu",
        "  aten::clamp_min",
        "aten::linear",
        "  <forward>",
        "    aten::addmm",
        "  <backward>",
        "    AddmmBackward0",
    ]


def test_prune_threshold(h) -> None:
    b = h.Builder()
    b.kernel(0, "big", 1, 980)
    b.kernel(0, "small", 1, 11)
    b.kernel(0, "tiny", 1, 9)
    root = build_tree(b.session())
    assert [n.name for n in prune(root, GPU, 0.01).children] == ["big", "small"]
    assert [n.name for n in prune(root, GPU, 0.0).children] == ["big", "small", "tiny"]
    assert [n.name for n in prune(root, GPU, 0.5).children] == ["big"]
    p = prune(root, GPU, 0.5)
    assert GPU(p.inclusive) == 1000  # the root still accounts for what is hidden
    assert len(root.children) == 3  # input untouched


def test_limit_depth(h) -> None:
    root = build_tree(h.build_gpu().session())
    assert max(d for _, d in walk(limit_depth(root, 2))) == 2
    assert max(d for _, d in walk(limit_depth(root, 1))) == 1
    assert limit_depth(root, None) is root


def _totals_by_metric(root: Node) -> dict[str, int]:
    return {name: m(root.inclusive) for name, m in METRICS.items()}


@pytest.mark.parametrize("metric", ["gpu", "cpu", "sync", "kernels", "api"])
def test_bottom_up_conserves_totals(h, metric: str) -> None:
    m = METRICS[metric]
    root = collapse_library(build_tree(h.build_gpu().session()))
    inv = invert(root, m)
    assert m(inv.inclusive) == m(root.inclusive) > 0
    assert sum(m(c.inclusive) for c in inv.children) == m(root.inclusive)
    for top in inv.children:
        assert m(top.metrics) == m(top.inclusive)  # top-level nodes carry their self value
        # Along every caller chain the value does not grow; siblings split it.
        for node, _ in walk(top):
            if node.children:
                assert sum(m(c.inclusive) for c in node.children) <= m(node.inclusive)


def test_bottom_up_callers(h) -> None:
    root = collapse_lone_forward(collapse_library(build_tree(h.build_gpu().session())))
    inv = invert(root, GPU)
    gemm = next(c for c in inv.children if c.name.startswith("sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt"))
    assert gemm.metrics["gpu_ns"] == 2 * 9_000_000 * 4
    chain = [gemm.children[0]]
    while chain[-1].children:
        chain.append(chain[-1].children[0])
    assert [n.name for n in chain[:4]] == ["aten::mm", "AddmmBackward0", "<backward>", "aten::linear"]
    assert {c.line for c in chain[3].children} == {20, 22}  # both call sites, split
    assert sum(GPU(c.inclusive) for c in chain[3].children) == GPU(gemm.inclusive)


def test_flat_by_line_recursion_counted_once(h) -> None:
    b = h.Builder()
    a1 = b.frame(0, h.MODEL, 30, "recurse")
    a2 = b.frame(a1, h.MODEL, 31, "recurse")
    a3 = b.frame(a2, h.MODEL, 30, "recurse")  # line 30 again, deeper on the same path
    b.kernel(b.op(a3, "aten::add"), "k1", 1, 100)
    b.kernel(b.op(a1, "aten::mul"), "k2", 1, 10)
    rows = {r.key: r for r in flatten_by_line(build_tree(b.session()))}
    r30, r31 = rows[(h.MODEL, 30)], rows[(h.MODEL, 31)]
    assert GPU(r30.inclusive) == 110  # not 210: the recursive occurrence counts once
    assert GPU(r31.inclusive) == 100
    assert GPU(r30.self) == 110  # k1 (nearest frame: the inner line-30 frame) and k2
    assert GPU(r31.self) == 0


def test_flat_by_op_and_kernel(h) -> None:
    root = collapse_library(build_tree(h.build_gpu(steps=1).session()))
    ops = {r.key: r for r in flatten_by_kind(root, "op")}
    assert GPU(ops["aten::linear"].inclusive) == 2 * 15_000_000
    assert GPU(ops["aten::linear"].self) == 0  # its kernels land on inner ops
    assert GPU(ops["aten::mm"].self) == 2 * 9_000_000
    assert ops["aten::mm"].self["calls"] == 4
    kernels = flatten_by_kind(root, "kernel")
    assert sum(GPU(r.inclusive) for r in kernels) == root.inclusive["gpu_ns"]
    lines = flatten_by_line(root)
    # Every GPU cost under a frame lands on exactly one line's self.
    assert sum(GPU(r.self) for r in lines) == GPU(root.inclusive) - 120_000
    by_line = {r.key: r for r in lines}
    assert GPU(by_line[(h.TRAIN, 60)].inclusive) == GPU(root.inclusive) - 120_000  # not <unknown>


def test_mark_lines_marks_a_copy_and_leaves_its_input_alone(h) -> None:
    root = collapse_library(build_tree(h.build_gpu(steps=1).session()))
    before = [(n.key, dict(n.extras), dict(n.inclusive)) for n, _ in walk(root)]
    marked = mark_lines(root, {(h.TRAIN, 43): "graph break"})
    assert [(n.key, dict(n.extras), dict(n.inclusive)) for n, _ in walk(root)] == before
    flagged = [n for n, _ in walk(marked) if n.extras.get("marker")]
    assert {(n.file, n.line, n.extras["marker"]) for n in flagged} == {(h.TRAIN, 43, "graph break")}
    # Apart from the marker, the copy is the same tree.
    assert [(n.key, dict(n.inclusive)) for n, _ in walk(marked)] == [(k, inc) for k, _, inc in before]


def test_exec_frames_called_from_library_fold_like_library() -> None:
    from dlpt.capture.exec_frames import mark_library_exec_frames
    from dlpt.model.session import Session
    from dlpt.model.tree import build_tree
    from dlpt.trees.processors import collapse_library

    site = "/opt/venv/lib/python3.12/site-packages/triton/runtime/jit.py"
    nodes = [
        {"id": 0, "parent": -1, "kind": "root", "name": "<root>", "file": "", "line": 0, "m": {}},
        {
            "id": 1,
            "parent": 0,
            "kind": "frame",
            "name": "forward",
            "file": "/src/model.py",
            "line": 3,
            "m": {},
        },
        {"id": 2, "parent": 1, "kind": "frame", "name": "run", "file": site, "line": 9, "m": {}},
        {"id": 3, "parent": 2, "kind": "frame", "name": "launcher", "file": "<string>", "line": 5, "m": {}},
        {
            "id": 4,
            "parent": 3,
            "kind": "kernel",
            "name": "k",
            "file": "",
            "line": 0,
            "m": {"gpu_ns": 7, "kernels": 1},
        },
        # exec'd by the user's own code (python -c): stays the user's
        {"id": 5, "parent": 1, "kind": "frame", "name": "<module>", "file": "<string>", "line": 1, "m": {}},
        {
            "id": 6,
            "parent": 5,
            "kind": "kernel",
            "name": "k2",
            "file": "",
            "line": 0,
            "m": {"gpu_ns": 3, "kernels": 1},
        },
    ]
    mark_library_exec_frames(nodes)
    assert nodes[3]["x"]["library"] is True and "x" not in nodes[5]
    s = Session.from_dict({"format": "dlpt-session", "version": 1, "meta": {}, "nodes": nodes})
    model = collapse_library(build_tree(s)).children[0]
    assert model.name == "forward"
    assert sorted((c.kind, c.name) for c in model.children) == [("frame", "<module>"), ("kernel", "k")]


@pytest.mark.parametrize(
    "path, kind",
    [
        ("/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", "framework"),
        ("/opt/venv/lib/python3.11/site-packages/triton/runtime/jit.py", "framework"),
        ("/usr/lib/python3.12/threading.py", "framework"),
        ("/tmp/torchinductor_me/ab/cabc.py", "framework"),
        ("/opt/venv/lib/python3.11/site-packages/transformers/models/gpt2/modeling_gpt2.py", "package"),
        ("/usr/lib/python3/dist-packages/timm/models/vit.py", "package"),
        ("/home/user/proj/model.py", "user"),
        ("/home/other/checkout/dlpt/cli.py", "framework"),  # a session from another dlpt checkout
        ("/home/other/checkout/dlpt/launch.py", "framework"),  # ... whose launcher runs the program
        ("/home/user/proj/dlpt/model.py", "user"),
    ],
)
def test_file_kind(path: str, kind: str) -> None:
    assert file_kind(path) == kind


def test_package_frames_stay_inside_module_calls_only(h) -> None:
    """Model code of an installed package (inside nn.Module.__call__) is shown; the same
    package's code outside any module call folds, as torch's does everywhere."""
    site = "/opt/venv/lib/python3.11/site-packages"
    b = h.Builder()
    user = b.frame(0, h.TRAIN, 60, "<module>")
    loop = b.frame(user, f"{site}/transformers/generation/utils.py", 2400, "generate")
    call = b.frame(loop, h.MODULE, 1751, "_wrapped_call_impl")
    fwd = b.frame(call, f"{site}/transformers/models/gpt2/modeling_gpt2.py", 1100, "forward")
    b.kernel(b.op(b.frame(fwd, f"{site}/torch/nn/functional.py", 5, "linear"), "aten::linear"), "gemm", 1, 9)
    b.kernel(b.op(loop, "aten::topk"), "topk", 1, 1)
    names = _names(collapse_library(build_tree(b.session())))
    assert names == ["<module>", "  forward", "    aten::linear", "      gemm", "  aten::topk", "    topk"]


def test_a_package_closure_inside_a_module_call_folds(h) -> None:
    """A decorator's wrapper in a package (transformers' can_return_tuple.<locals>.wrapper) is
    plumbing: it folds even inside a module call, the forward it wraps stays."""
    site = "/opt/venv/lib/python3.11/site-packages/transformers"
    b = h.Builder()
    call = b.frame(b.frame(0, h.TRAIN, 9, "main"), h.MODULE, 1751, "_wrapped_call_impl")
    wrapper = b.frame(call, f"{site}/utils/generic.py", 943, "can_return_tuple.<locals>.wrapper")
    b.op(b.frame(wrapper, f"{site}/models/gpt2/modeling_gpt2.py", 680, "GPT2LMHeadModel.forward"), "aten::mm")
    assert _names(collapse_library(build_tree(b.session()))) == [
        "main",
        "  GPT2LMHeadModel.forward",
        "    aten::mm",
    ]
