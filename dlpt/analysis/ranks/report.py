"""The analysis of a job's ranks, done once: what the terminal and HTML cross-rank reports
show (they only format it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from dlpt.analysis.ranks.arrivals import Arrivals, arrival_waits, rank_collectives
from dlpt.analysis.ranks.lines import LineTable, line_table, one_thread, rank_lines
from dlpt.analysis.ranks.merge import (
    RankSet,
    RankTotals,
    SpreadNode,
    median,
    report_trees,
    spread_tree,
    totals,
)
from dlpt.analysis.ranks.stragglers import (
    Site,
    Straggler,
    Waits,
    classify,
    collective_sites,
    find_stragglers,
    waits,
)
from dlpt.analysis.ranks.timelines import RankTimelines, side_by_side
from dlpt.model.gc_pause import gc_paused
from dlpt.model.metrics import METRICS, Metric, get_metric
from dlpt.model.tree import Node

__all__ = ["RankReport", "rank_report", "Spread", "spread"]


@dataclass(frozen=True)
class Spread:
    """One figure per rank, summarised: the least and the most with their ranks, and the median
    between them from three ranks on (the median of two ranks is a figure neither had)."""

    low: float
    low_rank: int
    high: float
    high_rank: int
    median: float | None  # None with fewer than three ranks
    ranks: int


def spread(values: dict[int, float]) -> Spread | None:
    """``values``' spread across ranks; None without any."""
    if not values:
        return None
    lo = min(values, key=lambda r: (values[r], r))
    hi = max(values, key=lambda r: (values[r], -r))
    mid = median(list(values.values())) if len(values) > 2 else None
    return Spread(values[lo], lo, values[hi], hi, mid, len(values))


@dataclass
class RankReport:
    rs: RankSet
    gpu: bool  # the job's sessions hold GPU time
    metric: Metric  # the tree's and the lines' values
    per_rank: dict[int, RankTotals]
    trees: dict[int, Node]  # each rank's report tree
    root: SpreadNode  # the trees merged by path
    lines: LineTable
    sites: list[Site]  # collective call sites
    waits: Waits
    stragglers: list[Straggler]  # named: work of their own made the others wait
    # The others waited for them, but no line of their own explains it (a slower host, or a
    # delay outside the recorded work): reported, not named.
    unnamed: list[Straggler]
    timelines: RankTimelines | None = None  # the ranks' GPU streams on one clock (--timeline)
    # Ranks that counted no step: their figures are not a step's, so no verdict across ranks
    # (straggler or none) is given while any is here.
    lacking: list[int] = field(default_factory=list)

    @property
    def judged(self) -> bool:
        """Whether the straggler verdict rests on counted steps of every rank."""
        return not self.lacking

    @property
    def fewest_steps(self) -> int:
        """The fewest steps any rank counted: what a verdict across ranks rests on."""
        return min((t.counted for t in self.per_rank.values()), default=0)

    @property
    def step_ns(self) -> float:
        """The median over ranks of each rank's (traced) step."""
        return median([t.step_wall_ns for t in self.per_rank.values() if t.step_wall_ns > 0])

    @property
    def step_spread(self) -> Spread | None:
        """Each rank's (traced) step, across ranks."""
        return spread({r: t.step_wall_ns for r, t in self.per_rank.items() if t.step_wall_ns > 0})

    @property
    def untraced_spread(self) -> Spread | None:
        """Each rank's untraced step (its program's own), across the ranks that measured one."""
        return spread({r: t.untraced_step_ns for r, t in self.per_rank.items() if t.untraced_step_ns})

    @property
    def wait_rule(self) -> str:
        """What a rank's wait measures here, in words (the reports print it beside the wait)."""
        if self.gpu and self.waits.arrivals is not None:
            return (
                "a rank's wait: its host blocked on the GPU while the GPU, with nothing else to run, "
                "waited in collectives for the last rank's to start"
            )
        if self.gpu:
            return "a rank's wait: its host blocked on the GPU while the GPU sat in communication alone"
        return "a rank's wait: its host time inside collective calls"

    @property
    def wait_spread(self) -> tuple[float, float]:
        """The least and the most any rank waited per step."""
        w = list(self.waits.per_rank.values())
        return (min(w), max(w)) if w else (0.0, 0.0)


def _arrivals(rs: RankSet) -> Arrivals | None:
    """The wait from every rank's collective kernels, when each rank's session has them."""
    colls = {r.rank: rank_collectives(r.session.meta) for r in rs.ranks}
    have = {r: c for r, c in colls.items() if c is not None}
    if len(have) < len(colls):
        return None
    return arrival_waits(have, {r.rank: r.steps for r in rs.ranks})


def rank_report(rs: RankSet, metric: str | Metric | None = None, show_all: bool = False) -> RankReport:
    """Everything the cross-rank reports show about ``rs``."""
    with gc_paused(), one_thread():
        # Any node: a rank's summary folds small kernels into the lines above them.
        gpu = any(METRICS["gpu"](n["m"]) > 0 for r in rs.ranks for n in r.session.nodes)
        m = get_metric(metric) if metric is not None else METRICS["gpu" if gpu else "cpu"]
        per_rank = {r.rank: totals(r, gpu) for r in rs.ranks}
        trees = report_trees(rs, show_all)
        root = spread_tree(rs, trees)
        lines = line_table(
            {r.rank: r.lines if r.lines is not None else rank_lines(trees[r.rank]) for r in rs.ranks},
            {r.rank: r.steps for r in rs.ranks},
        )
        sites = collective_sites(rs, root, gpu)
        w = waits(per_rank, _arrivals(rs) if gpu else None)
        lacking = sorted(r for r, t in per_rank.items() if t.counted == 0)
        candidates = [] if lacking else find_stragglers(w, per_rank, sites)
        step = median([t.step_wall_ns for t in per_rank.values() if t.step_wall_ns > 0])
        fewest = min((t.counted for t in per_rank.values()), default=0)
        for s in candidates:
            s.counted = fewest
            classify(s, lines, gpu, step)
        named = [s for s in candidates if not s.unexplained]
        unnamed = [s for s in candidates if s.unexplained]
        timelines = side_by_side(rs)
        return RankReport(
            rs, gpu, m, per_rank, trees, root, lines, sites, w, named, unnamed, timelines, lacking
        )
