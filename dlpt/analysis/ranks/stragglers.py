"""Stragglers: the rank the others wait for, how long they wait per step, and what it did then.

**Wait.** A rank waits for the others when the resource that paces its step sits idle until a
collective completes. That resource is its host or its GPU, so a rank's wait per step is the
smaller of the two:

- *host blocked*: host time in synchronising CUDA calls, plus CUDA API time beyond the least
  any rank spent in non-synchronising calls (a full launch queue blocks inside a launch; every
  rank pays the same launch overhead, so that part cancels);
- *GPU exposed*: communication kernels running with no other work on the device (the compute
  stream waiting for a collective), from the steps' own time line.

Both must be idle: a rank whose NCCL kernels spin for 25 ms while its host is still issuing the
step's work (ranks in step with a constant offset, which FSDP2's prefetching makes common) loses
nothing, and is not waiting. A kernel's duration alone is no measure of waiting: a collective
issued early spins until its peers arrive, overlapped with compute.

On a CPU process group (gloo) the host waits inside the collective call itself
(``comm_wait_ns``, visible through :mod:`dlpt.capture.ranks.pycomm`): that is the wait.

**Straggler.** The rank the others wait for waits least itself. A rank is named when the other
ranks' median wait exceeds its own by ``MIN_STEP_FRACTION`` of the median step time (and
``MIN_WAIT_NS``); when several are, those within ``MIN_OF_WORST`` of the worst. Ranks doing the
same work differ by jitter: the report then says how close their waits are.

**Cause.** What the straggler did while the others waited: its source lines whose own cost per
step (sampled host time, or GPU compute) exceeds the other ranks' median the most: a
``time.sleep`` or a data-loading line on its host, the line of a slower kernel on its GPU.

**Where.** The collective call sites where the others spent longer than the straggler
(communication kernels on a GPU, waiting on a CPU): where the wait landed in their code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import torch

from dlpt.analysis.communication import COMM, WAIT
from dlpt.analysis.ranks.lines import LineTable, row_median
from dlpt.analysis.ranks.merge import RankSet, RankTotals, SpreadNode, median
from dlpt.model.comm_names import is_collective_op
from dlpt.model.processors import METRICS, Metric
from dlpt.model.tree import Node

__all__ = [
    "Site",
    "Cause",
    "Straggler",
    "Waits",
    "waits",
    "collective_sites",
    "find_stragglers",
    "causes",
    "MIN_STEP_FRACTION",
    "MIN_WAIT_NS",
    "MIN_OF_WORST",
]

MIN_STEP_FRACTION = 0.1
MIN_WAIT_NS = 100_000.0
MIN_OF_WORST = 0.25
CAUSE_SHARE = 0.2  # a line is a cause when its excess is at least this share of the wait
MAX_CAUSES = 3

# The straggler's own GPU work at a line: kernels, copies and memsets outside communication.
GPU_COMPUTE = Metric(
    "gpu compute",
    "GPU time outside communication kernels",
    "ns",
    lambda m: METRICS["gpu"](m) - m.get("comm_ns", 0),
)
HOST = METRICS["host"]


@dataclass
class Waits:
    """Each rank's wait per step (see the module's doc), with its two parts on a GPU job."""

    per_rank: dict[int, float]
    host_blocked: dict[int, float] = field(default_factory=dict)
    gpu_exposed: dict[int, float] = field(default_factory=dict)
    gpu: bool = True


def waits(per_rank: Mapping[int, RankTotals]) -> Waits:
    """Each rank's time per step spent waiting for the others."""
    gpu = any(t.gpu for t in per_rank.values())
    if not gpu:
        return Waits({r: t.wait_ns for r, t in per_rank.items()}, gpu=False)
    launch_floor = min((max(0.0, t.api_ns - t.sync_ns) for t in per_rank.values()), default=0.0)
    host = {r: t.sync_ns + max(0.0, t.api_ns - t.sync_ns - launch_floor) for r, t in per_rank.items()}
    exposed = {r: t.exposed_ns for r, t in per_rank.items()}
    return Waits({r: min(host[r], exposed[r]) for r in per_rank}, host, exposed)


@dataclass
class Site:
    """One collective call site: its node in the merged tree, the nearest line above it, and
    each rank's time inside it per step."""

    node: SpreadNode
    line: SpreadNode | None
    times: dict[int, float]

    def waited_for(self, rank: int) -> float:
        """How much longer the other ranks spent here than ``rank`` (their median minus its)."""
        others = [t for r, t in self.times.items() if r != rank]
        return max(0.0, median(others) - self.times.get(rank, 0.0)) if others else 0.0


@dataclass
class Cause:
    """A line where the straggler spent more per step than the others (their median)."""

    node: Node  # the line's label
    metric: Metric
    own_ns: float
    others_ns: float

    @property
    def excess_ns(self) -> float:
        return self.own_ns - self.others_ns


@dataclass
class Straggler:
    rank: int
    waited_ns: float  # per step: the other ranks' median wait minus its own
    sites: list[Site] = field(default_factory=list)  # where the others waited, longest first
    causes: list[Cause] = field(default_factory=list)  # what it did meanwhile, largest first


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
            # Only the ranks that made this call.
            times = {r: v for r, v in n.values(metric, ranks).items() if r in n.inclusive}
            if len(times) >= 2 and any(times.values()):
                out.append(Site(n, line, times))
            continue
        here = n if n.node.kind == "frame" else line
        stack.extend((c, here) for c in n.children.values())
    return out


def find_stragglers(
    w: Waits, totals: Mapping[int, RankTotals], sites: list[Site] | None = None
) -> list[Straggler]:
    """The ranks the others waited for long enough to matter, the longest wait first."""
    named: list[Straggler] = []
    for r, own in w.per_rank.items():
        others = [v for o, v in w.per_rank.items() if o != r]
        if others:
            named.append(Straggler(r, max(0.0, median(others) - own)))
    step = median([t.step_wall_ns for t in totals.values() if t.step_wall_ns > 0])
    floor = max(MIN_WAIT_NS, MIN_STEP_FRACTION * step)
    worst = max((s.waited_ns for s in named), default=0.0)
    floor = max(floor, MIN_OF_WORST * worst)
    named = [s for s in named if s.waited_ns >= floor]
    for s in named:
        s.sites = sorted(
            (x for x in sites or [] if x.waited_for(s.rank) > 0), key=lambda x: -x.waited_for(s.rank)
        )
    return sorted(named, key=lambda s: (-s.waited_ns, s.rank))


def causes(s: Straggler, lines: LineTable, gpu: bool) -> list[Cause]:
    """The straggler's lines whose own cost per step exceeds the other ranks' median by at least
    ``CAUSE_SHARE`` of its wait: sampled host time, and GPU compute on a GPU job."""
    col = lines.column.get(s.rank)
    if col is None or len(lines) == 0 or len(lines.order) < 2:
        return []
    others = [i for i in range(len(lines.order)) if i != col]
    found: list[Cause] = []
    for metric in [HOST, GPU_COMPUTE] if gpu else [HOST, METRICS["cpu"]]:
        v = lines.values(metric)
        own = v[:, col]
        rest = row_median(v[:, others])
        excess = own - rest
        for i in torch.nonzero(excess >= max(CAUSE_SHARE * s.waited_ns, 1.0)).flatten().tolist():
            found.append(Cause(lines.labels[i], metric, float(own[i]), float(rest[i])))
    found.sort(key=lambda c: -c.excess_ns)
    return found[:MAX_CAUSES]
