"""The view of a job's ranks: the report across ranks analysed once (:func:`ranks_view`), for the
terminal report across ranks and its page.

A :class:`RanksView` holds the analysis (each rank's totals and tree, the trees merged by path,
the lines of every rank, the collective sites, the waits, the stragglers named and not named) and
shapes what both reports show: the metric chosen once, the ranks' source text merged once, the
rows of the merged tree and of the lines with their value on every rank, the job's hosts and
missing ranks, the load imbalance. The renderers only format it; they import this module and
the model, never the analysis, so the types of what the view hands out are named here.

A view is made from the ranks' sessions (:func:`rank_set`), loaded or gathered by rank 0, where
each rank may have sent a summary instead (:func:`for_rank_zero`, :func:`received`,
:func:`with_lines`: :mod:`dlpt.analysis.ranks.summary`).

The rows of the lines and of the merged tree are shaped in :mod:`dlpt.views.rank_lines`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property

from dlpt.analysis.ranks.arrivals import Arrivals, arrival_waits, rank_collectives
from dlpt.analysis.ranks.lines import LineTable, line_table, line_variances, one_thread, rank_lines
from dlpt.analysis.ranks.merge import (
    Rank,
    RankSet,
    RankTotals,
    Spread,
    SpreadNode,
    imbalance,
    median,
    rank_set,
    report_trees,
    spread,
    spread_tree,
    totals,
)
from dlpt.analysis.ranks.stragglers import (
    MIN_JUDGED_STEPS,
    Cause,
    Site,
    Straggler,
    Waits,
    classify,
    collective_sites,
    find_stragglers,
    host_sampling,
    waits,
)
from dlpt.analysis.ranks.summary import Summary, for_rank_zero, received, with_lines
from dlpt.analysis.ranks.timelines import RankTimelines, side_by_side, timeline_note
from dlpt.analysis.report.run import rank_label
from dlpt.model.gc_pause import gc_paused
from dlpt.model.meta import program_argv
from dlpt.model.metrics import COMM, METRICS, WAIT, Metric, get_metric
from dlpt.model.session import Session
from dlpt.model.tree import Node
from dlpt.views.rank_lines import PageLine, SpreadRow, line_rows, page_lines

__all__ = [
    "RanksView",
    "ranks_view",
    "rank_ranges",
    "rank_set",
    # what the front ends make a view from: sessions loaded, or summaries sent to rank 0
    "Summary",
    "for_rank_zero",
    "received",
    "with_lines",
    "Spread",
    "spread",
    "SpreadRow",
    "Imbalance",
    "PageLine",
    # what the view hands out
    "Cause",
    "Rank",
    "RankSet",
    "RankTimelines",
    "RankTotals",
    "Site",
    "Straggler",
]


@dataclass(frozen=True)
class Imbalance:
    """The load imbalance across ranks: (max - mean) / mean of ``what`` per step, the rank with
    the most and how much it had."""

    share: float
    rank: int
    rank_ns: float
    what: str


@dataclass
class RanksView:
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
    # Ranks that counted fewer than MIN_JUDGED_STEPS steps (none: their figures are not a
    # step's; one or two: no step median to compare), so no verdict across ranks (straggler or
    # none) is given while any is here.
    lacking: list[int] = field(default_factory=list)
    min_steps: int = MIN_JUDGED_STEPS  # what a rank must count to be judged

    # -- the verdict ---------------------------------------------------------------------------

    @property
    def judged(self) -> bool:
        """Whether the straggler verdict rests on counted steps of every rank."""
        return not self.lacking

    def not_judged_why(self) -> str:
        """Why no straggler verdict is given (the ranks in ``lacking``), in the reports' words."""
        none = [r for r in self.lacking if self.per_rank[r].counted == 0]
        few = [r for r in self.lacking if r not in none]
        parts = []
        if none:
            which = f"rank {none[0]}" if len(none) == 1 else f"ranks {rank_ranges(none)}"
            parts.append(
                f"{which} counted no step (all {'its' if len(none) == 1 else 'their'} steps were "
                "warm-up or skipped): the ranks' waits per step are not a step's"
            )
        if few:
            counts = ", ".join(f"rank {r} {self.per_rank[r].counted}" for r in few[:8])
            more = f" and {len(few) - 8:,} more" if len(few) > 8 else ""
            parts.append(
                f"counted steps: {counts}{more}, fewer than the {self.min_steps} a rank's step "
                "median needs to be compared"
            )
        return "; ".join(parts)

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

    # -- the job -------------------------------------------------------------------------------

    @property
    def first(self) -> Session | None:
        """The first rank's session: what the job's name and versions are read from."""
        return self.rs.ranks[0].session if self.rs.ranks else None

    @property
    def argv(self) -> list[str]:
        """The profiled program's argv (the first rank's)."""
        return program_argv(self.first.typed_meta) if self.first is not None else []

    @property
    def versions(self) -> list[tuple[str, str]]:
        """(``torch``/``dlpt``, its version) of the first rank, those it says."""
        meta = self.first.typed_meta if self.first is not None else None
        found = {"torch": meta.torch, "dlpt": meta.dlpt} if meta is not None else {}
        return [(k, v) for k, v in found.items() if v]

    @property
    def hosts(self) -> list[tuple[str, list[int]]]:
        """Each host (``?``: unknown) and its ranks, hosts in order."""
        out: dict[str, list[int]] = {}
        for r in self.rs.ranks:
            out.setdefault(r.host or "?", []).append(r.rank)
        return sorted(out.items())

    @property
    def missing_by_reason(self) -> dict[str, list[int]]:
        """The missing ranks by why they are missing (thousands may be missing for one reason)."""
        out: dict[str, list[int]] = {}
        for gone, why in self.rs.missing.items():
            out.setdefault(why, []).append(gone)
        return out

    @property
    def steps_counted(self) -> list[int]:
        """The distinct numbers of steps the ranks counted."""
        return sorted({t.counted for t in self.per_rank.values()})

    def where(self, rank: Rank) -> str:
        """Which rank ``rank`` is, in words ("rank 1/4 (local 1) on host-a, GPU 1, nccl"), else
        where its session came from."""
        return rank_label(rank.session.typed_meta) or rank.path

    def imbalance(self) -> Imbalance | None:
        """The load imbalance of the ranks' compute (None with fewer than two ranks or none)."""
        work = {r: t.compute_ns for r, t in self.per_rank.items()}
        imb = imbalance(work)
        if imb is None:
            return None
        what = "GPU compute" if any(t.gpu for t in self.per_rank.values()) else "CPU op time outside waits"
        return Imbalance(imb[0], imb[1], work[imb[1]], what)

    def steps_of(self, rank: Rank) -> list[list[int]]:
        """Each counted step of the rank's first GPU: span, busy, communication, exposed."""
        for rows in (rank.session.typed_meta.gpu_steps or {}).values():
            return [[r.span_ns, r.busy_ns, r.comm_ns or 0, r.exposed_ns or 0] for r in rows]
        return []

    @cached_property
    def sources(self) -> dict[str, dict[str, str]]:
        """The ranks' saved source text, merged once (the same code; the first rank's text
        wins)."""
        out: dict[str, dict[str, str]] = {}
        for r in reversed(self.rs.ranks):
            for file, lines in (r.session.typed_meta.sources or {}).items():
                out.setdefault(file, {}).update(lines)
        return out

    @property
    def timeline_note(self) -> str:
        """What the page says above the ranks' timelines ("" without them)."""
        return timeline_note(self.timelines) if self.timelines is not None else ""

    @staticmethod
    def others_median(site: Site, rank: int) -> float:
        """The median time of the ranks other than ``rank`` inside ``site``, per step."""
        return median([v for r, v in site.times.items() if r != rank])

    # -- the tree and the lines --------------------------------------------------------------------

    @cached_property
    def by_rank(self) -> dict[int, Rank]:
        return self.rs.by_rank()

    @property
    def comm(self) -> Metric | None:
        """The communication column beside the values (GPU time of collectives on a GPU job, the
        host's wait in them on a CPU one); None when no rank communicated."""
        has_comm = any(t.communication_ns for t in self.per_rank.values())
        return (COMM if self.gpu else WAIT) if has_comm else None

    @property
    def total(self) -> float:
        """The job's total of the metric: the median rank's, per step."""
        return median(list(self.root.values(self.metric, self.by_rank).values()))

    def _comm_of(self, n: SpreadNode) -> float | None:
        comm = self.comm
        return median(list(n.values(comm, self.by_rank).values())) if comm is not None else None

    def tree_rows(self, threshold: float, max_depth: int) -> list[SpreadRow]:
        """The merged tree in pre-order: rows whose largest value on any rank reaches
        ``threshold`` of :attr:`total`, children by median then by largest, at most
        ``max_depth`` levels below the root."""
        metric, ranks = self.metric, self.by_rank
        cut = threshold * self.total
        rows: list[SpreadRow] = []
        stack: list[tuple[SpreadNode, bool, int]] = [(self.root, False, 0)]
        while stack:
            node, last, depth = stack.pop()
            rows.append(SpreadRow(node.node, node.values(metric, ranks), self._comm_of(node), last, depth))
            if depth + 1 > max_depth:
                continue
            kids = []
            for c in node.children.values():
                v = c.values(metric, ranks)
                if v and max(v.values()) > 0 and max(v.values()) >= cut:
                    kids.append((median(list(v.values())), max(v.values()), c))
            kids.sort(key=lambda k: (-k[0], -k[1]))
            end = len(kids) - 1
            for i in range(end, -1, -1):
                stack.append((kids[i][2], i == end, depth + 1))
        return rows

    def line_rows(self, threshold: float, limit: int) -> tuple[list[SpreadRow], int]:
        """The lines whose largest own cost on any rank reaches ``threshold`` of :attr:`total`,
        the largest on any rank first, then the largest median: at most ``limit`` of them, and
        how many reach it."""
        return line_rows(self.lines, self.metric, self.comm, threshold * self.total, limit)

    @property
    def metrics(self) -> list[Metric]:
        """The metrics some line has on some rank (the view's own first when it has none)."""
        found = [m for m in METRICS.values() if self.lines.has(m)]
        return found if self.metric in found else [self.metric, *found]

    def page_lines(self, metrics: list[Metric], limit: int) -> list[PageLine]:
        """The costliest lines (by the view's metric on any rank; lines with only other metrics
        after them), at most ``limit``, each with, per metric, its max, median and min across
        ranks and the slowest rank."""
        return page_lines(self.lines, self.metric, metrics, limit)


