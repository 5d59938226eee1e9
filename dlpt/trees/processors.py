"""Small functions over the tree (dlpt.model.tree): library-frame collapse, pruning,
depth limit, bottom-up inversion and flat profiles.

Each function returns a new tree (or rows) and leaves its input untouched, so a render can apply
them in any order. All of them are iterative (deep trees must not hit the recursion limit).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field

from dlpt.model.metrics import Metric
from dlpt.model.source_files import file_kind, is_library_file, is_module_call_file
from dlpt.model.tree import Node, add_metrics, compute_inclusive, merge_child, walk

__all__ = [
    "is_library_frame",
    "is_user_frame",
    "is_module_call",
    "folds_away",
    "lift",
    "collapse_library",
    "collapse_lone_forward",
    "prune",
    "limit_depth",
    "invert",
    "FlatRow",
    "flatten",
    "flatten_by_line",
    "flatten_by_kind",
    "mark_lines",
]


# -- library frames -------------------------------------------------------------------------


def is_library_frame(node: Node) -> bool:
    """A frame node of library code: a library file, or code a library exec'd (``x.library``)."""
    return node.kind == "frame" and (is_library_file(node.file) or bool(node.typed_extras.library))


def is_user_frame(node: Node) -> bool:
    """A frame node of the user's own code."""
    return node.kind == "frame" and not is_library_frame(node)


def is_module_call(kind: str, file: str) -> bool:
    """A frame of ``torch.nn.Module``'s call machinery: what runs below it is a module's code."""
    return kind == "frame" and is_module_call_file(file)


def folds_away(kind: str, file: str, name: str, library: bool, in_module_call: bool) -> bool:
    """Whether a node is folded into its caller by default: frames of the framework (torch, the
    stdlib, generated code, dlpt, code a library exec'd: ``library``, the frame's ``x.library``),
    and frames of installed packages unless they run inside a module call (``in_module_call``: a
    module-call frame is an ancestor) and are not a closure (a decorator's ``<locals>.wrapper``:
    plumbing, not model code).

    Installed packages hold the model code people tune (transformers' modeling_*.py, timm,
    torchvision's and diffusers' models): inside ``nn.Module.__call__`` their lines stay, while
    their loops and helpers outside modules (``generate()``'s decoding loop, a trainer) fold."""
    if kind != "frame":
        return False
    if library:
        return True
    where = file_kind(file)
    if where == "package":
        return not in_module_call or ".<locals>." in name
    return where == "framework"


# -- structural transforms ------------------------------------------------------------------


def lift(root: Node, drop: Callable[[Node], bool]) -> Node:
    """Return a copy of the tree without the nodes for which ``drop`` is true: their exclusive
    metrics fold into their nearest kept ancestor and their children are re-parented there,
    merging with equal siblings. Inclusive metrics are recomputed."""
    new_root = Node(root.kind, root.name, root.file, root.line, root.metrics, root.extras, root.built_extras)
    stack: list[tuple[Node, Node]] = [(c, new_root) for c in reversed(root.children)]
    while stack:
        src, dst_parent = stack.pop()
        if drop(src):
            add_metrics(dst_parent.metrics, src.metrics)
            dst = dst_parent
        else:
            dst = merge_child(
                dst_parent, src.kind, src.name, src.file, src.line, src.metrics, src.extras, src.built_extras
            )
        stack.extend((c, dst) for c in reversed(src.children))
    compute_inclusive(new_root)
    return new_root


def collapse_library(root: Node) -> Node:
    """Remove the frames that fold by default (see :func:`folds_away`), lifting their children
    into the nearest kept ancestor, so that user and model lines call each other and ops
    directly."""
    in_module_call: dict[int, bool] = {id(root): False}
    for node, _ in walk(root):
        inside = in_module_call[id(node)] or is_module_call(node.kind, node.file)
        for c in node.children:
            in_module_call[id(c)] = inside
    return lift(
        root,
        lambda n: folds_away(n.kind, n.file, n.name, bool(n.typed_extras.library), in_module_call[id(n)]),
    )


def collapse_lone_forward(root: Node) -> Node:
    """Drop a ``<forward>`` phase that is its op's only phase (no backward was grafted there):
    it carries no information, and lifting its children saves an indentation level."""

    def drop(n: Node) -> bool:
        if n.kind != "phase" or n.name != "<forward>" or n.parent is None:
            return False
        if n.parent.kind != "op":
            return False
        return not any(c.kind == "phase" and c is not n for c in n.parent.children)

    return lift(root, drop)


