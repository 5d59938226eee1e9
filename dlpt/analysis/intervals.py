"""95% intervals of each source line's cost per step, from the per-step second moments a session
saves (format 3; docs/numbers.md): for a per-step mean over N steps with per-step standard
deviation sd (a line's: the square root of its nodes' summed variances, :mod:`dlpt.trees.spread`), the
interval is mean +- t(0.975, N-1) * sd / sqrt(N). Values here are half-widths scaled like every
summed metric (times N), so dividing by the steps gives the per-step half-width."""

from __future__ import annotations

import math

from dlpt.model.session import Session
from dlpt.model.stats import LEVEL, t_quantile
from dlpt.trees.folding import FoldedTable
from dlpt.trees.processors import flatten_by_line
from dlpt.trees.spread import SpreadTable, has_moments

__all__ = ["LineHalfWidths", "line_half_widths"]

#: (file, line) -> (self half-widths, inclusive half-widths), by metric key, times the steps.
LineHalfWidths = dict[tuple[str, int], tuple[dict[str, int], dict[str, int]]]


def line_half_widths(
    session: Session, show_all: bool = False, folded: FoldedTable | None = None
) -> LineHalfWidths | None:
    """Each line's 95% half-widths (folded as the report folds, ``show_all`` as there, or as
    ``folded``, the report's own folding, without folding again); None for a session without
    per-step second moments (saved before format 3, or fewer than 2 steps)."""
    if not has_moments(session):
        return None
    n = session.typed_meta.profiled_steps
    factor = t_quantile(1 - (1 - LEVEL) / 2, n - 1) / math.sqrt(n)
    spreads = SpreadTable(session, show_all) if folded is None else SpreadTable.sharing(folded, n)
    out: LineHalfWidths = {}
    for row in flatten_by_line(spreads.tree()):
        key = (row.node.file, row.node.line)
        own = {k: round(math.sqrt(v) * factor) for k, v in row.self.items()}
        inc = {k: round(math.sqrt(v) * factor) for k, v in row.inclusive.items()}
        out[key] = (own, inc)
    return out