def rank_ranges(ranks: Iterable[int]) -> str:
    """Ranks in the reports' words: 0,1,2,5 -> "0-2, 5"."""
    out: list[str] = []
    run: list[int] = []
    for r in sorted(ranks):
        if run and r == run[-1] + 1:
            run.append(r)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)))
        run = [r]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)))
    return ", ".join(out)


def _arrivals(rs: RankSet) -> Arrivals | None:
    """The wait from every rank's collective kernels, when each rank's session has them."""
    colls = {r.rank: rank_collectives(r.session.typed_meta) for r in rs.ranks}
    have = {r: c for r, c in colls.items() if c is not None}
    if len(have) < len(colls):
        return None
    return arrival_waits(have, {r.rank: r.steps for r in rs.ranks})


def ranks_view(rs: RankSet, metric: str | Metric | None = None, show_all: bool = False) -> RanksView:
    """Everything the reports across ranks show about ``rs``, analysed once; ``metric`` (None:
    GPU time when any rank has some, else CPU op time) the one the tree and the lines show."""
    with gc_paused(), one_thread():
        # Any node: a rank's summary folds small kernels into the lines above them.
        gpu = any(METRICS["gpu"](n["m"]) > 0 for r in rs.ranks for n in r.session.nodes)
        m = get_metric(metric) if metric is not None else METRICS["gpu" if gpu else "cpu"]
        per_rank = {r.rank: totals(r, gpu) for r in rs.ranks}
        trees = report_trees(rs, show_all)
        root = spread_tree(rs, trees)
        lines = line_table(
            {
                r.rank: r.lines
                if r.lines is not None
                else rank_lines(trees[r.rank], line_variances(r.session, show_all))
                for r in rs.ranks
            },
            {r.rank: r.steps for r in rs.ranks},
        )
        sites = collective_sites(rs, root, gpu)
        w = waits(per_rank, _arrivals(rs) if gpu else None)
        lacking = sorted(r for r, t in per_rank.items() if t.counted < MIN_JUDGED_STEPS)
        candidates = [] if lacking else find_stragglers(w, per_rank, sites)
        step = median([t.step_wall_ns for t in per_rank.values() if t.step_wall_ns > 0])
        fewest = min((t.counted for t in per_rank.values()), default=0)
        sampling = {r.rank: how for r in rs.ranks if (how := host_sampling(r)) is not None}
        for s in candidates:
            s.counted = fewest
            classify(s, lines, gpu, step, sampling)
        named = [s for s in candidates if not s.unexplained]
        unnamed = [s for s in candidates if s.unexplained]
        timelines = side_by_side(rs)
        return RanksView(
            rs, gpu, m, per_rank, trees, root, lines, sites, w, named, unnamed, timelines, lacking
        )
