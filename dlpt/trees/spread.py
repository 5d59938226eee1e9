"""Per-step spread of every node, from the per-step second moments a session saves (node field
``q``, format version 3; docs/numbers.md).

For a node with per-step amounts x_1..x_N over the N counted steps (steps where the node did
nothing count as 0), ``m`` holds sum(x) and ``q`` sum(x^2), so its per-step variance is
q/N - (m/N)^2. A line's cost is the sum of its nodes'; their covariances are not recorded, so a
line's variance is taken as the sum of its nodes' variances (independent parts). That is exact
for a line of one node and an approximation otherwise: parts that vary together (a slower clock
slows all of a step's kernels) make the true spread larger, parts that trade off (a sync that
waits less when the kernel before it ran longer) smaller. Between runs, what varies together
across all lines is divided out by ``dlpt diff`` (its run factor). The alternative bound, the sum
of the nodes' standard deviations (any correlation), was measured too wide to see a line made
2x slower on a busy CPU (a line of ~10 nodes whose spread came out larger than its mean).

:class:`SpreadTable` is the report's folded table whose metrics are these variances times N^2
(so that summing over nodes sums variances, and the square root divided by the steps is the
per-step standard deviation): its trees sum them up the tree exactly as the report sums costs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dlpt.model.session import Session
from dlpt.trees.folding import FoldedTable

__all__ = ["has_moments", "node_spread", "SpreadTable"]


def has_moments(session: Session) -> bool:
    """Whether the session saved per-step second moments (older sessions did not)."""
    return session.typed_meta.profiled_steps > 1 and any("q" in n for n in session.nodes)


def node_spread(m: Mapping[str, Any], q: Mapping[str, Any], steps: int) -> dict[str, int]:
    """Per metric of ``q``: the node's per-step variance times ``steps`` squared."""
    out = {}
    for key, sq in q.items():
        total = m.get(key, 0)
        if not isinstance(sq, (int, float)) or not isinstance(total, int) or steps <= 0:
            continue
        mean = total / steps
        var = max(0.0, sq / steps - mean * mean)
        if var > 0:
            out[key] = round(var * steps * steps)
    return out


class SpreadTable(FoldedTable):
    """:class:`FoldedTable` whose node metrics are the per-step variances (times the steps
    squared) of :func:`node_spread`; nodes without ``q`` have none. The square root of a summed
    metric divided by the steps is the per-step standard deviation."""

    def __init__(self, session: Session, show_all: bool = False, contexts: bool = False) -> None:
        self._steps = session.typed_meta.profiled_steps
        super().__init__(session, show_all, contexts)

    @classmethod
    def sharing(cls, folded: FoldedTable, steps: int) -> SpreadTable:
        """``folded``'s folding with the spreads as its metrics: the table is not folded again
        (the folds depend on the nodes, not on their metrics)."""
        spread = cls.__new__(cls)
        spread.__dict__.update(folded.__dict__)
        spread._steps, spread._totals = steps, None
        return spread

    def _metrics(self, n: Mapping[str, Any]) -> Mapping[str, int]:
        q = n.get("q")
        if not q:
            return {}
        return node_spread(n.get("m") or {}, q, self._steps)
