"""bench/pool.py: the paired bench's rounds pooled over calls into one verdict per target, and
dlpt's self time per launch and per op pooled beside each call's own (issue 50)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))

from pool import load, pooled_comparisons, report, self_time

SPREAD = [0.96, 1.10, 0.98, 1.08, 1.00, 1.06, 1.02, 1.04]  # floor's ratio moves with the round


def call(tmp: Path, name: str, quotient: list[float], self_ns: float = 800_000.0) -> str:
    """A paired JSON of one call: decode's dlpt at ``quotient`` times the floor, round by round."""
    floor = SPREAD[: len(quotient)]
    rounds = [
        {"self_ns": self_ns * (1 + 0.01 * i), "submitted": 1_000, "op_records": 3_000}
        for i in range(len(floor))
    ]
    raw = {
        "dlpt": {"ratios": [f * q for f, q in zip(floor, quotient, strict=True)], "capture": rounds},
        "cupti_floor": {"ratios": floor, "capture": []},
    }
    path = tmp / name
    path.write_text(
        json.dumps({"meta": {"gpu": "NVIDIA H100"}, "results": [{"workload": "decode", "raw": raw}]})
    )
    return str(path)


def test_calls_pool_into_a_verdict_none_of_them_could_give(tmp_path: Path) -> None:
    # Each call's 8 rounds: the 95% interval is min-max, which straddles 1.05 in both calls.
    a = [1.02, 1.03, 1.01, 1.04, 1.02, 1.03, 1.06, 1.02]
    b = [1.03, 1.02, 1.01, 1.02, 1.07, 1.03, 1.02, 1.03]
    paths = [call(tmp_path, "a.json", a), call(tmp_path, "b.json", b)]
    for p in paths:
        alone = pooled_comparisons(load([p]), ["decode"])["dlpt/cupti_floor"]
        assert alone["verdict"] == "can't tell" and alone["rounds"] == 8
    pooled = pooled_comparisons(load(paths), ["decode"])["dlpt/cupti_floor"]
    assert pooled["rounds"] == 16 and pooled["calls"] == 2
    assert sorted(pooled["per_round"]) == pytest.approx(sorted(a + b))  # each call's own rounds paired
    assert pooled["verdict"] == "meets" and pooled["hi"] <= 1.05


def test_self_time_per_launch_and_per_op_with_each_calls_median(tmp_path: Path) -> None:
    paths = [call(tmp_path, "a.json", [1.1] * 8), call(tmp_path, "b.json", [1.1] * 8, self_ns=840_000.0)]
    calls = load(paths)
    launch = self_time(calls, "decode", "dlpt", "submitted")
    assert launch is not None and launch["rounds"] == 16
    assert launch["per_call"] == pytest.approx([800 * 1.035, 840 * 1.035])
    op = self_time(calls, "decode", "dlpt", "op_records")
    assert op is not None and op["median"] == pytest.approx(launch["median"] / 3)
    text = report(calls, ["decode"], all_workloads=False)
    assert "| decode | dlpt/cupti_floor: dlpt over CUPTI's floor | 16 (2) | 1.100x" in text
    assert "**misses**" in text
    assert "| decode | dlpt | launch |" in text and "| decode | dlpt | op |" in text
