"""The ranks of one job side by side: each rank's totals per step, the calling-context tree with
every node's value on every rank, and each source line's own cost on every rank.

Ranks run the same code, so their trees line up: nodes are matched by their path of (kind,
name, file name, line) from the root, as ``dlpt diff`` matches lines (the file's name, not its
directory: on several nodes the same code may sit in different checkouts). Every value is per
profiled step of its own rank, so ranks that recorded a different number of steps still
compare; a session without steps counts as one.
"""

from __future__ import annotations

import functools
import os
import statistics
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from dlpt.analysis.ranks.lines import RankLines
from dlpt.errors import UsageError
from dlpt.files.rank_paths import MAX_WORLD_SIZE
from dlpt.model.meta import step_time, wall_ns
from dlpt.model.metrics import Metric
from dlpt.model.session import Session
from dlpt.model.tree import Node
from dlpt.trees.folding import report_tree

__all__ = [
    "Rank",
    "RankSet",
    "rank_set",
    "RankTotals",
    "totals",
    "imbalance",
    "SpreadNode",
    "report_trees",
    "spread_tree",
    "median",
    "Spread",
    "spread",
]


def median(values: list[float]) -> float:
    return float(statistics.median(values)) if values else 0.0


@dataclass
class Rank:
    """One rank's session and where it came from."""

    rank: int
    path: str
    session: Session
    # Its lines already flattened (a summary sent through the store), else made from its tree.
    lines: RankLines | None = None

    @functools.cached_property
    def counted(self) -> int:
        """The steps this rank counted (0: none; its work is all outside steps)."""
        return self.session.typed_meta.profiled_steps

    @property
    def steps(self) -> int:
        """What its totals are divided by: its counted steps, 1 when it counted none."""
        return max(1, self.counted)

    @property
    def host(self) -> str:
        d = self.session.typed_meta.distributed
        return (d.hostname if d is not None else None) or ""

    def per_step(self, v: float) -> float:
        return v / self.steps


