"""How numbers are written (dlpt.model.units): a zero time has its unit, a per-step count has one
decimal only when it has one, and an empty profile's report says ``wall 0s``."""

from __future__ import annotations

import io

from rich.console import Console

from dlpt.model.session import Session
from dlpt.model.units import PLAIN, Units
from dlpt.renderers.terminal.report import print_report


def test_zero_time_has_a_unit() -> None:
    assert PLAIN.time(0) == "0s" and Units(steps=4).time(0) == "0s"
    assert PLAIN.time(850) == "850ns" and PLAIN.time(1_500) == "1.5µs"


def test_counts_are_whole_when_whole_at_their_precision() -> None:
    per_step = Units(steps=17)
    assert per_step.count(17) == "1" and per_step.count(104) == "6.1"
    assert Units(steps=25).count(24) == "1"  # 0.96 reads 1, never 1.0
    assert Units(steps=4).count(47) == "11.8" and PLAIN.count(12_000) == "12,000"
    assert Units(steps=100).count(1) == "<0.1" and PLAIN.count(0) == "0"  # never a 0 that is not one


def test_empty_profile_says_wall_zero_with_a_unit() -> None:
    console = Console(width=100, record=True, color_system=None, file=io.StringIO())
    print_report(Session(), console)
    text = console.export_text()
    assert "wall 0s" in text and "wall 0 " not in text and "wall 0\n" not in text
