"""Mark communication in a session's node table when it is assembled (docs/session-format.md:
``comm_ns``, ``comm_wait_ns``, the collective extras).

- Communication kernels (NCCL's, by name, :func:`dlpt.model.comm_names.is_comm_kernel`) get
  ``m.comm_ns`` (their ``gpu_ns``, which they keep: GPU time stays GPU time, and the tree's
  totals still equal what CUPTI delivered) and what their name says (``x.collective``,
  ``x.algorithm``, ``x.protocol``, ``x.dtype``). Summed up the tree, ``comm_ns`` splits every
  row into communication and compute.
- The collective calls :mod:`dlpt.capture.ranks.pycomm` wrapped arrive as ops
  ``c10d::_dlpt_call_<n>`` / ``c10d::_dlpt_wait_<n>``, ``n`` numbering what the call moved. The
  op takes the Python function's name (``torch.distributed.all_reduce``,
  ``torch.distributed.Work.wait``) and that description; the call gets its bytes
  (``comm_calls``, ``comm_in_bytes``, ``comm_out_bytes``: calls times the signature's bytes,
  exact since every call of one op had that signature) unless the native core already
  recorded them beneath it.
- Host time waiting for communication (``m.comm_wait_ns``): on those ops and on
  ``_c10d_functional::wait_tensor``, their time outside the ``c10d`` ops beneath them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from dlpt.model.comm_names import (
    WAIT_OPS,
    WORK_WAIT,
    WRAPPER_PREFIX,
    family,
    is_comm_kernel,
    parse_nccl_kernel,
)

__all__ = ["annotate_comm"]

# dlpt.capture.ranks.pycomm's op names (that module imports torch; this one is plain data).
_WRAPPED = re.compile(r"c10d::_dlpt_(call|wait)_(\d+)")


def annotate_comm(
    nodes: list[dict[str, Any]], signatures: Sequence[dict[str, Any]] = ()
) -> list[dict[str, Any]]:
    """``nodes`` (a session's table) with communication marked, in place; returned for
    chaining."""
    ops: list[dict[str, Any]] = []  # wrapped calls and waits: they need their subtrees
    for n in nodes:
        if n["kind"] == "kernel":
            _mark_kernel(n)
        elif n["kind"] == "op" and (n["name"] in WAIT_OPS or n["name"].startswith("c10d::_dlpt_")):
            ops.append(n)
    if not ops:
        return nodes
    children: list[list[int]] = [[] for _ in nodes]
    for n in nodes[1:]:
        children[n["parent"]].append(n["id"])
    for n in ops:
        wrapped = _WRAPPED.fullmatch(n["name"])
        if wrapped is not None:
            sig = int(wrapped.group(2))
            info = signatures[sig] if 0 < sig < len(signatures) else {}
            _describe(n, wrapped.group(1) == "wait", info, children, nodes)
        elif n["name"] in WAIT_OPS:
            _set_wait(n, children, nodes)
    return nodes


def _mark_kernel(n: dict[str, Any]) -> None:
    full = (n.get("x") or {}).get("full_name")
    name: str = full if isinstance(full, str) else n["name"]
    if not is_comm_kernel(name):
        return
    for m in (n["m"], n.get("o") or {}):  # step work, and work outside steps
        if m.get("gpu_ns"):
            m["comm_ns"] = m["gpu_ns"]
    parsed = parse_nccl_kernel(name)
    if parsed is None:
        return
    x = n.setdefault("x", {})
    for key, value in (
        ("collective", parsed.family),
        ("algorithm", parsed.algorithm),
        ("protocol", parsed.protocol),
        ("dtype", parsed.dtype),
    ):
        if value and key not in x:
            x[key] = value


def _subtree(children: list[list[int]], root: int) -> list[int]:
    out, stack = [], [root]
    while stack:
        i = stack.pop()
        out.append(i)
        stack.extend(children[i])
    return out


def _describe(
    op: dict[str, Any],
    waits: bool,
    sig: dict[str, Any],
    children: list[list[int]],
    nodes: list[dict[str, Any]],
) -> None:
    fn = str(sig.get("function") or "")
    op["name"] = WORK_WAIT if waits else f"{WRAPPER_PREFIX}{fn or 'collective'}"
    x = op.setdefault("x", {})
    if fn:
        x["collective"] = family(fn)
    for key in ("dtype", "pg_name", "pg_desc", "backend"):
        if isinstance(sig.get(key), str) and sig[key]:
            x[key] = sig[key]
    if isinstance(sig.get("world_size"), int) and sig["world_size"] > 0:
        x["world_size"] = sig["world_size"]
    below = _subtree(children, op["id"])[1:]
    for field in ("m", "o"):  # step work, and work outside steps
        m = op.get(field)
        if m is None:
            continue
        native = any((nodes[i].get(field) or {}).get("comm_calls") for i in below)
        calls = m.get("calls", 0)
        if not waits and fn and calls and not native:
            m["comm_calls"] = calls
            for key in ("in_bytes", "out_bytes"):
                per_call = sig.get(key)
                if isinstance(per_call, int) and per_call > 0:
                    m[f"comm_{key}"] = calls * per_call
    _set_wait(op, children, nodes)


def _set_wait(op: dict[str, Any], children: list[list[int]], nodes: list[dict[str, Any]]) -> None:
    """The op's CPU time outside the c10d ops beneath it (its own time may sit on its
    ``<forward>`` phase): the time the rank waited."""
    below = [i for i in _subtree(children, op["id"]) if i == op["id"] or nodes[i]["kind"] != "op"]
    for field in ("m", "o"):  # a c10d op's time is its own (enqueueing the work), not waiting
        wait = sum((nodes[i].get(field) or {}).get("cpu_ns", 0) for i in below)
        if wait:
            op.setdefault(field, {})["comm_wait_ns"] = wait
