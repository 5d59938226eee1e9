"""The in-memory calling-context tree built from a :class:`~dlpt.model.session.Session`.

Every render builds a fresh tree, so processors may build new trees freely without affecting the
session. All walks here are iterative: a Python stack 10,000 frames deep (deep recursion in the
profiled program) must not hit the interpreter's recursion limit.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from dlpt.model.meta import Extras
from dlpt.model.schema import EXTRAS
from dlpt.model.session import Session

__all__ = [
    "CTX_KEY",
    "MARKER_KEY",
    "Node",
    "typed_extras",
    "build_tree",
    "add_metrics",
    "compute_inclusive",
    "walk",
    "walk_postorder",
    "merge_child",
]

Key = tuple[str, str, str, int]
_EXTREMES = frozenset({"min_ns", "max_ns"})
#: dlpt's own notes on a node, kept among its extras so that the tree transforms, which copy a
#: node's extras, carry them: its context bits (dlpt.trees.node_contexts) and the torch.compile
#: events at a frame's line (dlpt.trees.processors.mark_lines).
CTX_KEY = "ctx"
MARKER_KEY = "marker"
_NO_EXTRAS = Extras()


def typed_extras(x: Mapping[str, Any]) -> Extras:
    """``x`` typed (:meth:`Extras.of`); one shared instance for the many nodes that hold none of
    its keys (most frames)."""
    if not x or EXTRAS.isdisjoint(x):
        return _NO_EXTRAS
    return Extras.of(x)


class Node:
    """One calling-context node.

    ``metrics`` is exclusive (only what landed on this node); ``inclusive`` is the sum over the
    subtree, filled by :func:`compute_inclusive`. ``extras`` is the session's ``x`` of the first
    node merged into this one, every key as it came (other tools' too); read the keys reports
    use through :attr:`typed_extras`, and dlpt's own notes through :attr:`ctx` and
    :attr:`marker`.
    """

    __slots__ = (
        "kind",
        "name",
        "file",
        "line",
        "metrics",
        "extras",
        "children",
        "parent",
        "inclusive",
        "_by_key",
        "_typed",
    )

    def __init__(
        self,
        kind: str,
        name: str,
        file: str = "",
        line: int = 0,
        metrics: Mapping[str, int] | None = None,
        extras: Mapping[str, Any] | None = None,
        typed: Extras | None = None,
    ) -> None:
        self.kind = kind
        self.name = name
        self.file = file
        self.line = line
        self.metrics: dict[str, int] = dict(metrics) if metrics else {}
        self.extras: dict[str, Any] = dict(extras) if extras else {}
        self.children: list[Node] = []
        self.parent: Node | None = None
        self.inclusive: dict[str, int] = {}
        self._by_key: dict[Key, Node] = {}
        self._typed = typed

    @property
    def typed_extras(self) -> Extras:
        """The extras reports read, typed (dlpt.model.meta.Extras), built at the first read or
        given at creation (a loaded session's, typed when it was checked: Session.held_extras):
        a change to their keys made in ``extras`` after it is not seen (dlpt's notes are not
        among them)."""
        typed = self._typed
        if typed is None:
            typed = self._typed = typed_extras(self.extras)
        return typed

    @property
    def built_extras(self) -> Extras | None:
        """:attr:`typed_extras` if it was built or given (a loaded session's, typed at load),
        else None: what a copy of the node takes along without building it."""
        return self._typed

    @property
    def ctx(self) -> int:
        """The context bits dlpt.trees.node_contexts gave the node (0: none)."""
        v = self.extras.get(CTX_KEY, 0)
        return v if isinstance(v, int) else 0

    @ctx.setter
    def ctx(self, bits: int) -> None:
        self.extras[CTX_KEY] = bits

    @property
    def marker(self) -> str:
        """What torch.compile did at a frame's line ("graph break"), shown after its label; ""
        for none."""
        v = self.extras.get(MARKER_KEY)
        return str(v) if v else ""

    @marker.setter
    def marker(self, text: str) -> None:
        self.extras[MARKER_KEY] = text

    @property
    def key(self) -> Key:
        """Identity among siblings: nodes with equal keys under one parent are merged."""
        return (self.kind, self.name, self.file, self.line)

    def child(self, key: Key) -> Node | None:
        """The child with ``key``, if any."""
        return self._by_key.get(key)

    def add_child(self, child: Node) -> None:
        """Append ``child`` as a new child. Its key must be new among the children (copying a
        tree keeps that true); :func:`merge_child` is the way to add where keys may repeat."""
        child.parent = self
        self.children.append(child)
        self._by_key[child.key] = child

    def __repr__(self) -> str:
        where = f" {self.file}:{self.line}" if self.file else ""
        return f"Node({self.kind} {self.name!r}{where}, children={len(self.children)})"


def add_metrics(dst: dict[str, int], src: Mapping[str, int]) -> None:
    """Add ``src`` into ``dst`` key by key. ``min_ns``/``max_ns`` combine by min/max, since
    summing the shortest activity of two nodes would be meaningless."""
    for k, v in src.items():
        if k not in _EXTREMES:
            dst[k] = dst.get(k, 0) + v
        elif k == "min_ns":
            dst[k] = min(dst[k], v) if k in dst else v
        else:
            dst[k] = max(dst.get(k, v), v)


def merge_child(
    parent: Node,
    kind: str,
    name: str,
    file: str,
    line: int,
    metrics: Mapping[str, int],
    extras: Mapping[str, Any] | None,
    typed: Extras | None = None,
) -> Node:
    """Return ``parent``'s child with this key, creating it if needed; ``metrics`` are added to
    it and ``extras`` (with ``typed``, its typed form if at hand) only kept if the child is new
    (the first node's extras win)."""
    key = (kind, name, file, line)
    node = parent._by_key.get(key)
    if node is None:
        node = Node(kind, name, file, line, None, extras, typed)
        node.parent = parent
        parent.children.append(node)
        parent._by_key[key] = node
    add_metrics(node.metrics, metrics)
    return node


def build_tree(session: Session) -> Node:
    """Build the tree of ``session``'s node table, merging equal sibling keys, and compute
    inclusive metrics. Relies on the validated invariant ``parent < id``."""
    table = session.nodes
    r = table[0]
    held = session.held_extras
    root = Node("root", r.get("name", "<root>"), metrics=r.get("m"), extras=r.get("x"), typed=held(0))
    # by_id maps a table id to the (possibly merged) tree node it ended up in; since children
    # of merged duplicates look their parent up here, their subtrees merge too.
    by_id: list[Node] = [root]
    for i in range(1, len(table)):
        n = table[i]
        parent = by_id[n["parent"]]
        file, line, m = n.get("file", ""), n.get("line", 0), n.get("m", {})
        by_id.append(merge_child(parent, n["kind"], n["name"], file, line, m, n.get("x"), held(i)))
    compute_inclusive(root)
    return root


def walk(root: Node) -> Iterator[tuple[Node, int]]:
    """Yield ``(node, depth)`` in pre-order (children in list order); root has depth 0."""
    stack: list[tuple[Node, int]] = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        yield node, depth
        stack.extend((c, depth + 1) for c in reversed(node.children))


def walk_postorder(root: Node) -> list[Node]:
    """All nodes, every child before its parent."""
    order = [n for n, _ in walk(root)]
    order.reverse()
    return order


def compute_inclusive(root: Node) -> None:
    """Set ``inclusive`` of every node to its metrics plus its children's inclusive metrics."""
    for node in walk_postorder(root):
        inc = dict(node.metrics)
        for c in node.children:
            add_metrics(inc, c.inclusive)
        node.inclusive = inc
