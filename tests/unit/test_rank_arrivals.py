"""The wait from arrivals (dlpt.analysis.ranks.arrivals): collectives matched across ranks by
step and launch order, a rank's wait its kernel's duration beyond the shortest rank's, counted
where its GPU had nothing else to run; the session's columns, the summary's cut, the report."""

from __future__ import annotations

import copy
import random
import statistics
from typing import Any

import pytest

from dlpt.analysis.ranks.arrivals import (
    Arrivals,
    Kernel,
    RankCollectives,
    arrival_waits,
    epoch_waits,
    exposed_until,
    rank_collectives,
)
from dlpt.analysis.ranks.merge import RankTotals, rank_set
from dlpt.analysis.ranks.stragglers import Waits, find_stragglers, steady
from dlpt.analysis.ranks.summary import collective_budget, decode, encode, summarize
from dlpt.capture.native import gpu_collectives
from dlpt.errors import SessionFormatError
from dlpt.model.session import Session
from dlpt.views.ranks import ranks_view
from tests import rank_sessions as R
from tests.rank_sessions import render_text_of

MS = 1_000_000
ALL = b"\xff" * 16  # every sixteenth exposed
AR = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"


def _rank(*epochs: list[tuple[int, int, bytes]], name: str = AR, with_collectives: int | None = None) -> Any:
    """Epochs 0, 1, ...: each a list of (start, duration, exposed shares)."""
    out = {e: [Kernel(name, s, d, x) for s, d, x in ks] for e, ks in enumerate(epochs)}
    return RankCollectives.of(out, with_collectives)


def test_the_early_rank_waits_its_kernel_beyond_the_last_arrivals() -> None:
    # Rank 1 arrives 20 ms late: its all-reduce is the shortest (1 ms), rank 0's spins 21 ms.
    # The ranks' clocks differ by an hour: only durations cross ranks.
    early = _rank([(0, 21 * MS, ALL)], [(40 * MS, 21 * MS, ALL)])
    late = _rank([(3600_000 * MS, 1 * MS, ALL)], [(3600_040 * MS, 1 * MS, ALL)])
    a = arrival_waits({0: early, 1: late}, {0: 2, 1: 2})
    assert a is not None and (a.epochs, a.collectives) == (2, 1)
    assert a.per_rank == {0: pytest.approx(20 * MS), 1: 0.0}


def test_a_wait_beside_other_work_costs_only_its_exposed_part() -> None:
    # Rank 0's kernel (16 ms) ran beside compute for its first half; it waited its first 12 ms:
    # 8 ms of them covered, 4 ms exposed. Symmetric spinning (both 16 ms) is no wait at all.
    half = b"\x00" * 8 + b"\xff" * 8
    k = Kernel(AR, 0, 16 * MS, half)
    assert exposed_until(k, 12 * MS) == pytest.approx(4 * MS)
    assert exposed_until(k, 7.5 * MS) == 0.0 and exposed_until(k, 99 * MS) == pytest.approx(8 * MS)
    a = arrival_waits({0: _rank([(0, 16 * MS, half)]), 1: _rank([(0, 4 * MS, ALL)])}, {0: 1, 1: 1})
    assert a is not None and a.per_rank[0] == pytest.approx(4 * MS)
    same = arrival_waits({0: _rank([(0, 16 * MS, ALL)]), 1: _rank([(9, 16 * MS, ALL)])}, {0: 1, 1: 1})
    assert same is not None and same.per_rank == {0: 0.0, 1: 0.0}


def test_overlapping_collectives_of_one_rank_count_their_wait_once() -> None:
    # Two process groups: rank 0's kernels overlap and both waited from their starts to 20 ms.
    r0 = _rank([(0, 21 * MS, ALL), (1 * MS, 20 * MS, ALL)])
    r1 = _rank([(0, 1 * MS, ALL), (0, 1 * MS, ALL)])
    a = arrival_waits({0: r0, 1: r1}, {0: 1, 1: 1})
    assert a is not None and a.per_rank[0] == pytest.approx(20 * MS)


