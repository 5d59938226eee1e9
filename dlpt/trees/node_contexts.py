"""Which pass each node's work belongs to (forward, backward) and whether it ran inside a
torch.compile region or a CUDA graph replay: context bits, inherited by descendants.

Read off the tree's structure: the ``<forward>``/``<backward>``/``<cuda graph replay>`` phase
rows, Dynamo's ``Torch-Compiled Region`` and AOTAutograd's ``CompiledFunction`` ops, and the
extras Inductor-generated and -mapped frames and Inductor graph kernels carry. Tag the tree
before lone ``<forward>`` rows are dropped: :class:`dlpt.trees.folding.FoldedTable` does it with
``contexts=True`` (``report_tree(session, contexts=True)``) through :func:`node_context`, and
:func:`tag_contexts` does it on a tree (before :func:`dlpt.trees.processors.collapse_lone_forward`).
The bits are kept in node extras, which the tree transforms carry along.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dlpt.model.tree import CTX_KEY, Node, walk

__all__ = ["CTX", "CTX_KEY", "node_context", "tag_contexts", "context_of"]

CTX = {"forward": 1, "backward": 2, "compiled": 4, "replay": 8, "optimizer": 16}
_COMPILED_PREFIXES = ("Torch-Compiled Region", "CompiledFunction")
# torch.optim's record_function regions ("Optimizer.step#AdamW.step", "Optimizer.zero_grad#...").
_OPTIMIZER_PREFIX = "Optimizer."


def node_context(kind: str, name: str, extras: Mapping[str, Any], inherited: int) -> int:
    """The context bits of a node of this kind, name and extras beneath a node with ``inherited``
    bits."""
    ctx = inherited
    if kind == "scope" and name.startswith(_OPTIMIZER_PREFIX):
        # The core gives every outermost op a <forward> phase (the op's own run, as opposed to
        # its grafted backward); an optimizer's ops are neither pass of the model.
        ctx = (ctx | CTX["optimizer"]) & ~(CTX["forward"] | CTX["backward"])
    if kind == "phase" and not ctx & CTX["optimizer"]:
        if name == "<forward>":
            ctx = (ctx | CTX["forward"]) & ~CTX["backward"]
        elif name == "<backward>":
            ctx = (ctx | CTX["backward"]) & ~CTX["forward"]
    if kind == "phase" and name == "<cuda graph replay>":
        ctx |= CTX["replay"]
    if kind in ("op", "scope") and name.startswith(_COMPILED_PREFIXES):
        ctx |= CTX["compiled"]
    x = extras
    if x.get("generated") or x.get("mapped_from") or (kind == "kernel" and x.get("graph")):
        ctx |= CTX["compiled"]
    return ctx


def tag_contexts(root: Node) -> None:
    """Store every node's context bits in :attr:`Node.ctx` (pre-order: parents first)."""
    for node, _ in walk(root):
        parent = node.parent
        inherited = parent.ctx if parent is not None else 0
        # the session's x as it is, as FoldedTable reads it (generated, mapped_from, graph)
        node.ctx = node_context(node.kind, node.name, node.extras, inherited)


def context_of(node: Node) -> int:
    """The bits :func:`tag_contexts` stored (0 for an untagged node)."""
    return node.ctx
