"""The wait from arrivals: how long each rank's collectives waited for the last rank to start the
same collective, in the part of it where its GPU had nothing else to run.

**Matching.** NCCL has every rank of a communicator issue its collectives in the same order, and
dlpt files each kernel under the step epoch of its launch (the same number on every rank for the
same step: csrc/cct/epochs.h), so the k-th collective kernel of epoch e on one rank is the k-th
on every other. An epoch counts only where every rank has it with the same kernel names in the
same order; others (ranks in different process groups, a rank that skipped a step, epochs a
rank's summary left out) are left out, and the result says how many counted.

**Wait.** A collective ends on every rank at about the same time, once the last rank has arrived
and the data has moved; a rank that arrived early spun from its start until then. So the time
rank r waited in collective k is its kernel's duration less the shortest duration of k on any
rank (the last to arrive, which waited for nobody). Durations need no clock shared between
hosts; a rank's own timestamps are used only to order its own kernels.

**What it cost.** A rank loses that time only where its GPU had nothing else to run: FSDP2's
all-gathers, issued early on their own stream, spin beside the compute they were prefetched for.
Each kernel carries its exposed share per sixteenth of its duration (``meta.gpu_collectives``,
filled by the native core from this rank's other work); the wait is the kernel's first ``w`` ns,
so its cost is that profile read up to ``w`` (linearly inside a sixteenth). Where a rank's
kernels overlap (several process groups), time counted for an earlier one is not counted again.

**Per step**: the matched epochs' cost averaged over them, times the share of the rank's counted
steps that ran collectives at all (gradient accumulation runs them every Nth step).

**Scale.** Rank 0 of a 1,024-rank job holds ~500 kernels of every rank (a summary sends its last
steps only, :func:`dlpt.analysis.ranks.summary.collective_budget`): everything past parsing is
tensor arithmetic over a [ranks, kernels] matrix, in blocks of ranks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from dlpt.model.meta import Meta, typed

__all__ = [
    "BINS",
    "Kernel",
    "RankCollectives",
    "Arrivals",
    "rank_collectives",
    "arrival_waits",
    "exposed_until",
    "epoch_waits",
]

BINS = 16  # csrc/cct/collectives.h kCollectiveBins
_RANK_BLOCK = 64  # ranks whose [kernels, BINS] exposure profiles are read at once
_EPOCH_SPAN = 1 << 42  # ns (73 min): orders kernels by (epoch, start) in one integer


@dataclass(frozen=True)
class Kernel:
    """One collective kernel, for building a rank's table by hand (tests, tools)."""

    name: str
    start_ns: int  # this rank's clock: orders its own kernels only
    dur_ns: int
    exposed: bytes  # each sixteenth's share with no other work running, 0-255


@dataclass
class RankCollectives:
    """One rank's collective kernels of counted steps, by epoch then launch order: columns."""

    epoch: torch.Tensor  # int64 [n], non-decreasing
    names: list[str]
    name: torch.Tensor  # int64 [n], indexes ``names``
    start_ns: torch.Tensor  # int64 [n]
    dur_ns: torch.Tensor  # int64 [n]
    exposed: torch.Tensor  # uint8 [n, BINS]
    with_collectives: int  # epochs that ran any (a summary may send only the last of them)

    @classmethod
    def of(cls, epochs: Mapping[int, list[Kernel]], with_collectives: int | None = None) -> RankCollectives:
        """A table from kernels by epoch (each epoch's in launch order)."""
        rows = [(e, k) for e in sorted(epochs) for k in epochs[e]]
        names = sorted({k.name for _, k in rows})
        return cls(
            torch.tensor([e for e, _ in rows], dtype=torch.int64),
            names,
            torch.tensor([names.index(k.name) for _, k in rows], dtype=torch.int64),
            torch.tensor([k.start_ns for _, k in rows], dtype=torch.int64),
            torch.tensor([k.dur_ns for _, k in rows], dtype=torch.int64),
            torch.tensor([list(k.exposed) for _, k in rows], dtype=torch.uint8).reshape(len(rows), BINS),
            len(epochs) if with_collectives is None else with_collectives,
        )

    def epochs(self) -> dict[int, tuple[int, int]]:
        """Each epoch's rows: [first, end)."""
        values, counts = torch.unique_consecutive(self.epoch, return_counts=True)
        ends = torch.cumsum(counts, 0).tolist()
        pairs = zip(values.tolist(), counts.tolist(), ends, strict=True)
        return {int(e): (end - int(c), end) for e, c, end in pairs}


@dataclass(frozen=True)
class Lead:
    """How steadily the other ranks' GPUs waited for one rank, step by step."""

    steps: int  # steps matched on every rank
    waited_in: int  # ... in which the others' median wait exceeded this rank's
    median_ns: float  # the others' median wait beyond this rank's, median over the steps


