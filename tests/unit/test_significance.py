"""Numbers with their spread (docs/numbers.md): ``dlpt diff``'s significance test on synthetic
per-step data (two runs of one program flag nothing; a line made 2x slower is flagged, first and
alone), the per-node spread read from a session's second moments, the statistics underneath,
and dlpt's cost from paired windows (never printed below 1.0x)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from dlpt.analysis.diff import diff_sessions
from dlpt.model.calibration import MIN_WINDOWS, calibration
from dlpt.model.metrics import METRICS
from dlpt.model.session import Session
from dlpt.model.stats import holm, mean_interval, median_interval, t_cdf, t_quantile, welch
from dlpt.trees.spread import node_spread

GPU = METRICS["gpu"]
LINES = 20
STEPS = 50


def run(seed: int, slow: dict[int, float] | None = None, moments: bool = True) -> Session:
    """A session of STEPS steps of a program with LINES model lines, each launching one kernel;
    line i costs (i + 1) * 100 us per step, times a per-step factor shared by all lines (the host
    or GPU clock: +-5%) and its own noise (+-10%). ``slow``: lines whose cost is multiplied. The
    node's ``m`` and ``q`` are what the native core records: the per-step sum and sum of squares."""
    rng = random.Random(seed)
    per_line: list[list[float]] = [[] for _ in range(LINES)]
    for _ in range(STEPS):
        shared = 1 + rng.gauss(0, 0.05)
        for i in range(LINES):
            cost = (i + 1) * 100_000 * shared * (1 + rng.gauss(0, 0.10)) * (slow or {}).get(i, 1.0)
            per_line[i].append(max(0.0, cost))
    nodes: list[dict[str, Any]] = [
        {"id": 0, "parent": -1, "kind": "root", "name": "<root>", "file": "", "line": 0, "m": {}},
        {"id": 1, "parent": 0, "kind": "frame", "name": "main", "file": "/p/train.py", "line": 10, "m": {}},
    ]
    for i, xs in enumerate(per_line):
        frame = len(nodes)
        nodes.append(
            {
                "id": frame,
                "parent": 1,
                "kind": "frame",
                "name": "forward",
                "file": "/p/model.py",
                "line": 100 + i,
                "m": {},
            }
        )
        ints = [round(x) for x in xs]
        kernel: dict[str, Any] = {
            "id": frame + 1,
            "parent": frame,
            "kind": "kernel",
            "name": f"kernel_{i}",
            "file": "",
            "line": 0,
            "m": {"gpu_ns": sum(ints), "kernels": STEPS},
        }
        if moments:
            kernel["q"] = {"gpu_ns": float(sum(x * x for x in ints))}
        nodes.append(kernel)
    meta = {"steps": {"profiled": STEPS}}
    return Session.from_dict({"format": "dlpt-session", "version": 3, "meta": meta, "nodes": nodes})


def flagged(a: Session, b: Session) -> list[int]:
    """The line numbers (0-based model lines) flagged significant, in the diff's order."""
    d = diff_sessions(a, b)
    changes = d.changes(GPU)
    out = []
    for row in d.ranked(GPU, changes):
        c = changes.get(row.key)
        if c is not None and c.significant:
            line = (row.a or row.b).line  # type: ignore[union-attr]
            out.append(line - 100)
    return out


def test_two_runs_of_the_same_program_flag_no_line() -> None:
    # 30 pairs of runs, 20 lines each: the family-wise rate is 5% per pair (the lines here are one
    # node each, so their spread is exact). At most 3 of 30 pairs may flag anything (P < 1%).
    pairs_with_a_flag = sum(bool(flagged(run(2 * s), run(2 * s + 1))) for s in range(30))
    assert pairs_with_a_flag <= 3


@pytest.mark.parametrize("line", [2, 7, 19])  # line 2: 1.4% of the total
def test_a_line_made_2x_slower_is_flagged_first_and_nothing_else_is(line: int) -> None:
    for s in range(5):
        assert flagged(run(100 + s), run(200 + s, slow={line: 2.0})) == [line]


def test_the_slowed_line_is_listed_first_even_when_a_bigger_line_moves_within_noise() -> None:
    a, b = run(1), run(2, slow={2: 2.0})  # line 2: 300 us, 1.4% of the total
    d = diff_sessions(a, b)
    changes = d.changes(GPU)
    first = d.ranked(GPU, changes)[0]
    assert (first.a or first.b).line == 102  # type: ignore[union-attr]
    assert changes[first.key].significant and changes[first.key].p < 1e-6


