"""``dlpt verify``'s decision (dlpt.query.gate) on pairs of known truth (tests/diff_cases.py): two
runs of one program pass, a line made 1.5x heavier fails, a slower host passes, runs that cannot
be compared or tested are "can't tell" (never a pass unless allowed, never a failure), a
regression under --max-regression passes, --expect-faster fails when the line did not get faster.
"""

from __future__ import annotations

import pytest

from dlpt.analysis.diff import diff_sessions
from dlpt.errors import UsageError
from dlpt.query.compare import judged, larger_total
from dlpt.query.gate import CANT_TELL_STATUS, PASS, SLOWER_STATUS, Decision, decide
from tests.diff_cases import GPU, session

COSTS = [100.0, 600.0, 200.0, 30.0, 20.0]  # line i at /p/model.py:100+i; B (101) holds 63%
PAIRS = 40


def _decide(
    seed: int, heavier=None, host: float = 1.0, moments: bool = True, line_run: float = 0.03, **kw
) -> Decision:
    a = session(seed, COSTS, moments=moments, line_run=line_run)
    b = session(seed + 1, COSTS, heavier, host=host, moments=moments, line_run=line_run)
    d = diff_sessions(a, b)
    _, changes = judged(d, GPU)
    return decide(changes, d.tested, total=larger_total(d, GPU), **kw)


def _rate(status: int, **kw) -> float:
    return sum(_decide(1000 + 2 * s, **kw).status == status for s in range(PAIRS)) / PAIRS


def test_two_runs_of_one_program_pass() -> None:
    assert _rate(PASS) >= 0.95


@pytest.mark.parametrize("line", [1, 0])  # the dominant line, and one of 11%
def test_a_line_made_1_5x_heavier_fails_and_names_it(line: int) -> None:
    assert _rate(SLOWER_STATUS, heavier={line: 1.5}) >= 0.95
    d = _decide(1000, heavier={line: 1.5})
    assert [c.cost.line for c in d.slower] == [100 + line]
    assert d.reasons[0].startswith(f"model.py:{100 + line}: slower")


def test_a_slower_host_is_not_a_regression() -> None:
    assert _rate(PASS, host=1.3) >= 0.95


def test_a_regression_under_max_regression_passes() -> None:
    assert _rate(SLOWER_STATUS, heavier={1: 1.5}, max_regression=0.8) == 0.0


def test_a_tolerance_tighter_than_the_data_can_resolve_is_cant_tell() -> None:
    # Two runs of one program: every interval reaches past 1.01x, so a 1% gate cannot pass.
    d = _decide(1000, max_regression=0.01)
    assert d.status == CANT_TELL_STATUS and "reaches past 1.01x" in d.reasons[0]


def test_runs_that_cannot_be_compared_are_cant_tell_never_pass_or_fail() -> None:
    # The whole run moved 2x and its lines +-40% each: no line is compared.
    d = _decide(1000, host=2.0, line_run=0.4)
    assert d.status == CANT_TELL_STATUS and d.undecided
    assert "the whole run moved" in d.reasons[0]
    assert _decide(1000, host=2.0, line_run=0.4, allow_cant_tell=True).status == PASS


def test_a_whole_run_moved_far_with_every_line_alike_is_judged() -> None:
    # A host that ran the whole program 2x slower, every line alike (the quiet 2-core machine's
    # 1.5-1.9x between runs of one program): the pass and the failure are still told.
    assert _rate(PASS, host=2.0) >= 0.85
    assert _rate(SLOWER_STATUS, heavier={0: 1.5}, host=2.0) >= 0.75


def test_sessions_without_spreads_cannot_decide() -> None:
    assert _decide(1000, moments=False).status == CANT_TELL_STATUS
    assert _decide(1000, moments=False, allow_cant_tell=True).status == PASS


def test_expect_faster() -> None:
    assert _decide(1000, heavier={1: 0.5}, expect_faster=("model.py:101",)).status == PASS
    missed = _decide(1000, expect_faster=("model.py:101",))
    assert missed.status == SLOWER_STATUS and missed.missed == [
        "model.py:101: expected faster, measured same"
    ]
    with pytest.raises(UsageError, match="no such line"):
        _decide(1000, expect_faster=("model.py:999",))


def test_a_suggestions_predicted_gain_is_set_against_its_lines_measured_change() -> None:
    from dlpt.query.predictions import predictions

    a, b = session(1000, COSTS), session(1001, COSTS, {1: 0.5})  # line 101: 600 us -> 300 us
    a.meta = {
        **a.meta,
        "suggestions": [{"rule": "r", "title": "t", "gain_ns": 200_000, "file": "/p/model.py", "line": 101}],
    }
    d = diff_sessions(a, b)
    shift, changes = judged(d, GPU)
    (p,) = predictions(a, d, shift, changes)
    assert (p["where"], p["predicted_ns"], p["verdict"], p["realised_from"]) == (
        "model.py:101",
        200_000,
        "faster",
        "metric",
    )
    assert 250_000 < p["measured_ns"] < 350_000 and 1.2 < p["realised"] < 1.8


def test_a_regression_found_on_the_fastest_calls_fails_and_says_so() -> None:
    # A busy host: the line's mean cannot tell, its ops' fastest calls can (dlpt diff's floors).
    from tests.diff_cases import CPU, busy_cpu_session

    calls = [20, 120, 40]
    d = diff_sessions(busy_cpu_session(2000, calls), busy_cpu_session(2001, calls, {1: 1.5}))
    _, changes = judged(d, CPU)
    decision = decide(changes, d.tested, total=larger_total(d, CPU))
    assert decision.status == SLOWER_STATUS
    assert decision.reasons[0].startswith("train.py:101: slower")
    assert "on its fastest calls" in decision.reasons[0]
