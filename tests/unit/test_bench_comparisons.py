"""bench/comparisons.py: issue 32's targets judged per round, with an interval that says whether
the rounds can tell (the paired bench's verdict rows)."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))

from comparisons import COMPARISONS, Comparison, compare, compare_all, row

FLOOR = Comparison("dlpt", "cupti_floor", 1.05, "dlpt over CUPTI's floor")


def _raw(**ratios: list[float]) -> dict:
    return {m: {"ratios": r} for m, r in ratios.items()}


def test_quotients_pair_the_same_rounds_not_the_medians() -> None:
    # dlpt's ratio moves with the round (a busy round slows both modes); per round it is 1.02x the
    # floor's. Medians of each would give 1.30 / 1.10 = 1.18.
    floor = [1.0, 1.5, 1.1, 1.6, 1.05, 1.4, 1.2, 1.0, 1.3, 1.1, 1.25, 1.15]
    dlpt = [f * 1.02 for f in floor]
    s = compare(_raw(dlpt=dlpt, cupti_floor=floor), FLOOR)
    assert s is not None
    assert s["ratio"] == pytest.approx(1.02)
    assert s["lo"] == pytest.approx(1.02) and s["hi"] == pytest.approx(1.02)
    assert s["verdict"] == "meets"
    assert s["rounds_within_target"] == 12


def test_the_verdict_follows_the_interval_not_the_median() -> None:
    above = [1.10, 1.12, 1.08, 1.11, 1.09, 1.13, 1.10, 1.12, 1.11, 1.10, 1.09, 1.12]
    s = compare(_raw(dlpt=above, cupti_floor=[1.0] * 12), FLOOR)
    assert s is not None and s["verdict"] == "misses"
    # Median under the target, but rounds spread far on both sides: the interval straddles it.
    spread = [0.80, 1.30, 0.85, 1.25, 0.90, 1.20, 1.00, 1.04, 1.06, 0.95, 1.15, 1.03]
    s = compare(_raw(dlpt=spread, cupti_floor=[1.0] * 12), FLOOR)
    assert s is not None
    assert s["ratio"] < 1.05
    assert s["verdict"] == "can't tell"
    assert s["lo"] < 1.05 < s["hi"]


def test_eight_rounds_give_min_max_as_the_interval() -> None:
    q = [1.01, 1.02, 1.03, 1.00, 1.04, 1.02, 1.01, 1.03]
    s = compare(_raw(dlpt=q, cupti_floor=[1.0] * 8), FLOOR)
    assert s is not None
    assert (s["lo"], s["hi"]) == (min(q), max(q))
    q9 = [*q, 1.02]
    s9 = compare(_raw(dlpt=q9, cupti_floor=[1.0] * 9), FLOOR)
    assert s9 is not None and (s9["lo"], s9["hi"]) == (sorted(q9)[1], sorted(q9)[7])


def test_only_comparisons_whose_modes_both_ran() -> None:
    raw = _raw(dlpt=[1.1] * 9, cupti_floor=[1.0] * 9, dlpt_memory=[1.21] * 9)
    out = compare_all(raw)
    assert set(out) == {"dlpt/cupti_floor", "dlpt_memory/dlpt"}
    assert out["dlpt_memory/dlpt"]["ratio"] == pytest.approx(1.1)
    assert out["dlpt_memory/dlpt"]["verdict"] == "misses"  # +10% against --memory's 5%
    assert compare(_raw(dlpt=[1.1]), FLOOR) is None


def test_the_issues_targets() -> None:
    targets = {c.key: c.target for c in COMPARISONS}
    assert targets == {
        "dlpt/cupti_floor": 1.05,
        "dlpt/torchprof": 1.00,
        "dlpt/dlpt_nosampler": 1.02,
        "dlpt_memory/dlpt": 1.05,
        # issue 50: the lean op starts against the floor, --exact-ops against it, and the saving
        "dlpt_lean/cupti_floor": 1.05,
        "dlpt_exact/cupti_floor": 1.05,
        "dlpt_lean/dlpt_exact": 1.00,
        "dlpt/dlpt_exact": 1.00,
        "dlpt+/cupti_floor+": 1.50,  # the tiny-launch loop: added time per launch over the floor's
    }


def test_added_time_is_compared_per_round_without_the_unprofiled_part() -> None:
    # The floor adds 20% a round, dlpt 26-34%: 1.3-1.7x the floor's added time, though its ratios
    # are only 1.05-1.12x the floor's. A round where the floor added nothing is left out.
    floor = [1.2, 1.2, 1.2, 1.0]
    dlpt = [1.26, 1.30, 1.34, 1.5]
    added = next(c for c in COMPARISONS if c.added)
    s = compare(_raw(dlpt=dlpt, cupti_floor=floor), added)
    assert s is not None and s["rounds"] == 3
    assert s["ratio"] == pytest.approx(1.5) and s["per_round"] == pytest.approx([1.3, 1.5, 1.7])


def test_the_row_states_interval_and_verdict() -> None:
    s = compare(_raw(dlpt=[1.10] * 10, cupti_floor=[1.0] * 10), FLOOR)
    assert s is not None
    line = row("decode", "dlpt/cupti_floor", s)
    assert "**1.100x** (95% 1.100\u20131.100)" in line
    assert "target ≤ 1.05x: **misses**" in line
    assert "0 of 10 rounds within" in line