def test_only_epochs_every_rank_ran_alike_are_matched() -> None:
    r0 = _rank([(0, 5 * MS, ALL)], [(0, 9 * MS, ALL)])
    r1 = _rank([(0, 1 * MS, ALL)], [(0, 1 * MS, ALL)])
    assert epoch_waits({0: r0, 1: r1}) == {0: {0: 4 * MS, 1: 8 * MS}, 1: {0: 0.0, 1: 0.0}}
    gather = "ncclDevKernel_AllGather"
    other = RankCollectives.of({0: [Kernel(AR, 0, MS, ALL)], 1: [Kernel(gather, 0, MS, ALL)]})
    a = arrival_waits({0: r0, 1: other}, {0: 2, 1: 2})
    assert a is not None and a.epochs == 1 and a.per_rank[0] == pytest.approx(4 * MS)
    assert arrival_waits({0: r0, 1: r1}, {0: 2, 1: 2}).per_rank[0] == pytest.approx(6 * MS)  # type: ignore[union-attr]
    assert arrival_waits({0: r0, 1: RankCollectives.of({7: [Kernel(AR, 0, MS, ALL)]})}, {0: 2, 1: 2}) is None
    assert arrival_waits({0: r0}, {0: 2}) is None


def test_steps_without_collectives_scale_the_wait_per_step() -> None:
    # Gradient accumulation: collectives on 2 of 4 counted steps, 8 ms waited each time.
    r0 = _rank([(0, 9 * MS, ALL)], [(0, 9 * MS, ALL)])
    r1 = _rank([(0, 1 * MS, ALL)], [(0, 1 * MS, ALL)])
    a = arrival_waits({0: r0, 1: r1}, {0: 4, 1: 4})
    assert a is not None and a.per_rank[0] == pytest.approx(4 * MS)


def test_the_core_rows_become_columns_with_exposed_shares() -> None:
    full = "void ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
    raw = [(0, 5, 77, full, 100, 260, tuple([0] * 4 + [10] * 6 + [0] * 2 + [5] * 4))]
    g = gpu_collectives(raw, over_limit=3)
    assert g is not None and g["names"] == ["ncclDevKernel_AllReduce_Sum_f32_RING_LL"]
    assert (g["device"], g["epoch"], g["name"], g["start_ns"], g["dur_ns"]) == ([0], [5], [0], [100], [160])
    assert bytes.fromhex(g["exposed"][0]) == bytes([0] * 4 + [255] * 6 + [0] * 2 + [128] * 4)
    assert g["over_limit"] == 3 and gpu_collectives([]) is None
    rc = rank_collectives({"gpu_collectives": g})
    assert rc is not None and rc.epochs() == {5: (0, 1)} and rc.dur_ns.tolist() == [160]


def test_malformed_columns_are_refused_on_load_or_read_as_absent() -> None:
    s = R.with_collectives(R.ddp_gpu(0, 2), [(0, MS, 1.0)])
    d = copy.deepcopy(s.to_dict())
    d["meta"]["gpu_collectives"]["dur_ns"] = "long"
    with pytest.raises(SessionFormatError, match=r"meta\.gpu_collectives\.dur_ns must be a list"):
        Session.from_dict(d)
    empty = {k: [] for k in ("names", "device", "epoch", "name", "start_ns", "dur_ns", "exposed")}
    assert rank_collectives({"gpu_collectives": empty}) is None
    d = copy.deepcopy(s.to_dict())
    d["meta"]["gpu_collectives"]["dur_ns"].pop()  # columns of unequal lengths pass the types
    assert rank_collectives(Session.from_dict(d).meta) is None
    d["meta"]["gpu_collectives"]["dur_ns"].append(MS)
    d["meta"]["gpu_collectives"]["exposed"][0] = "zz" * 16
    assert rank_collectives(Session.from_dict(d).meta) is None
    x = d["meta"]["gpu_collectives"]["exposed"]
    x[0], x[1] = "ff" * 15, "ff" * 17  # the right length in all, rows misaligned
    assert rank_collectives(Session.from_dict(d).meta) is None


