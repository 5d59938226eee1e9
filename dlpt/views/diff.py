"""The view of ``dlpt diff``: two sessions' lines matched (:func:`dlpt.analysis.diff.diff_sessions`)
and judged once, for the terminal comparison and its page.

A :class:`DiffView` chooses the metric once (the one asked for, else GPU time when either run
has any, else CPU op time), judges every line's change in it once
(:mod:`dlpt.analysis.diff_test`: the run shift, each line against it), and hands out what the
reports show: each row's values on both sides per step, the rows in the order they are read
(significant changes first, then by the size of the change), those above a threshold, the work
on no line. The page switches metrics, so it asks for every offered metric's verdicts
(:meth:`DiffView.judge`, each judged once). The renderers only format it; they import this
module and the model, never the analysis, so the types of what the view hands out are named here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dlpt.analysis.diff import (
    Change,
    Leaf,
    LineCost,
    LineDiff,
    LineKey,
    SessionDiff,
    Side,
    default_diff_metric,
    diff_sessions,
)
from dlpt.analysis.diff_test import (
    CANT_TELL,
    FASTER,
    MIN_LINES,
    MIN_SHARE,
    MIN_STEPS,
    RESOLVE,
    RUN_RESOLVE,
    SAME,
    SLOWER,
    RunShift,
)
from dlpt.model.metrics import METRICS, Metric, get_metric
from dlpt.model.session import Session

__all__ = [
    "DiffView",
    "diff_view",
    # what the view hands out
    "Change",
    "Leaf",
    "LineCost",
    "LineDiff",
    "RunShift",
    "Side",
    # the verdicts' words and bounds, as the reports say them
    "SLOWER",
    "FASTER",
    "SAME",
    "CANT_TELL",
    "RUN_RESOLVE",
    "MIN_LINES",
    "MIN_SHARE",
    "MIN_STEPS",
    "RESOLVE",
]


@dataclass(eq=False)
class DiffView:
    """``diff`` (the matched lines of A and B) in ``metric``, judged once (see the module's
    docstring)."""

    diff: SessionDiff
    metric: Metric
    _judged: dict[str, tuple[RunShift | None, dict[LineKey, Change]]] = field(
        default_factory=dict, repr=False
    )

    # -- the two runs ------------------------------------------------------------------------------

    @property
    def a(self) -> Side:
        return self.diff.a

    @property
    def b(self) -> Side:
        return self.diff.b

    @property
    def note(self) -> str:
        """How lines were matched and how values are scaled, in words."""
        return self.diff.note

    @property
    def match_by(self) -> str:
        return self.diff.match_by

    @property
    def rows(self) -> list[LineDiff]:
        return self.diff.rows

    @property
    def tested(self) -> bool:
        """Whether changes can be tested: both sessions saved per-step second moments."""
        return self.diff.tested

    def step_change(self) -> str:
        """Whether the step times differ beyond their spread ("differs", "within noise", "")."""
        return self.diff.step_change()

    # -- the verdicts ------------------------------------------------------------------------------

    def judge(self, metric: Metric) -> tuple[RunShift | None, dict[LineKey, Change]]:
        """The run shift and every row with a value of ``metric``, judged (once per metric);
        (None, {}) when the sessions cannot be tested."""
        if metric.name not in self._judged:
            self._judged[metric.name] = self.diff.judge(metric)
        return self._judged[metric.name]

    @property
    def shift(self) -> RunShift | None:
        """What the whole run shares, in the view's metric (None: not tested)."""
        return self.judge(self.metric)[0]

    @property
    def changes(self) -> dict[LineKey, Change]:
        """Every row with a value of the view's metric, judged ({}: not tested)."""
        return self.judge(self.metric)[1]

    @property
    def offered(self) -> dict[str, Metric]:
        """The metrics either run has any of (the page switches between them)."""
        return {n: m for n, m in METRICS.items() if m(self.a.total) > 0 or m(self.b.total) > 0}

    # -- the values --------------------------------------------------------------------------------

    def value(self, row: LineDiff, side: str) -> float:
        """The view's metric of the row's ``side`` ("a"/"b"), its own cost, per step (0 if absent)."""
        return self.diff.value(self.metric, row, side)

    def total(self, side: str) -> float:
        """The view's metric of a whole run, per step."""
        return self.diff.total(self.metric, side)

    @property
    def off_lines(self) -> tuple[float, float]:
        """The work on no user line, in A and B, per step."""
        return self.metric(self.a.off_lines) / self.a.scale, self.metric(self.b.off_lines) / self.b.scale

    def shown(self, threshold: float, limit: int, judged: bool = True) -> tuple[list[LineDiff], int]:
        """The rows at least ``threshold`` of the larger total, at most ``limit``: significant
        changes first when ``judged`` (the verdicts' order), else by the size of the change; and
        how many rows with any value that leaves out."""
        ranked = self.diff.ranked(self.metric, self.changes if judged else None)
        cut = threshold * max(self.total("a"), self.total("b"))
        shown = [r for r in ranked if max(self.value(r, "a"), self.value(r, "b")) >= cut][:limit]
        return shown, len(ranked) - len(shown)


def diff_view(
    a: Session, b: Session, a_label: str = "A", b_label: str = "B", metric: str | Metric | None = None
) -> DiffView:
    """``dlpt diff``'s view of ``a`` against ``b``; ``metric`` None: GPU time when either run has
    any, else CPU op time (UsageError naming the choices for an unknown one)."""
    d = diff_sessions(a, b, a_label, b_label)
    return DiffView(d, get_metric(metric) if metric else default_diff_metric(d))