@dataclass
class RankSet:
    """The ranks of a job that are here, rank order; ``missing`` says why the others are not."""

    ranks: list[Rank]
    world_size: int
    missing: dict[int, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def by_rank(self) -> dict[int, Rank]:
        return {r.rank: r for r in self.ranks}


def rank_set(loaded: list[tuple[str, Session]], missing: Mapping[int, str] | None = None) -> RankSet:
    """The sessions as ranks of one job (``meta.distributed``). Sessions that do not say their
    rank (recorded without a launcher) are numbered in the order given, which a note says.
    Raises UsageError for two sessions of one rank (files of two runs mixed up)."""
    ranks: list[Rank] = []
    notes: list[str] = []
    sizes: set[int] = set()
    runs: set[str] = set()
    unnamed = all(s.typed_meta.distributed is None for _, s in loaded)
    for i, (path, session) in enumerate(loaded):
        d = session.typed_meta.distributed
        if d is None:
            if not unnamed:
                raise UsageError(f"{path}: the session does not say which rank it is (no meta.distributed)")
            ranks.append(Rank(i, path, session))
            continue
        if not 0 <= d.rank < MAX_WORLD_SIZE:
            raise UsageError(f"{path}: the session names rank {d.rank}, beyond {MAX_WORLD_SIZE:,} ranks")
        if 0 < d.world_size <= MAX_WORLD_SIZE:
            sizes.add(d.world_size)
        else:
            notes.append(
                f"{path}: ignoring its world size {d.world_size} (more than {MAX_WORLD_SIZE:,} ranks)"
            )
        if d.run_id is not None:
            runs.add(d.run_id)
        ranks.append(Rank(d.rank, path, session))
    if unnamed and len(loaded) > 1:
        notes.append("the sessions do not say their ranks: numbered in the order given")
    seen: dict[int, str] = {}
    for r in ranks:
        if r.rank in seen:
            raise UsageError(f"{seen[r.rank]} and {r.path} are both rank {r.rank} (sessions of two runs?)")
        seen[r.rank] = r.path
    ranks.sort(key=lambda r: r.rank)
    world = max([*sizes, max((r.rank for r in ranks), default=0) + 1])
    if len(sizes) > 1:
        notes.append(f"the sessions name different world sizes ({', '.join(map(str, sorted(sizes)))})")
    if len(runs) > 1:
        notes.append(f"the sessions come from {len(runs)} different launches")
    gone = dict(missing or {})
    for n in range(world):
        if n not in seen and n not in gone:
            gone[n] = "no session given"
    return RankSet(ranks, world, dict(sorted(gone.items())), notes)


@dataclass
class RankTotals:
    """One rank's totals per step. ``compute_ns`` is GPU time outside communication kernels on
    a GPU session, CPU op time outside waits for collectives on a CPU one."""

    rank: int
    steps: int  # what its figures are divided by (1 when it counted none)
    step_wall_ns: float  # a traced step (its median)
    gpu_ns: float
    comm_ns: float
    exposed_ns: float
    cpu_ns: float
    wait_ns: float
    gpu: bool
    untraced_step_ns: float | None = None  # a step run untraced in the same run, if measured
    sync_ns: float = 0.0  # host time blocked in synchronising CUDA calls
    api_ns: float = 0.0  # host time in CUDA API calls (the synchronising ones included)
    counted: int = 0  # steps the rank counted (0: no per-step figure of it is a step's)

    @property
    def compute_ns(self) -> float:
        return self.gpu_ns - self.comm_ns if self.gpu else self.cpu_ns - self.wait_ns

    @property
    def communication_ns(self) -> float:
        """Communication kernels' time on a GPU session, waiting for collectives on a CPU one."""
        return self.comm_ns if self.gpu else self.wait_ns


def _exposed_per_step(rank: Rank) -> float:
    """Exposed communication per counted step: from the steps' own time line where the session
    has it (dlpt 0.2 on), else the run's total over the profiled steps (older sessions counted
    warm-up there too)."""
    meta = rank.session.typed_meta
    rows = [r for dev in (meta.gpu_steps or {}).values() for r in dev]
    if any(r.exposed_ns is not None for r in rows):
        return rank.per_step(sum(r.exposed_ns or 0 for r in rows))
    return rank.per_step(sum((meta.gpu_comm_exposed_ns or {}).values()))


def totals(rank: Rank, gpu: bool) -> RankTotals:
    """``rank``'s totals per step; ``gpu``: the job's sessions hold GPU time."""
    sums: dict[str, int] = {}
    for n in rank.session.nodes:
        for k, v in n["m"].items():
            sums[k] = sums.get(k, 0) + v
    meta = rank.session.typed_meta
    traced, untraced = step_time(meta, "traced"), step_time(meta, "untraced")
    # No step time from a rank that counted no step (its run's wall is not a step's).
    wall = traced.median_ns if traced is not None else rank.per_step(wall_ns(meta)) if rank.counted else 0.0
    return RankTotals(
        rank=rank.rank,
        steps=rank.steps,
        step_wall_ns=wall,
        untraced_step_ns=untraced.median_ns if untraced is not None else None,
        gpu_ns=rank.per_step(sums.get("gpu_ns", 0) + sums.get("copy_ns", 0) + sums.get("memset_ns", 0)),
        comm_ns=rank.per_step(sums.get("comm_ns", 0)),
        exposed_ns=_exposed_per_step(rank),
        cpu_ns=rank.per_step(sums.get("cpu_ns", 0)),
        wait_ns=rank.per_step(sums.get("comm_wait_ns", 0)),
        gpu=gpu,
        sync_ns=rank.per_step(sums.get("sync_ns", 0)),
        api_ns=rank.per_step(sums.get("api_ns", 0)),
        counted=rank.counted,
    )


def imbalance(values: Mapping[int, float]) -> tuple[float, int] | None:
    """Load imbalance (max - mean) / mean and the rank with the max; None without a mean."""
    if len(values) < 2:
        return None
    mean = sum(values.values()) / len(values)
    if mean <= 0:
        return None
    top = max(values, key=lambda r: (values[r], -r))
    return (values[top] - mean) / mean, top


# -- the tree, every rank at every node ---------------------------------------------------------

Key = tuple[str, str, str, int]


def _key(node: Node) -> Key:
    return (node.kind, node.name, os.path.basename(node.file), node.line)


@dataclass
class SpreadNode:
    """A node of the merged tree: the first rank's node stands for its label; ``inclusive`` and
    ``own`` hold each rank's metrics (totals of the profiled window, not per step)."""

    node: Node
    inclusive: dict[int, dict[str, int]] = field(default_factory=dict)
    own: dict[int, dict[str, int]] = field(default_factory=dict)
    children: dict[Key, SpreadNode] = field(default_factory=dict)

    def values(self, metric: Metric, ranks: Mapping[int, Rank], own: bool = False) -> dict[int, float]:
        """Per rank (every rank of the set; 0 where the rank has no such node), per step."""
        src = self.own if own else self.inclusive
        return {r: rank.per_step(metric(src[r])) if r in src else 0.0 for r, rank in ranks.items()}

    def walk(self) -> Iterator[tuple[SpreadNode, int]]:
        stack = [(self, 0)]
        while stack:
            n, d = stack.pop()
            yield n, d
            stack.extend((c, d + 1) for c in n.children.values())


def report_trees(rs: RankSet, show_all: bool = False) -> dict[int, Node]:
    """Each rank's whole report tree (library frames folded as the report folds them)."""
    return {rank.rank: report_tree(rank.session, show_all) for rank in rs.ranks}


def spread_tree(rs: RankSet, trees: Mapping[int, Node]) -> SpreadNode:
    """The ranks' report trees (:func:`report_trees`) merged by node path."""
    root: SpreadNode | None = None
    for rank in rs.ranks:
        tree = trees[rank.rank]
        if root is None:
            root = SpreadNode(tree)
        stack = [(tree, root)]
        while stack:
            node, into = stack.pop()
            into.inclusive[rank.rank] = node.inclusive
            into.own[rank.rank] = node.metrics
            for c in node.children:
                k = _key(c)
                target = into.children.get(k)
                if target is None:
                    target = into.children[k] = SpreadNode(c)
                stack.append((c, target))
    return root if root is not None else SpreadNode(Node("root", "<root>"))


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
