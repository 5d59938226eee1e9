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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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
_COLUMNS = ("device", "epoch", "name", "start_ns", "dur_ns", "exposed")


@dataclass(frozen=True)
class Kernel:
    name: str
    start_ns: int  # this rank's clock: orders its own kernels only
    dur_ns: int
    exposed: bytes  # each sixteenth's share with no other work running, 0-255


@dataclass
class RankCollectives:
    """One rank's collective kernels of counted steps, by epoch, in launch order."""

    epochs: dict[int, list[Kernel]]
    with_collectives: int  # epochs that ran any (a summary may send only the last of them)


@dataclass
class Arrivals:
    """Each rank's wait per step from arrivals, and what it rests on."""

    per_rank: dict[int, float]  # ns per step
    epochs: int  # epochs matched on every rank
    collectives: int  # collectives per matched epoch, on average


def rank_collectives(meta: Mapping[str, Any]) -> RankCollectives | None:
    """``meta.gpu_collectives`` read into epochs; None when absent or not of one shape (a
    session validated on load has the columns' types, not their lengths)."""
    g = meta.get("gpu_collectives")
    if not isinstance(g, dict):
        return None
    cols = [c for c in (g.get(k) for k in _COLUMNS) if isinstance(c, list)]
    names = g.get("names")
    if not isinstance(names, list) or len(cols) != len(_COLUMNS):
        return None
    n = len(cols[0])
    if any(len(c) != n for c in cols):
        return None
    epochs: dict[int, list[Kernel]] = {}
    for _dev, epoch, name, start, dur, exposed in zip(*cols, strict=True):
        try:
            shares = bytes.fromhex(exposed)
        except (TypeError, ValueError):
            return None
        if not (0 <= name < len(names)) or len(shares) != BINS:
            return None
        epochs.setdefault(epoch, []).append(Kernel(names[name], start, dur, shares))
    with_collectives = g.get("epochs")
    return RankCollectives(epochs, with_collectives if isinstance(with_collectives, int) else len(epochs))


def exposed_until(k: Kernel, t: float) -> float:
    """The exposed time (ns) in the first ``t`` ns of ``k``."""
    t = min(t, k.dur_ns)
    total = 0.0
    for i in range(BINS):
        a = k.dur_ns * i // BINS
        if a >= t:
            break
        b = k.dur_ns * (i + 1) // BINS
        total += k.exposed[i] / 255 * (min(b, t) - a)
    return total


def _matched(ranks: Mapping[int, RankCollectives]) -> list[int]:
    """The epochs every rank has, with the same kernels in the same order."""
    common = set.intersection(*(set(rc.epochs) for rc in ranks.values()))
    out = []
    for e in sorted(common):
        names = {tuple(k.name for k in rc.epochs[e]) for rc in ranks.values()}
        if len(names) == 1:
            out.append(e)
    return out


def _cost(kernels: list[Kernel], shortest: list[int]) -> float:
    """One rank's exposed wait in one epoch: its kernels' waits, overlaps counted once."""
    cost, until = 0.0, None
    for k, floor in sorted(zip(kernels, shortest, strict=True), key=lambda kf: kf[0].start_ns):
        w = k.dur_ns - floor
        if w <= 0:
            continue
        seen = 0 if until is None or until <= k.start_ns else min(w, until - k.start_ns)
        cost += exposed_until(k, w) - exposed_until(k, seen)
        until = k.start_ns + w if until is None else max(until, k.start_ns + w)
    return cost


def epoch_waits(ranks: Mapping[int, RankCollectives]) -> dict[int, dict[int, float]]:
    """Each rank's exposed wait (ns) in each matched epoch ({} with fewer than two ranks)."""
    if len(ranks) < 2:
        return {}
    out: dict[int, dict[int, float]] = {r: {} for r in ranks}
    for e in _matched(ranks):
        rows = {r: rc.epochs[e] for r, rc in ranks.items()}
        count = len(next(iter(rows.values())))
        shortest = [min(ks[i].dur_ns for ks in rows.values()) for i in range(count)]
        for r, ks in rows.items():
            out[r][e] = _cost(ks, shortest)
    return out


def arrival_waits(ranks: Mapping[int, RankCollectives], steps: Mapping[int, int]) -> Arrivals | None:
    """Each rank's wait per step from its collectives' arrivals (see the module's doc); None
    with fewer than two ranks or no epoch matched on all of them. ``steps``: each rank's
    counted steps."""
    by_epoch = epoch_waits(ranks)
    matched = sorted(next(iter(by_epoch.values()), {}))
    if not matched:
        return None
    waited = {r: sum(w.values()) for r, w in by_epoch.items()}
    kernels = sum(len(next(iter(ranks.values())).epochs[e]) for e in matched)
    per_step = {}
    for r, rc in ranks.items():
        n = steps.get(r, 0)
        share = min(1.0, rc.with_collectives / n) if n > 0 else 1.0
        per_step[r] = waited[r] / len(matched) * share
    return Arrivals(per_step, len(matched), round(kernels / len(matched)))