def _job(kernels: dict[int, list[tuple[int, int, float]]], world: int = 2, args: Any = None) -> Any:
    """Ranks of ``R.ddp_gpu(**args[rank])`` with ``kernels[rank]`` each step."""
    args = args or {}
    sessions = [R.with_collectives(R.ddp_gpu(r, world, **args.get(r, {})), kernels[r]) for r in range(world)]
    return ranks_view(rank_set([(f"run.rank{r}.json", s) for r, s in enumerate(sessions)]))


def test_symmetric_ranks_spinning_in_exposed_transfers_wait_for_nobody() -> None:
    # Every rank's all-reduce runs 6 ms exposed (moving data) and its host blocks on it: the
    # exposed communication reads as 6 ms of waiting on each; the arrivals read none.
    blocked = {r: {"comm_ns": 6 * MS, "exposed_ns": 6 * MS, "blocked_ns": 6 * MS} for r in range(4)}
    rep = _job({r: [(30 * MS, 6 * MS, 1.0)] for r in range(4)}, world=4, args=blocked)
    assert rep.waits.arrivals is not None and rep.waits.arrivals.epochs == R.STEPS
    assert max(rep.waits.per_rank.values()) == 0.0 and rep.stragglers == [] and rep.unnamed == []
    assert "last rank" in rep.wait_rule


def test_the_late_rank_is_named_with_the_wait_its_peers_lost() -> None:
    # Rank 1 sleeps 20 ms; rank 0's all-reduce spins 21 ms (exposed 80% of it: compute beside
    # the first fifth), rank 1's takes 1 ms. Rank 0's host blocked 22 ms per step.
    wait = {0: {"comm_ns": 21 * MS, "exposed_ns": 21 * MS, "blocked_ns": 22 * MS}, 1: {"sleep_ns": 20 * MS}}
    kernels = {0: [(30 * MS, 21 * MS, 0.8)], 1: [(10 * MS, 1 * MS, 1.0)]}
    rep = _job(kernels, args=wait)
    assert rep.waits.per_rank[0] == pytest.approx(16 * MS, rel=0.01)  # 80% of 20 ms
    assert rep.waits.per_rank[1] == 0.0
    assert [s.rank for s in rep.stragglers] == [1]
    assert rep.stragglers[0].waited_ns == pytest.approx(16 * MS, rel=0.01)
    assert [(c.node.line, c.metric.name) for c in rep.stragglers[0].causes] == [(33, "host")]
    # How steady that wait is, step by step, beside it: rank 0's GPU waited in each step.
    assert rep.stragglers[0].steps_text() == f"in {R.STEPS} of {R.STEPS} steps"
    assert f"waited 16.00ms per step for it (in {R.STEPS} of {R.STEPS} steps)" in render_text_of(rep)


def test_without_every_ranks_kernels_the_wait_is_exposed_communication() -> None:
    sessions = [R.with_collectives(R.ddp_gpu(0, 2, exposed_ns=5 * MS, blocked_ns=9 * MS), [(0, MS, 1.0)]),
                R.ddp_gpu(1, 2, exposed_ns=MS)]  # fmt: skip
    rep = ranks_view(rank_set([(f"r{r}.json", s) for r, s in enumerate(sessions)]))
    assert rep.waits.arrivals is None and rep.waits.per_rank[0] == pytest.approx(5 * MS)
    assert "communication alone" in rep.wait_rule


def test_a_summary_sends_the_last_whole_steps_and_how_many_ran_collectives() -> None:
    s = R.with_collectives(R.ddp_gpu(0, 2), [(0, MS, 1.0), (MS, MS, 1.0), (2 * MS, MS, 1.0)])
    g = summarize(s, max_collectives=7).meta["gpu_collectives"]
    assert g["epoch"] == [5, 5, 5, 6, 6, 6] and g["epochs"] == R.STEPS  # never half a step
    assert len(g["exposed"]) == 6 and g["names"] == [AR]
    assert summarize(s).meta["gpu_collectives"] == s.meta["gpu_collectives"]  # under the budget
    back = decode(encode(s, max_collectives=4), "rank 0").session
    rc = rank_collectives(back.meta)
    assert rc is not None and list(rc.epochs()) == [6] and rc.with_collectives == R.STEPS
    # Not one whole step fits: the summary goes without, and rank 0 falls back.
    assert "gpu_collectives" not in summarize(s, max_collectives=2).meta
    assert (collective_budget(1), collective_budget(512), collective_budget(1024)) == (20_000, 488, 256)


