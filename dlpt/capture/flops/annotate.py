"""Work per op node at session build time (``--flops``): FLOPs from torch's formulas
(:mod:`dlpt.capture.flops.formulas`) and estimated bytes (:mod:`dlpt.capture.flops.traffic`) of the input
signatures the native core recorded, stored on the op nodes as metrics ``m.flops`` and
``m.mem_bytes`` and extra ``x.flop_dtype`` (docs/session-format.md).

Why only the outermost op of a nest counts: with shapes recorded, the core records nested ops
too, and torch's registry holds both an op and the ops it calls (``aten::convolution`` ->
``aten::_convolution`` -> ``aten::cudnn_convolution``; ``aten::_scaled_dot_product_flash_attention``
-> ``aten::_flash_attention_forward``), as do the traffic families (``aten::_to_copy`` ->
``aten::copy_``). Counting each would count the same work two or three times. The nest ends at a
frame, a ``<backward>`` or ``<cuda graph replay>`` phase (a backward grafted under a forward op
is different work).

Totals are kept below 2**63, the bound of every count in a session (a saved session holding more
would not load): a run long and fast enough to do more FLOPs on one op node saturates there.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from dlpt.capture.flops.formulas import flop_dtype, flops_of, formula_ops
from dlpt.capture.flops.signature import parse
from dlpt.capture.flops.traffic import bytes_of, bytes_ops
from dlpt.model.shape import MAX_INT

__all__ = ["recorded_ops", "annotate"]

_MAX = MAX_INT - 1  # the largest count a session holds


def recorded_ops() -> list[str]:
    """The op names whose input shapes ``--flops`` records: those with a FLOP formula in torch's
    registry and those whose traffic :mod:`dlpt.capture.flops.traffic` estimates."""
    return sorted({*formula_ops(), *bytes_ops()})


def _resets(node: dict[str, Any]) -> bool:
    kind = node["kind"]
    return kind in ("root", "thread", "frame") or (
        kind == "phase" and node["name"] in ("<backward>", "<cuda graph replay>")
    )


@dataclass
class _Work:
    """What the signatures of one op node add up to (None: no estimate for any of them)."""

    flops: int | None = None
    nbytes: int | None = None
    dtype: str | None = None  # of the signature with the most FLOPs
    dtype_flops: int = -1
    failed: int = 0  # calls of a formula op whose signature the formula could not take


def _conv_backward_mask(nodes: list[dict[str, Any]], children: dict[int, list[int]], op: int) -> list[bool]:
    """aten::convolution_backward's ``output_mask`` (which gradients it computed) when its
    signature does not hold it. The native core records bool lists as lists of true/false, so
    only a signature from a core built before it did (bool lists as "?") gets here. The mask is
    then read off the op's kernels (cuDNN's ``dgrad`` computes the input's gradient, ``wgrad``
    the weight's); without such kernels (CPU, other libraries) both are assumed, which
    overcounts a first layer whose input needs no gradient."""
    names: list[str] = []
    stack = list(children.get(op, ()))
    while stack:
        n = nodes[stack.pop()]
        if n["kind"] == "kernel":
            names.append(str((n.get("x") or {}).get("full_name") or n["name"]).lower())
        stack.extend(children.get(n["id"], ()))
    dgrad, wgrad = any("dgrad" in k for k in names), any("wgrad" in k for k in names)
    return [dgrad, wgrad, False] if dgrad or wgrad else [True, True, False]


def annotate(
    nodes: list[dict[str, Any]], op_inputs: Iterable[tuple[int, str, int]], field: str = "m"
) -> dict[str, Any]:
    """Add ``m.flops``, ``m.mem_bytes`` and ``x.flop_dtype`` to the op nodes (in place; ``field``
    "o": to their metrics outside counted steps, for the inputs recorded there) and
    return the session's ``meta.flops`` summary: ``ops`` (op nodes with FLOPs), ``flops``
    (their total) and ``unevaluated`` (``{op: calls}`` of formula ops whose signature the
    formula could not take and whose work no op nested in them counted either)."""
    formulas = set(formula_ops())
    work: dict[int, _Work] = {}
    children: dict[int, list[int]] = {}
    for node_id, signature, calls in op_inputs:
        if not 0 <= node_id < len(nodes):
            continue
        name = nodes[node_id]["name"]
        args = parse(signature)
        # The recorded output_mask is a list of bools; "?" only from an older core (fallback).
        if name == "aten::convolution_backward" and args is not None and len(args) > 10 and args[10] == "?":
            if not children:
                for n in nodes[1:]:
                    children.setdefault(n["parent"], []).append(n["id"])
            args[10] = _conv_backward_mask(nodes, children, node_id)
        flops = flops_of(name, args) if args is not None else None
        nbytes = bytes_of(name, args) if args is not None else None
        w = work.setdefault(node_id, _Work())
        if flops is None and name in formulas:
            w.failed += calls
        if flops is not None and args is not None:
            w.flops = (w.flops or 0) + flops * calls
            if flops * calls > w.dtype_flops:
                w.dtype, w.dtype_flops = flop_dtype(args), flops * calls
        if nbytes is not None:
            w.nbytes = (w.nbytes or 0) + nbytes * calls
    # Parents come before children (format invariant): one pass, inheriting "inside a counted op".
    inside: list[tuple[bool, bool]] = [(False, False)] * len(nodes)
    outer = [False] * len(nodes)  # the node is inside an op whose FLOPs were counted
    total = counted = 0
    for node in nodes:
        nid, parent = node["id"], node["parent"]
        f_in, b_in = (False, False) if parent < 0 or _resets(node) else inside[parent]
        outer[nid] = f_in
        done = work.get(nid)
        if done is not None:
            if done.flops is not None and not f_in and done.flops > 0:
                node.setdefault(field, {})["flops"] = min(done.flops, _MAX)
                if done.dtype is not None:
                    node.setdefault("x", {})["flop_dtype"] = done.dtype
                total += done.flops
                counted += 1
            if done.nbytes is not None and not b_in and done.nbytes > 0:
                node.setdefault(field, {})["mem_bytes"] = min(done.nbytes, _MAX)
            f_in = f_in or done.flops is not None
            b_in = b_in or done.nbytes is not None
        inside[nid] = (f_in, b_in)
    return {"ops": counted, "flops": min(total, _MAX), "unevaluated": _unevaluated(nodes, work, outer, field)}


def _unevaluated(
    nodes: list[dict[str, Any]], work: dict[int, _Work], outer: list[bool], field: str = "m"
) -> dict[str, int]:
    """Calls whose FLOPs are missing: of formula ops the formula could not take, that are not
    inside a counted op and have no counted op inside them (a nested op with a formula, such as
    ``aten::_flash_attention_forward`` in its ``_scaled_dot_product_flash_attention``, then
    counted the work)."""
    below = [bool((n.get(field) or {}).get("flops")) for n in nodes]
    for n in reversed(nodes):  # children come after their parents
        if n["parent"] >= 0 and below[n["id"]]:
            below[n["parent"]] = True
    out: dict[str, int] = {}
    for nid, w in work.items():
        if w.failed and not outer[nid] and not below[nid]:
            name = nodes[nid]["name"]
            out[name] = out.get(name, 0) + w.failed
    return out
