"""Stragglers: the rank the others wait for at their collectives.

A collective completes on every rank only when the last rank has joined it, so the rank that
arrives last spends the least time in it and every other rank waits there for it. What a rank
spends inside a collective is measured per collective call site (a node of the merged tree,
:mod:`dlpt.analysis.ranks.merge`), per step:

- on a GPU (NCCL): the collective's kernels' time (``comm_ns``): an NCCL kernel starts when its
  rank launches it and spins until the peers arrive, so the straggler's kernel is the shortest;
- on a CPU process group (gloo): the host time waiting in the call (``comm_wait_ns``, visible
  through :mod:`dlpt.capture.ranks.pycomm`).

At each site the rank with the least time is the one the others waited for, by the others'
median time minus its own. Summed over the sites where it arrived last, that is how long the
job waited for it per step; a rank is named a straggler when that reaches
``MIN_STEP_FRACTION`` of the median step time (and ``MIN_WAIT_NS``), and, when several ranks
would be, ``MIN_OF_WORST`` of the worst one's wait, so the jitter of equal ranks is not named.
The evidence says where, and whether the straggler's own work (compute per step) is longer
than the others': when it is not, its delay is outside the recorded work (host-side Python,
data loading, I/O, a sleep, another process on its CPU or GPU).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dlpt.analysis.communication import COMM, WAIT
from dlpt.analysis.ranks.merge import RankSet, RankTotals, SpreadNode, median
from dlpt.model.comm_names import is_collective_op

__all__ = [
    "Site",
    "Straggler",
    "collective_sites",
    "find_stragglers",
    "MIN_STEP_FRACTION",
    "MIN_WAIT_NS",
    "MIN_OF_WORST",
]

MIN_STEP_FRACTION = 0.1
MIN_WAIT_NS = 100_000.0
MIN_OF_WORST = 0.25


@dataclass
class Site:
    """One collective call site: its node in the merged tree, the nearest line above it, and
    each rank's time inside it per step."""

    node: SpreadNode
    line: SpreadNode | None
    times: dict[int, float]

    @property
    def last(self) -> int:
        """The rank that arrived last (least time inside; the lowest such rank on a tie)."""
        return min(self.times, key=lambda r: (self.times[r], r))

    @property
    def waited(self) -> float:
        """How long the others waited for :attr:`last` here: their median minus its time."""
        last = self.last
        others = [t for r, t in self.times.items() if r != last]
        return max(0.0, median(others) - self.times[last])


@dataclass
class Straggler:
    rank: int
    waited_ns: float  # per step, summed over its sites
    sites: list[Site] = field(default_factory=list)
    compute_ns: float = 0.0  # its work per step
    others_compute_ns: float = 0.0  # the other ranks' median


def collective_sites(rs: RankSet, root: SpreadNode, gpu: bool) -> list[Site]:
    """The outermost collective nodes of the merged tree, with each rank's time inside them
    (communication kernels on a GPU, waiting on a CPU), per step."""
    metric = COMM if gpu else WAIT
    ranks = rs.by_rank()
    out: list[Site] = []
    stack: list[tuple[SpreadNode, SpreadNode | None]] = [(root, None)]
    while stack:
        n, line = stack.pop()
        if n.node.kind == "op" and is_collective_op(n.node.name):
            # Only the ranks that made this call: a rank without it did not arrive last.
            times = {r: v for r, v in n.values(metric, ranks).items() if r in n.inclusive}
            if len(times) >= 2 and any(times.values()):
                out.append(Site(n, line, times))
            continue
        here = n if n.node.kind == "frame" else line
        stack.extend((c, here) for c in n.children.values())
    return out


def find_stragglers(rs: RankSet, sites: list[Site], totals: dict[int, RankTotals]) -> list[Straggler]:
    """The ranks the others waited for long enough to matter, the longest wait first."""
    by_rank: dict[int, Straggler] = {}
    for site in sites:
        w = site.waited
        if w <= 0:
            continue
        s = by_rank.setdefault(site.last, Straggler(site.last, 0.0))
        s.waited_ns += w
        s.sites.append(site)
    step = median([t.step_wall_ns for t in totals.values() if t.step_wall_ns > 0])
    floor = max(MIN_WAIT_NS, MIN_STEP_FRACTION * step)
    worst = max((s.waited_ns for s in by_rank.values()), default=0.0)
    floor = max(floor, MIN_OF_WORST * worst)
    named = [s for s in by_rank.values() if s.waited_ns >= floor]
    for s in named:
        s.sites.sort(key=lambda site: -site.waited)
        own = totals.get(s.rank)
        s.compute_ns = own.compute_ns if own is not None else 0.0
        s.others_compute_ns = median([t.compute_ns for r, t in totals.items() if r != s.rank])
    return sorted(named, key=lambda s: -s.waited_ns)
