"""What an HTML report embeds when the tree is too large for a browser: the costliest nodes, the
rest folded into one "other" node per parent that keeps their totals.

A page holding every node of a million-call-site profile is over a hundred megabytes and does
not open in a browser within minutes. So when the report tree has more than :data:`MAX_NODES`
nodes, the page keeps the :data:`MAX_NODES` nodes with the largest share of any metric the page
offers (a node's share is its largest inclusive value relative to that metric's total; a parent
never has a smaller share than its child, so what is kept is a tree), and each kept node's
other children become one child of kind ``other`` holding their summed inclusive values: every
total, every inclusive value of a kept node and every percentage stays exact. Flat tables keep
their :data:`MAX_FLAT_ROWS` costliest rows (their values computed on the whole tree), and their
nodes are kept for them. The page says what was folded (:func:`Budget.note`, a header warning).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from dlpt.model.metrics import Metric
from dlpt.model.tree import Node, add_metrics, walk
from dlpt.views.run import FlatRow

__all__ = ["MAX_NODES", "MAX_FLAT_ROWS", "OTHER_KIND", "Budget", "plan"]

MAX_NODES = 40_000
MAX_FLAT_ROWS = 2_000
OTHER_KIND = "other"


@dataclass
class Budget:
    """Which nodes a page embeds (``kept``, by ``id()``; None: all of them), what each kept
    parent's folded children sum to (``other``, by ``id()`` of the parent, with how many nodes
    they hold), and the floor share below which nodes were folded."""

    kept: set[int] | None = None
    other: dict[int, tuple[dict[str, int], int]] = field(default_factory=dict)
    total_nodes: int = 0
    floor: float = 0.0
    flat_rows: dict[str, int] = field(default_factory=dict)  # table -> rows left out

    def embeds(self, node: Node) -> bool:
        return self.kept is None or id(node) in self.kept

    def note(self) -> str | None:
        """The header line saying what the page leaves out, or None when it holds everything."""
        if self.kept is None:
            return None
        folded = self.total_nodes - len(self.kept)
        text = (
            f"this page holds the {len(self.kept):,} costliest of the report's {self.total_nodes:,} "
            f"nodes: the other {folded:,} (each under {100 * self.floor:.2g}% of every metric's "
            'total) are folded into "other" nodes under their parents, which keep their totals'
        )
        cut = {t: n for t, n in self.flat_rows.items() if n}
        if cut:
            text += (
                "; the flat tables show their costliest rows ("
                + ", ".join(f"{n:,} {t} rows left out" for t, n in cut.items())
                + ")"
            )
        return text + "; the terminal report and --export show every node"


def _share(inc: dict[str, int], metrics: Sequence[tuple[Metric, int]]) -> float:
    return max((m(inc) / total for m, total in metrics), default=0.0)


def plan(
    root: Node,
    metrics: Sequence[Metric],
    flats: dict[str, list[FlatRow]],
    max_nodes: int = MAX_NODES,
    max_rows: int = MAX_FLAT_ROWS,
) -> tuple[Budget, dict[str, list[FlatRow]]]:
    """The budget of a page showing ``root`` with ``metrics`` and the ``flats`` tables, and the
    flat rows it keeps (all of them when the tree is small enough)."""
    order = [n for n, _ in walk(root)]
    if len(order) <= max_nodes:
        return Budget(total_nodes=len(order)), flats
    totals = [(m, m(root.inclusive)) for m in metrics]
    totals = [(m, t) for m, t in totals if t > 0]
    # Pre-order index breaks ties, so a parent (earlier, never a smaller share) comes first.
    ranked = sorted(range(len(order)), key=lambda i: (-_share(order[i].inclusive, totals), i))
    kept_index = ranked[:max_nodes]
    floor = _share(order[ranked[max_nodes]].inclusive, totals)
    kept = {id(order[i]) for i in kept_index}
    kept_flats: dict[str, list[FlatRow]] = {}
    cut: dict[str, int] = {}
    for table, rows in flats.items():
        best = sorted(rows, key=lambda r: -_share(r.inclusive, totals))[:max_rows]
        kept_flats[table] = best
        cut[table] = len(rows) - len(best)
        for r in best:  # a row names its first node: the page must hold it
            _keep_with_ancestors(r.node, kept)
    budget = Budget(kept, {}, len(order), floor, cut)
    for node in order:
        if id(node) in kept:
            folded = [c for c in node.children if id(c) not in kept]
            if folded:
                budget.other[id(node)] = (_summed(c.inclusive for c in folded), _count(folded))
    return budget, kept_flats


def _keep_with_ancestors(node: Node | None, kept: set[int]) -> None:
    while node is not None and id(node) not in kept:
        kept.add(id(node))
        node = node.parent


def _summed(dicts: Iterable[dict[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for d in dicts:
        add_metrics(out, d)
    return out


def _count(nodes: list[Node]) -> int:
    return sum(1 for top in nodes for _ in walk(top))
