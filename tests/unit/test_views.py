"""The views (dlpt.views): each resolves its metric once and hands out shaped trees and rows, the
same ones the renderers format (the golden renders hold what they look like)."""

from __future__ import annotations

import itertools
import statistics
from typing import Any

import pytest

from dlpt.analysis.diff import SessionDiff
from dlpt.errors import UsageError
from dlpt.model.metrics import METRICS
from dlpt.model.session import Session
from dlpt.model.tree import walk
from dlpt.trees.processors import limit_depth, mark_lines
from dlpt.views.diff import DiffView, diff_view
from dlpt.views.ranks import RanksView, ranks_view
from dlpt.views.run import build_view
from tests import diff_cases as D
from tests import rank_sessions as R
from tests import sessions as S


def _names(root: Any) -> list[tuple[str, int]]:
    return [(n.name, d) for n, d in walk(root)]


# -- a run ---------------------------------------------------------------------------------------


def test_a_run_view_chooses_the_metric_in_one_place() -> None:
    gpu = build_view(Session.from_dict(S.gpt_eager()))
    assert gpu.metric() is METRICS["gpu"] and gpu.metric("cpu") is METRICS["cpu"]
    assert gpu.metric(METRICS["calls"]) is METRICS["calls"]
    cpu_only = Session.from_dict(S.gpt_eager())
    for n in cpu_only.nodes:
        n["m"] = {k: v for k, v in n["m"].items() if k not in ("gpu_ns", "copy_ns", "memset_ns")}
    assert build_view(cpu_only).metric() is METRICS["cpu"]
    with pytest.raises(UsageError, match="unknown metric 'nope'"):
        gpu.metric("nope")


def test_the_shaped_trees_are_the_folding_pruned_and_cut() -> None:
    sv = build_view(Session.from_dict(S.gpt_eager()))
    m = sv.metric()
    expected = limit_depth(mark_lines(sv.shown_tree(m, 0.05), sv.markers), 3)
    assert _names(sv.top_down(m, 0.05, 3)) == _names(expected)
    assert max(d for _, d in _names(sv.top_down(m, 0.0, 2))) == 2
    assert m(sv.bottom_up(m, 0.0, None).inclusive) == m(sv.whole.inclusive)  # every self value, inverted
    assert sv.outside_tree(None, 0.0, None) is None  # no work outside counted steps


def test_the_outside_tree_has_its_own_default_metric() -> None:
    d = S.gpt_eager()
    for n in d["nodes"]:
        if n["kind"] == "op" and n["m"].get("cpu_ns"):
            n["o"] = {"cpu_ns": n["m"]["cpu_ns"] // 3, "calls": 1}
    sv = build_view(Session.from_dict(d))
    shaped = sv.outside_tree(None, 0.0, None)
    assert shaped is not None and shaped[1] is METRICS["cpu"]  # no GPU work outside: CPU op time
    assert sv.outside_tree("gpu", 0.0, None) is None  # asked for GPU time: there is none outside


# -- a job's ranks -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ranks() -> RanksView:
    from dlpt.views.ranks import rank_set

    return ranks_view(rank_set([(f"run.rank{r}.json", R.ddp_gpu(r, 2)) for r in range(2)]))


def test_the_merged_trees_rows_come_in_pre_order(ranks: RanksView) -> None:
    rows = ranks.tree_rows(0.0, 100)
    assert rows[0].depth == 0 and rows[0].node.kind == "root"
    for before, row in itertools.pairwise(rows):
        assert row.depth <= before.depth + 1  # a child follows its parent
    assert [r.depth for r in ranks.tree_rows(0.0, 1)] == [0] + [1] * (len(ranks.tree_rows(0.0, 1)) - 1)
    lo, mid, hi, slowest = rows[0].across
    assert lo <= mid <= hi and (slowest is None) == (lo == hi)


def test_the_lines_are_cut_at_the_threshold_and_counted(ranks: RanksView) -> None:
    rows, kept = ranks.line_rows(0.0, 2)
    assert len(rows) == min(2, kept) and kept >= len(rows)
    assert ranks.line_rows(0.999999, 25)[1] <= kept
    assert ranks.metric is METRICS["gpu"] and ranks.metrics[0] is METRICS["gpu"]


def test_a_rank_is_named_and_its_site_median_taken(ranks: RanksView) -> None:
    assert ranks.where(ranks.rs.ranks[0]).startswith("rank 0/2")
    assert ranks.sites
    for site in ranks.sites:
        others = [v for r, v in site.times.items() if r != 0]
        assert ranks.others_median(site, 0) == (statistics.median(others) if others else 0.0)


# -- a comparison --------------------------------------------------------------------------------


def test_a_diff_view_judges_each_metric_once(monkeypatch: pytest.MonkeyPatch) -> None:
    costs = [200.0, 120.0, 80.0, 40.0, 20.0]
    a, b = D.session(1, costs), D.session(2, costs, heavier={0: 2.0})
    calls: list[str] = []
    real = SessionDiff.judge

    def judge(self: SessionDiff, metric: Any) -> Any:
        calls.append(metric.name)
        return real(self, metric)

    monkeypatch.setattr(SessionDiff, "judge", judge)
    view = diff_view(a, b, "a.json", "b.json")
    assert view.metric is METRICS["gpu"]
    assert view.shift is not None and view.changes and view.judge(METRICS["gpu"])[1] is view.changes
    assert calls == ["gpu"]  # the shift, the changes and a page's metric: judged once
    shown, hidden = view.shown(0.0, 2)
    assert len(shown) == 2 and hidden == len(costs) - 2
    assert view.changes[shown[0].key].significant  # the heavier line: a significant change first


def test_a_diff_view_takes_the_metric_asked_for() -> None:
    a = D.session(1, [100.0, 50.0])
    view = DiffView(diff_view(a, a).diff, METRICS["kernels"])
    assert view.metric is METRICS["kernels"] and view.total("a") == view.total("b")
    assert view.off_lines == (0.0, 0.0)
    with pytest.raises(UsageError):
        diff_view(a, a, metric="nope")
