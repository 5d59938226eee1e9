"""bench/paired.py's table for issue 50: dlpt's self time per launch and per op start from its
self-timer, the op mode each dlpt mode ran, and a launch microbenchmark's added time per launch
(synthetic rounds: the bench itself needs a GPU)."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))

import paired


def mode(prof_s: float, self_ns: float | None = None, op_mode: str | None = None) -> dict:
    """9 rounds of one mode: a 0.50 s step of 10,000 launches unprofiled, ``prof_s`` profiled."""
    capture = [
        dict.fromkeys(paired.CAPTURE_KEYS, 0)
        | {"self_ns": self_ns, "submitted": 100_000, "op_records": 200_000}
        for _ in range(9)
    ]
    out = {"ratios": [prof_s / 0.50] * 9, "base_s": [0.50] * 9, "prof_s": [prof_s] * 9, "cpu_ratios": []}
    return out | {
        "capture": capture if self_ns is not None else [],
        **({"op_mode": op_mode} if op_mode else {}),
    }


def test_the_table_gives_self_time_per_launch_and_per_op_and_the_added_time_per_launch() -> None:
    raw = {
        "dlpt": mode(0.60, 40e6, "lean"),
        "dlpt_exact": mode(0.65, 60e6, "exact"),
        "cupti_floor": mode(0.55),
    }
    modes = paired.summarise(raw, 10)
    assert modes["dlpt"]["self_ns_per_launch"] == pytest.approx(400)
    assert modes["dlpt"]["self_ns_per_op"] == pytest.approx(200)
    assert "dlpt_lean/dlpt_exact" not in modes  # dlpt_lean did not run
    assert modes["dlpt/dlpt_exact"]["ratio"] == pytest.approx(0.60 / 0.65)
    text = paired.table([{"workload": "tiny_add", "steps_per_chunk": 10, "modes": modes, "raw": raw}])
    row = next(ln for ln in text.splitlines() if "| dlpt (lean) |" in ln)
    # self µs/step, ns/launch, ns/op; the added time a launch: (0.60 - 0.50) s / 10,000 launches
    assert "| 4000 µs | 400 | 200 |" in row and row.rstrip().endswith("| 10.00 |")
    assert "| dlpt_exact (exact) |" in text
    floor = next(ln for ln in text.splitlines() if "| cupti_floor |" in ln)
    assert floor.rstrip().endswith("| 5.00 |")
