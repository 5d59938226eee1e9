"""Per-step spread of every node, from the per-step second moments a session saves (node field
``q``, format version 3; docs/numbers.md).

For a node with per-step amounts x_1..x_N over the N counted steps (steps where the node did
nothing count as 0), ``m`` holds sum(x) and ``q`` sum(x^2), so its per-step standard deviation
is sqrt(q/N - (m/N)^2). A line's cost is the sum of many nodes whose per-step amounts may vary
together (a slow host slows all of a step's ops), so their covariances are unknown: a line's
spread is the sum of its nodes' standard deviations, the largest it can be whatever they are
(Cauchy-Schwarz). Intervals and significance tests built on it are conservative: they may call a
real change noise, never noise a change.

:class:`SpreadTable` is the report's folded table whose metrics are these standard deviations
(times N, like every summed metric, so dividing by the steps gives the per-step value): its
trees sum them up the tree exactly as the report sums costs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from dlpt.model.folding import FoldedTable
from dlpt.model.meta import profiled_steps
from dlpt.model.session import Session

__all__ = ["has_moments", "node_spread", "SpreadTable"]


def has_moments(session: Session) -> bool:
    """Whether the session saved per-step second moments (older sessions did not)."""
    return profiled_steps(session.meta) > 1 and any("q" in n for n in session.nodes)


def node_spread(m: Mapping[str, Any], q: Mapping[str, Any], steps: int) -> dict[str, int]:
    """Per metric of ``q``: the node's per-step standard deviation times ``steps``."""
    out = {}
    for key, sq in q.items():
        total = m.get(key, 0)
        if not isinstance(sq, (int, float)) or not isinstance(total, int) or steps <= 0:
            continue
        mean = total / steps
        var = max(0.0, sq / steps - mean * mean)
        if var > 0:
            out[key] = round(math.sqrt(var) * steps)
    return out


class SpreadTable(FoldedTable):
    """:class:`FoldedTable` whose node metrics are the per-step standard deviations (times the
    steps) of :func:`node_spread`; nodes without ``q`` have none."""

    def __init__(self, session: Session, show_all: bool = False, contexts: bool = False) -> None:
        self._steps = profiled_steps(session.meta)
        super().__init__(session, show_all, contexts)

    def _metrics(self, n: Mapping[str, Any]) -> Mapping[str, int]:
        q = n.get("q")
        if not q:
            return {}
        return node_spread(n.get("m") or {}, q, self._steps)
