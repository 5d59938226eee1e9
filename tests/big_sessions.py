"""Generated sessions far larger than any golden one: rendering must scale with what is shown,
not with what was recorded. Used by tests/unit/test_render_scale.py and tools/render_scale.py.

The sessions are deterministic (a fixed seed), use the documented node-table format only, and
mix what folding has to deal with: library frames between user lines (torch's module call
machinery), duplicate sibling frames that merge, forward and backward phases, kernels with a
long-tailed time distribution (a few lines matter, most are below any threshold).
"""

from __future__ import annotations

import random
from typing import Any

from dlpt.model.session import VERSION

TORCH = "/opt/venv/lib/python3.11/site-packages/torch"
MODULE = f"{TORCH}/nn/modules/module.py"
LINEAR = f"{TORCH}/nn/modules/linear.py"

# Nodes written per user line by wide_session(): frame, 2 library frames, model frame, op,
# <forward>, kernel, <backward>, backward op, kernel.
NODES_PER_LINE = 10


def _node(
    table: list[dict[str, Any]], parent: int, kind: str, name: str, file: str = "", line: int = 0, **m: int
) -> int:
    table.append(
        {"id": len(table), "parent": parent, "kind": kind, "name": name, "file": file, "line": line, "m": m}
    )
    return len(table) - 1


def wide_session(n_nodes: int, seed: int = 0) -> dict[str, Any]:
    """About ``n_nodes`` nodes: user lines spread over many files, each calling a model line
    through torch's module machinery, each with a forward and a backward kernel.

    One line in 20,000 (and the first one) is heavy; the rest share a long tail of tiny
    kernels, so the default 1% threshold keeps a few dozen rows."""
    rng = random.Random(seed)
    table: list[dict[str, Any]] = []
    _node(table, -1, "root", "<root>")
    top = _node(table, 0, "frame", "<module>", "/home/user/proj/train.py", 1)
    n_lines = max(1, (n_nodes - 2) // NODES_PER_LINE)
    for i in range(n_lines):
        user_file = f"/home/user/proj/pkg{i % 97}/mod{i % 499}.py"
        heavy = i % 20_000 == 0
        ns = rng.randint(200_000_000, 400_000_000) if heavy else rng.randint(1, 2_000)
        line = _node(table, top, "frame", f"step{i % 1000}", user_file, 10 + i)
        call = _node(
            table,
            _node(table, line, "frame", "Module._wrapped_call_impl", MODULE, 1751),
            "frame",
            "Module._call_impl",
            MODULE,
            1762,
        )
        fwd = _node(table, call, "frame", "Model.forward", f"/home/user/proj/model{i % 13}.py", 20 + i % 300)
        op = _node(table, fwd, "op", "aten::linear", calls=1, cpu_ns=ns // 10)
        _node(table, _node(table, op, "phase", "<forward>"), "kernel", f"gemm_{i % 50}", kernels=1, gpu_ns=ns)
        back = _node(table, _node(table, op, "phase", "<backward>"), "op", "AddmmBackward0", calls=1)
        _node(table, back, "kernel", f"gemm_bw_{i % 50}", kernels=1, gpu_ns=2 * ns)
    return _session(table)


def deep_session(depth: int) -> dict[str, Any]:
    """A single chain ``depth`` frames deep (runaway recursion) with a kernel at the bottom."""
    table: list[dict[str, Any]] = []
    _node(table, -1, "root", "<root>")
    parent = 0
    for i in range(depth):
        parent = _node(table, parent, "frame", "recurse", "/home/user/proj/rec.py", 30 + i % 3)
    _node(
        table,
        _node(table, parent, "op", "aten::add", calls=1),
        "kernel",
        "add_kernel",
        kernels=1,
        gpu_ns=1000,
    )
    return _session(table)


def _session(table: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "format": "dlpt-session",
        "version": VERSION,
        "meta": {"argv": ["generated.py"], "wall_ns": 10**9, "gpu": {"enabled": True, "reason": None}},
        "nodes": table,
    }