def test_a_run_wide_slowdown_is_divided_out_and_only_the_changed_line_is_flagged() -> None:
    # B ran on a busier host: every line 1.5x slower; line 5 also made 2x slower (3x in all).
    slow = {i: 1.5 for i in range(LINES)} | {5: 3.0}
    d = diff_sessions(run(11), run(12, slow=slow))
    shift, _ = d.judge(GPU)
    assert shift is not None and shift.factor == pytest.approx(1.5, rel=0.05)
    assert flagged(run(11), run(12, slow=slow)) == [5]
    # The same slowdown on every line and nothing else: no line flagged (at most 1 of 10 pairs,
    # the family-wise 5%).
    uniform = {i: 1.5 for i in range(LINES)}
    assert sum(bool(flagged(run(20 + 2 * s), run(21 + 2 * s, slow=uniform))) for s in range(10)) <= 1


def test_a_tiny_line_that_doubled_is_not_news() -> None:
    # Line 0 costs 100 us of a 21 ms step: doubled, it is 0.5% of the total, under MIN_SHARE.
    assert flagged(run(31), run(32, slow={0: 2.0})) == []


def test_sessions_without_second_moments_are_not_tested() -> None:
    d = diff_sessions(run(1, moments=False), run(2, slow={3: 2.0}))
    assert not d.tested and d.changes(GPU) == {}
    # Still ranked by absolute change: the 2x line (400 us more) first.
    assert (d.ranked(GPU)[0].a).line == 103  # type: ignore[union-attr]


def test_a_nodes_spread_is_its_per_step_variance() -> None:
    xs = [10, 12, 14, 0, 14]  # a step where the node did nothing counts as 0
    var = sum((x - 10) ** 2 for x in xs) / 5
    got = node_spread({"gpu_ns": sum(xs)}, {"gpu_ns": float(sum(x * x for x in xs))}, 5)
    assert got == {"gpu_ns": round(var * 25)}  # times the steps squared: sums like a cost
    assert node_spread({"gpu_ns": 50}, {"gpu_ns": 500.0}, 5) == {}  # constant: no spread


def test_statistics() -> None:
    assert t_quantile(0.975, 9) == pytest.approx(2.262, abs=1e-3)
    assert t_quantile(0.975, 1e6) == pytest.approx(1.960, abs=1e-3)
    assert t_cdf(0.0, 5) == pytest.approx(0.5)
    # Welch: means 10 and 12, sd 1 and 2, 10 values each: t = 2/sqrt(0.5) = 2.828, df = 13.2.
    assert welch(10, 1, 10, 12, 2, 10) == pytest.approx(2 * t_cdf(-2.8284, 13.24), rel=1e-3)
    assert welch(10, 1, 1, 20, 1, 10) == 1.0  # one value on a side: untestable
    assert holm([0.001, 0.02, 0.04, 0.5]) == [True, False, False, False]
    assert holm([0.01, 0.012, 0.013]) == [True, True, True]
    lo, hi = mean_interval(10.0, 2.0, 10)
    assert (lo, hi) == pytest.approx((10 - 2.262 * 2 / 10**0.5, 10 + 2.262 * 2 / 10**0.5), abs=1e-3)
    assert median_interval([5, 1, 3]) == (1, 5, "min-max")
    assert median_interval(list(range(100)))[:2] == (39, 60)


def _paired(ratios: list[float]) -> dict[str, Any]:
    return {
        "step_time": {
            "paired": [
                {"steps": [i, i + 5], "untraced_ns": 10_000_000, "untraced_n": 5, "traced_ns": round(r * 1e7)}
                for i, r in enumerate(ratios)
            ]
        }
    }


def test_dlpts_cost_from_paired_windows() -> None:
    good = calibration(_paired([1.20, 1.22, 1.18, 1.21, 1.19, 1.25, 1.20]))
    assert good.measured and good.ratio == pytest.approx(1.20) and good.how == "95%"
    assert good.text().startswith("1.20x (1.18\u20131.25, 95%, 7 windows)")
    few = calibration(_paired([1.2] * (MIN_WINDOWS - 1)))
    assert not few.measured and "not measured" in few.text() and "needed" in few.text()
    # Busy host: windows disagree wildly -> not measured, whatever the median.
    busy = calibration(_paired([0.4, 6.5, 1.1, 8.5, 0.9]))
    assert not busy.measured and "disagree" in busy.why_not
    # A median below 1.0x is never printed as a cost.
    noise = calibration(_paired([0.95, 0.97, 1.02, 0.99, 1.01, 0.96]))
    assert noise.measured and noise.within_noise
    assert noise.text().startswith("within noise (0.95\u20131.02") and "0.98x" not in noise.text()
    assert not calibration({}).measured and "not measured" in calibration({}).text()