def _copy_filtered(root: Node, keep: Callable[[Node, int], bool]) -> Node:
    """Copy the tree, keeping a node (and considering its subtree) only if keep(node, depth).
    Inclusive metrics are copied, not recomputed: a parent still accounts for what is hidden."""

    def clone(n: Node) -> Node:
        c = Node(n.kind, n.name, n.file, n.line, n.metrics, n.extras, n.built_extras)
        c.inclusive = dict(n.inclusive)
        return c

    new_root = clone(root)
    stack: list[tuple[Node, Node, int]] = [(c, new_root, 1) for c in reversed(root.children)]
    while stack:
        src, dst_parent, depth = stack.pop()
        if not keep(src, depth):
            continue
        dst = clone(src)
        dst_parent.add_child(dst)
        stack.extend((c, dst, depth + 1) for c in reversed(src.children))
    return new_root


def prune(root: Node, metric: Metric, threshold: float = 0.01) -> Node:
    """Drop subtrees whose inclusive ``metric`` is below ``threshold`` times the root's total, or
    zero (a row of zeros says nothing; the root stays)."""
    limit = threshold * metric(root.inclusive)
    return _copy_filtered(root, lambda n, _d: 0 < metric(n.inclusive) >= limit)


def limit_depth(root: Node, depth: int | None) -> Node:
    """Keep nodes at most ``depth`` levels below the root (root's children are depth 1)."""
    if depth is None:
        return root
    return _copy_filtered(root, lambda _n, d: d <= depth)


def invert(root: Node, metric: Metric) -> Node:
    """Bottom-up tree: every node with a self ``metric`` value becomes a top-level node (merged
    by key), and its callers hang below it, each carrying the self value of that node through
    this caller chain in ``inclusive``. Top-level nodes keep their exclusive metrics; caller
    nodes have none. The sum over top-level nodes equals the total of ``metric``."""
    out = Node("root", root.name)
    for node, _ in walk(root):
        if metric(node.metrics) <= 0:
            continue
        dst = merge_child(
            out, node.kind, node.name, node.file, node.line, node.metrics, node.extras, node.built_extras
        )
        add_metrics(dst.inclusive, node.metrics)
        src = node.parent
        while src is not None and src.parent is not None:  # stop below the root
            dst = merge_child(dst, src.kind, src.name, src.file, src.line, {}, src.extras, src.built_extras)
            add_metrics(dst.inclusive, node.metrics)
            src = src.parent
        add_metrics(out.inclusive, node.metrics)
    return out


# -- flat profiles --------------------------------------------------------------------------


@dataclass
class FlatRow:
    """One row of a flat profile. ``node`` is the first node seen with this key (for display);
    ``inclusive`` counts each path once even under recursion; ``self`` sums the exclusive
    metrics of nodes whose nearest keyed ancestor-or-self has this key."""

    key: Hashable
    node: Node
    inclusive: dict[str, int] = field(default_factory=dict)
    self: dict[str, int] = field(default_factory=dict)


def flatten(root: Node, key_fn: Callable[[Node], Hashable | None]) -> list[FlatRow]:
    """Group nodes by ``key_fn`` (None: not grouped). Needs an unpruned tree with inclusive
    metrics; rows come in first-seen order."""
    rows: dict[Hashable, FlatRow] = {}
    on_path: dict[Hashable, int] = {}  # how often each key occurs on the current path
    # Entries: (node, key of nearest keyed ancestor, leaving?) - leaving entries pop the path.
    stack: list[tuple[Node, Hashable | None, bool]] = [(root, None, False)]
    while stack:
        node, near, leaving = stack.pop()
        k = key_fn(node)
        if leaving:
            on_path[k] -= 1
            continue
        if k is not None:
            row = rows.get(k)
            if row is None:
                row = rows[k] = FlatRow(k, node)
            if not on_path.get(k):  # outermost occurrence on this path: count subtree once
                add_metrics(row.inclusive, node.inclusive)
            on_path[k] = on_path.get(k, 0) + 1
            stack.append((node, near, True))
            near = k
        if near is not None:
            add_metrics(rows[near].self, node.metrics)
        stack.extend((c, near, False) for c in reversed(node.children))
    return list(rows.values())


def flatten_by_line(root: Node) -> list[FlatRow]:
    """Flat profile by source line of the frames in the tree (collapse library frames first to
    get user lines only)."""
    return flatten(root, lambda n: (n.file, n.line) if n.kind == "frame" else None)


def flatten_by_kind(root: Node, kind: str) -> list[FlatRow]:
    """Flat profile by name of the nodes of ``kind`` ("op", "kernel", ...)."""
    return flatten(root, lambda n: n.name if n.kind == kind else None)


def mark_lines(root: Node, markers: Mapping[tuple[str, int], str]) -> Node:
    """Return a copy of the tree whose frame nodes at a ``(file, line)`` of ``markers`` carry
    that marker (:attr:`Node.marker`, shown after the frame's label)."""
    if not markers:
        return root
    marked = _copy_filtered(root, lambda _n, _d: True)
    for node, _ in walk(marked):
        mark = markers.get((node.file, node.line)) if node.kind == "frame" else None
        if mark:
            node.marker = mark  # in the copy's own extras
    return marked
