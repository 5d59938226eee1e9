"""The report across ranks: ranks lined up (missing ones named), totals per step, load imbalance,
the merged tree's min / median / max, each line's spread, and stragglers named from their
collectives (GPU: the shortest collective kernel; CPU: the least waiting)."""

from __future__ import annotations

from typing import Any

import pytest

from dlpt.analysis.ranks.merge import imbalance, line_spread, rank_set, report_trees, spread_tree, totals
from dlpt.analysis.ranks.stragglers import collective_sites, find_stragglers
from dlpt.errors import UsageError
from dlpt.model.processors import METRICS
from dlpt.model.session import Session
from dlpt.renderers.terminal.ranks import render_ranks
from tests import rank_sessions as R

GPU = METRICS["gpu"]


def _ranks(sessions: list[Session]) -> Any:
    return rank_set([(f"run.rank{i}.json", s) for i, s in enumerate(sessions)])


def test_ranks_sorted_and_missing_ones_named() -> None:
    rs = rank_set(
        [("b.json", R.ddp_gpu(2)), ("a.json", R.ddp_gpu(0))], {1: "no session written at run.rank1.json"}
    )
    assert [r.rank for r in rs.ranks] == [0, 2] and rs.world_size == 4
    assert rs.missing == {1: "no session written at run.rank1.json", 3: "no session given"}


def test_two_sessions_of_one_rank_are_refused() -> None:
    with pytest.raises(UsageError, match="both rank 1"):
        rank_set([("x.json", R.ddp_gpu(1)), ("y.json", R.ddp_gpu(1))])


def test_sessions_without_ranks_are_numbered_in_order() -> None:
    a, b = R.ddp_gpu(0), R.ddp_gpu(1)
    del a.meta["distributed"], b.meta["distributed"]
    rs = rank_set([("a.json", a), ("b.json", b)])
    assert [r.path for r in rs.ranks] == ["a.json", "b.json"] and rs.notes


def test_totals_per_step_and_load_imbalance() -> None:
    rs = _ranks([R.ddp_gpu(0, fc2_ns=6_000_000), R.ddp_gpu(1, fc2_ns=14_000_000)])
    t = {r.rank: totals(r, gpu=True) for r in rs.ranks}
    assert t[0].compute_ns == pytest.approx(27_000_000) and t[1].compute_ns == pytest.approx(35_000_000)
    assert t[0].communication_ns == pytest.approx(2_000_000) and t[0].exposed_ns == pytest.approx(1_000_000)
    imb = imbalance({r: x.compute_ns for r, x in t.items()})
    assert imb is not None and imb[1] == 1 and imb[0] == pytest.approx((35 - 31) / 31)
    assert imbalance({0: 1.0}) is None


def test_merged_tree_holds_every_rank_at_every_node() -> None:
    rs = _ranks([R.ddp_gpu(r, fc2_ns=ns) for r, ns in enumerate((6_000_000, 8_000_000, 7_000_000))])
    trees = report_trees(rs)
    root = spread_tree(rs, trees)
    ranks = rs.by_rank()
    main = next(iter(root.children.values()))
    fc2 = next(c for c in main.children.values() if c.node.line == 11)
    v = fc2.values(GPU, ranks)
    # fc2's line: its forward GEMM (fc2_ns) + backward 8 ms + the 2 ms all-reduce, per step
    assert v == {0: pytest.approx(16e6), 1: pytest.approx(18e6), 2: pytest.approx(17e6)}
    lines = {ls.node.line: ls.values(GPU, ranks) for ls in line_spread(rs, trees)}
    assert lines[11][1] == pytest.approx(18e6)


def _straggling(world: int, slow: int, wait_ns: int) -> list[Session]:
    # The straggler's all-reduce kernel is the pure transfer; the others' spin wait_ns longer.
    return [R.ddp_gpu(r, world, comm_ns=1_000_000 + (0 if r == slow else wait_ns)) for r in range(world)]


def test_the_rank_with_the_shortest_collective_is_the_straggler() -> None:
    rs = _ranks(_straggling(4, slow=2, wait_ns=8_000_000))
    per_rank = {r.rank: totals(r, gpu=True) for r in rs.ranks}
    sites = collective_sites(rs, spread_tree(rs, report_trees(rs)), gpu=True)
    assert len(sites) == 1 and sites[0].last == 2
    found = find_stragglers(rs, sites, per_rank)
    assert [s.rank for s in found] == [2]
    assert found[0].waited_ns == pytest.approx(8_000_000)


def test_equal_ranks_have_no_straggler() -> None:
    rs = _ranks(_straggling(4, slow=0, wait_ns=50_000))  # 0.1% of a 40 ms step: jitter
    per_rank = {r.rank: totals(r, gpu=True) for r in rs.ranks}
    sites = collective_sites(rs, spread_tree(rs, report_trees(rs)), gpu=True)
    assert find_stragglers(rs, sites, per_rank) == []


def test_cpu_straggler_from_waiting() -> None:
    rs = _ranks([R.gloo_cpu(0, wait_ns=5_000_000), R.gloo_cpu(1, wait_ns=10_000)])
    per_rank = {r.rank: totals(r, gpu=False) for r in rs.ranks}
    sites = collective_sites(rs, spread_tree(rs, report_trees(rs)), gpu=False)
    found = find_stragglers(rs, sites, per_rank)
    assert [s.rank for s in found] == [1] and found[0].waited_ns == pytest.approx(4_990_000)


def test_report_across_ranks_golden(h: Any) -> None:
    sessions = _straggling(4, slow=2, wait_ns=8_000_000)
    rs = rank_set(
        [(f"run.rank{r}.json", s) for r, s in enumerate(sessions) if r != 3], {3: "no session written"}
    )
    text = h.render_text(render_ranks(rs, threshold=0.0), width=120)
    h.check_golden("ranks_across", text)
    assert "straggler: rank 2" in text and "rank 3 missing: no session written" in text
    assert "3 of 4 ranks" in text and "load imbalance" in text