def _steady_job(lag: list[list[float]], waits: dict[int, float], step_ms: float = 220.0) -> list[Any]:
    """find_stragglers over 4 ranks of ``step_ms`` steps: ``lag[e][r]`` is rank r's GPU wait
    (ms) in step e from arrivals, ``waits`` each rank's wait per step (ms)."""
    by_epoch = {r: {e: lag[e][r] * MS for e in range(len(lag))} for r in range(4)}
    arrivals = Arrivals({r: sum(v.values()) / len(lag) for r, v in by_epoch.items()}, len(lag), 26, by_epoch)
    w = Waits({r: v * MS for r, v in waits.items()}, gpu=True, arrivals=arrivals)
    totals = {r: RankTotals(r, len(lag), step_ms * MS, 0, 0, 0, 0, 0, True) for r in range(4)}
    return find_stragglers(w, totals)


def test_a_rank_the_others_wait_for_in_every_step_is_a_candidate_below_a_tenth_of_the_step() -> None:
    # A GPU-bound FSDP2 job of 220 ms steps (4 H100s): rank 1 sleeps 20 ms before each forward;
    # the others wait ~21 ms for it in each of 19 steps: 9.5% of the step.
    lag = [[21.0 + (e % 3) * 0.3, 1.0, 21.5, 22.0 - (e % 2) * 0.4] for e in range(19)]
    (s,) = _steady_job(lag, {0: 21.9, 1: 1.1, 2: 21.8, 3: 22.4})
    assert s.rank == 1 and s.waited_ns == pytest.approx(20.8 * MS)
    assert s.lead is not None and (s.lead.steps, s.lead.waited_in) == (19, 19) and steady(s)
    assert s.floor_ns == pytest.approx(0.02 * 220 * MS) and s.steps_text() == "in 19 of 19 steps"
    # Only in 17 of 19 steps (a rank last by chance now and then): a tenth of the step, as before.
    for e in (4, 11):
        lag[e] = [1.0, 23.0, 21.5, 22.0]
    assert _steady_job(lag, {0: 21.9, 1: 1.1, 2: 21.8, 3: 22.4}) == []
    # Too few steps to tell.
    assert _steady_job([[21.0, 1.0, 21.5, 22.0]] * 7, {0: 21.9, 1: 1.1, 2: 21.8, 3: 22.4}) == []


def test_a_steady_gpu_wait_the_hosts_hid_does_not_lower_the_floor() -> None:
    # Host-bound ranks: the others' GPUs waited 38 ms for rank 1's spinning GPU in every step,
    # but their hosts set the pace: their waits (the smaller part) exceed rank 1's by 8 ms only,
    # less than half of what the arrivals say. A tenth of the step is the floor: no candidate.
    lag = [[39.0, 1.0, 39.5, 40.0] for _ in range(29)]
    assert _steady_job(lag, {0: 10.0, 1: 2.0, 2: 10.4, 3: 9.6}, step_ms=100.0) == []
    # The same ranks, their waits as the arrivals say: named below a tenth of a 400 ms step.
    assert [s.rank for s in _steady_job(lag, {0: 38.0, 1: 1.0, 2: 38.4, 3: 39.0}, step_ms=400.0)] == [1]


def test_every_ranks_lead_is_the_median_of_the_others_beyond_its_own_step_by_step() -> None:
    # Against the definition, ties included, on 2 to 9 ranks (odd and even counts of others).
    rng = random.Random(7)
    for n in range(2, 10):
        by_epoch = {r: {e: float(rng.choice([1, 2, 3, rng.random()])) for e in range(9)} for r in range(n)}
        a = Arrivals({}, 9, 1, by_epoch)
        for r in range(n):
            others = [[by_epoch[o][e] for o in by_epoch if o != r] for e in range(9)]
            beyond = [statistics.median(others[e]) - by_epoch[r][e] for e in range(9)]
            lead = a.lead(r)
            assert lead is not None and (lead.steps, lead.waited_in) == (9, sum(b > 0 for b in beyond))
            assert lead.median_ns == pytest.approx(statistics.median(beyond))