@dataclass
class Arrivals:
    """Each rank's wait per step from arrivals, and what it rests on."""

    per_rank: dict[int, float]  # ns per step
    epochs: int  # epochs matched on every rank
    collectives: int  # collectives per matched epoch, on average
    by_epoch: dict[int, dict[int, float]] = field(default_factory=dict)  # epoch_waits()
    _leads: dict[int, Lead] | None = field(default=None, init=False, repr=False, compare=False)

    def lead(self, rank: int) -> Lead | None:
        """Step by step, how much longer the other ranks' GPUs waited than ``rank``'s (None
        without steps, or for a rank not matched)."""
        if self._leads is None:
            self._leads = _leads(self.by_epoch)
        return self._leads.get(rank)


def _leads(by_epoch: Mapping[int, Mapping[int, float]]) -> dict[int, Lead]:
    """Every rank's Lead at once: per step, the median of the other ranks' waits (from the
    step's sorted waits, this rank's own left out) minus its own. O(ranks log ranks) a step."""
    ranks = list(by_epoch)
    if len(ranks) < 2:
        return {}
    waits = torch.tensor([list(by_epoch[r].values()) for r in ranks], dtype=torch.float64)  # [R, E]
    if waits.numel() == 0:
        return {}
    n, steps = waits.shape
    ordered, order = waits.sort(dim=0)
    pos = torch.empty_like(order).scatter_(0, order, torch.arange(n).unsqueeze(1).expand(n, steps))

    def others_at(j: int) -> torch.Tensor:
        """The j-th smallest of the other ranks' waits, for each rank and step."""
        return ordered.gather(0, torch.where(pos > j, j, j + 1))

    m = n - 1  # the other ranks
    median = others_at(m // 2) if m % 2 else (others_at(m // 2 - 1) + others_at(m // 2)) / 2
    beyond = median - waits
    waited_in = (beyond > 0).sum(dim=1).tolist()
    typical = beyond.quantile(0.5, dim=1).tolist()
    return {r: Lead(steps, int(waited_in[i]), float(typical[i])) for i, r in enumerate(ranks)}


def _int_column(v: list[Any]) -> torch.Tensor | None:
    try:
        return torch.tensor(v, dtype=torch.int64)
    except (TypeError, ValueError, OverflowError, RuntimeError):
        return None


def rank_collectives(meta: Meta | Mapping[str, Any]) -> RankCollectives | None:
    """``meta.gpu_collectives`` read into columns; None when absent or not of one shape (a
    session validated on load has the columns' types, not their lengths)."""
    g = typed(meta).gpu_collectives
    if g is None:
        return None
    names, epoch, name, start, dur, exposed = g.names, g.epoch, g.name, g.start_ns, g.dur_ns, g.exposed
    if len({len(c) for c in (g.device, epoch, name, start, dur, exposed)}) != 1:
        return None
    if not dur:
        return None
    ints = [_int_column(c) for c in (epoch, name, start, dur)]
    if not all(len(x) == 2 * BINS for x in exposed):
        return None
    try:
        shares = bytes.fromhex("".join(exposed))
    except (TypeError, ValueError):
        return None
    if any(t is None for t in ints) or len(shares) != BINS * len(exposed):
        return None
    e, n, s, d = (t for t in ints if t is not None)
    if len(n) and (int(n.min()) < 0 or int(n.max()) >= len(names)):
        return None
    if len(e) > 1 and bool((e[1:] < e[:-1]).any()):  # by epoch, as the core writes them
        order = torch.argsort(e, stable=True)
        e, n, s, d = e[order], n[order], s[order], d[order]
        x = torch.frombuffer(bytearray(shares), dtype=torch.uint8).reshape(-1, BINS)[order]
    else:
        x = torch.frombuffer(bytearray(shares), dtype=torch.uint8).reshape(-1, BINS)
    with_collectives = g.epochs
    if with_collectives is None:
        with_collectives = len(torch.unique(e)) if len(e) else 0
    return RankCollectives(e, list(names), n, s, d.clamp(min=0), x, with_collectives)


def _exposed_until(dur: torch.Tensor, exposed: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """The exposed time (ns) in the first ``t`` ns of each kernel: ``dur``, ``t`` [...],
    ``exposed`` [..., BINS] (linear inside a sixteenth)."""
    i = torch.arange(BINS + 1, dtype=torch.int64)
    edges = dur.unsqueeze(-1) * i // BINS  # [..., BINS + 1]
    upto = torch.minimum(edges[..., 1:], t.unsqueeze(-1).clamp(min=0))
    part = (upto - edges[..., :-1]).clamp(min=0).to(torch.float64)
    return (part * exposed.to(torch.float64)).sum(-1) / 255


def exposed_until(k: Kernel, t: float) -> float:
    """The exposed time (ns) in the first ``t`` ns of ``k``."""
    x = torch.tensor([list(k.exposed)], dtype=torch.uint8)
    return float(_exposed_until(torch.tensor([k.dur_ns]), x, torch.tensor([int(t)]))[0])


def _matched(ranks: Mapping[int, RankCollectives]) -> list[int]:
    """The epochs every rank has, with the same kernels in the same order."""
    spans = {r: rc.epochs() for r, rc in ranks.items()}
    common = set.intersection(*(set(s) for s in spans.values()))
    signatures: dict[int, set[tuple[str, ...]]] = {e: set() for e in common}
    for r, rc in ranks.items():
        ids = rc.name.tolist()
        for e in common:
            lo, hi = spans[r][e]
            signatures[e].add(tuple(rc.names[i] for i in ids[lo:hi]))
    return sorted(e for e, sig in signatures.items() if len(sig) == 1)


def _costs(rows: dict[int, RankCollectives], matched: torch.Tensor) -> dict[int, torch.Tensor]:
    """Each rank's exposed wait per matched epoch (float64 [epochs])."""
    order = list(rows)
    masks = {r: torch.isin(rows[r].epoch, matched) for r in order}
    dur = torch.stack([rows[r].dur_ns[masks[r]] for r in order])  # [R, K], aligned by launch order
    shortest = dur.min(0).values
    epoch = torch.searchsorted(matched, rows[order[0]].epoch[masks[order[0]]])  # [K], 0..E-1
    out: dict[int, torch.Tensor] = {}
    for lo in range(0, len(order), _RANK_BLOCK):
        block = order[lo : lo + _RANK_BLOCK]
        d = dur[lo : lo + len(block)]
        s = torch.stack([rows[r].start_ns[masks[r]] for r in block])
        x = torch.stack([rows[r].exposed[masks[r]] for r in block])
        w = d - shortest
        # Each rank's kernels by start within each epoch; where one's wait began before an
        # earlier one's ended, that part counts once (an exclusive running maximum of the ends).
        ep = epoch.expand_as(s)
        base = torch.full((len(block), len(matched)), torch.iinfo(torch.int64).max, dtype=torch.int64)
        base = base.scatter_reduce(1, ep, s, reduce="amin")
        rel = (s - base.gather(1, ep)).clamp(0, _EPOCH_SPAN - 1)
        by_start = torch.argsort(ep * _EPOCH_SPAN + rel, dim=1, stable=True)
        rel, w, d = rel.gather(1, by_start), w.gather(1, by_start), d.gather(1, by_start)
        x = x.gather(1, by_start.unsqueeze(-1).expand_as(x))
        ends = ep * _EPOCH_SPAN + (rel + w).clamp(max=_EPOCH_SPAN - 1)  # ep is sorted alike
        before = torch.cat([torch.full_like(ends[:, :1], -1), torch.cummax(ends, 1).values[:, :-1]], 1)
        seen = (before - ep * _EPOCH_SPAN - rel).clamp(min=0)
        seen = torch.minimum(seen, w)
        cost = _exposed_until(d, x, w) - _exposed_until(d, x, seen)
        per_epoch = torch.zeros((len(block), len(matched)), dtype=torch.float64).scatter_add(1, ep, cost)
        for i, r in enumerate(block):
            out[r] = per_epoch[i]
    return out


def epoch_waits(ranks: Mapping[int, RankCollectives]) -> dict[int, dict[int, float]]:
    """Each rank's exposed wait (ns) in each matched epoch ({} with fewer than two ranks or no
    epoch matched)."""
    if len(ranks) < 2:
        return {}
    matched = _matched(ranks)
    if not matched:
        return {}
    costs = _costs(dict(ranks), torch.tensor(matched, dtype=torch.int64))
    return {r: dict(zip(matched, c.tolist(), strict=True)) for r, c in costs.items()}


def arrival_waits(ranks: Mapping[int, RankCollectives], steps: Mapping[int, int]) -> Arrivals | None:
    """Each rank's wait per step from its collectives' arrivals (see the module's doc); None
    with fewer than two ranks or no epoch matched on all of them. ``steps``: each rank's
    counted steps."""
    by_epoch = epoch_waits(ranks)
    if not by_epoch:
        return None
    matched = torch.tensor(list(next(iter(by_epoch.values()))), dtype=torch.int64)
    epochs = len(matched)
    kernels = int(torch.isin(next(iter(ranks.values())).epoch, matched).sum())  # alike on every rank
    per_step = {}
    for r, rc in ranks.items():
        n = steps.get(r, 0)
        share = min(1.0, rc.with_collectives / n) if n > 0 else 1.0
        per_step[r] = sum(by_epoch[r].values()) / epochs * share
    return Arrivals(per_step, epochs, round(kernels / epochs), by_epoch)
