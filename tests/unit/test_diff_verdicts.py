"""``dlpt diff``'s verdicts against pairs of known truth (tests/diff_cases.py; the same cases on
real runs: bench/verdicts.py diff, docs/numbers.md): two runs of one program flag no line; a
line made 1.5x heavier is flagged alone whether it holds most of the step or a tenth of it; a
slower host flags no line and says the whole run changed; where one pair of runs cannot tell a
line from the host, the verdict says so."""

from __future__ import annotations

import pytest

from dlpt.analysis.diff_test import CANT_TELL, SAME, SLOWER
from tests.diff_cases import session, verdicts

# LINE-A 1, LINE-B 6, LINE-C 2 (issue 46's script), and two small lines (the backward and the
# optimizer's): B holds 63% of the step, C 21%, A 11%.
COSTS = [100.0, 600.0, 200.0, 30.0, 20.0]
B, A = 1, 0
PAIRS = 60


def rate(heavier: dict[int, float] | None, check, host: float = 1.0, costs=COSTS) -> float:
    """The share of PAIRS pairs (fresh seeds) whose verdicts pass ``check(shift, lines)``."""
    ok = 0
    for s in range(PAIRS):
        a = session(1000 + 2 * s, costs)
        b = session(1001 + 2 * s, costs, heavier, host=host)
        ok += bool(check(*verdicts(a, b)))
    return ok / PAIRS


def test_two_runs_of_one_program_flag_no_line_and_no_run_shift() -> None:
    assert rate(None, lambda shift, lines: not lines) >= 0.95
    assert rate(None, lambda shift, lines: shift == SAME) >= 0.95


@pytest.mark.parametrize("line", [B, A])  # B dominates the step (63%); A holds 11%
def test_a_line_made_1_5x_heavier_is_flagged_alone(line: int) -> None:
    assert rate({line: 1.5}, lambda shift, lines: lines == {line: SLOWER}) >= 0.95


def test_the_dominant_line_made_2x_heavier_is_not_taken_for_the_host() -> None:
    # Issue 46: a cost-weighted median of the lines' ratios *is* the dominant line's, so dividing
    # it out called the line that changed "within noise" and flagged a small one instead.
    assert rate({B: 2.0}, lambda shift, lines: lines == {B: SLOWER} and shift == SAME) >= 0.95


def test_a_slower_host_flags_no_line_and_says_the_whole_run_changed() -> None:
    every = {i: 1.0 for i in range(len(COSTS))}
    assert rate(every, lambda shift, lines: not lines and shift == SLOWER, host=1.3) >= 0.95


def test_with_one_line_holding_everything_a_change_is_cant_tell_never_the_wrong_line() -> None:
    # One line of 97%, two below MIN_SHARE: nothing to tell the host by. Made 1.5x heavier it
    # is "can't tell" (it or the host), and no other line is named in its place.
    costs = [1000.0, 5.0, 5.0]
    got = rate({0: 1.5}, lambda shift, lines: lines == {0: CANT_TELL}, costs=costs)
    assert got >= 0.95
