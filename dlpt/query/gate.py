"""``dlpt verify``'s decision: from the judged lines of a base run and a new one, whether a line
got significantly slower (a CI gate's failure), whether the lines meant to get faster did, and
whether the data can decide at all (docs/agents.md, "dlpt verify as a CI gate").

A line fails the gate when ``dlpt diff`` calls it slower (beyond the run shift, Holm-corrected,
at least 10% of the line and 1% of the total: docs/numbers.md) and its change after the run
shift exceeds ``max_regression``. The gate passes only when every line that matters rules out
a regression past what is allowed: its 95% interval ends below ``1 + max_regression`` (without
one, below 1.5x: what diff's "same" rules out). Where a line leaves that open ("can't tell", or
an interval that reaches past it), the decision is CANT_TELL (exit 3): a gate must not pass on
data that cannot decide, and must not fail on it either (on a shared host that is mostly the
host); a decided regression elsewhere still fails.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dlpt.analysis.diff_test import CANT_TELL, FASTER, MIN_EFFECT, MIN_SHARE, MIN_STEPS, RESOLVE, SLOWER
from dlpt.errors import UsageError
from dlpt.query.compare import LineChange
from dlpt.query.detail import parse_where

__all__ = ["PASS", "SLOWER_STATUS", "USAGE", "CANT_TELL_STATUS", "Decision", "decide"]

#: Exit statuses: no line significantly slower; one is (or an expected speed-up did not land);
#: bad input; the data cannot decide (a line that matters is "can't tell").
PASS, SLOWER_STATUS, USAGE, CANT_TELL_STATUS = 0, 1, 2, 3


@dataclass
class Decision:
    """What ``dlpt verify`` concludes: ``status`` and the lines behind it, each as a sentence."""

    status: int
    slower: list[LineChange] = field(default_factory=list)
    undecided: list[LineChange] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)  # expected faster and measured otherwise
    reasons: list[str] = field(default_factory=list)


def _limit(max_regression: float | None) -> float:
    """The change after the run shift past which a slower line fails (diff's own floor, 10%,
    when none is given)."""
    return 1.0 + max(MIN_EFFECT, max_regression or 0.0)


def _ruled_out(max_regression: float | None) -> float:
    """The change a line's interval must rule out for the gate to pass: the regression allowed,
    or diff's own (a "same" line rules out 1.5x) when none is given."""
    return 1.0 + (max_regression if max_regression is not None else RESOLVE - 1.0)


def _blocks(c: LineChange, ruled_out: float, floor: float) -> bool:
    """Whether ``c`` leaves a regression past ``ruled_out`` possible: a "can't tell" of runs that
    cannot be compared, or a line that matters (``floor``: 1% of the total) whose interval
    reaches past it. Lines that fail the gate are counted apart."""
    ch = c.change
    if ch is None or ch.verdict == FASTER:
        return False
    if ch.verdict == CANT_TELL and ch.why in ("runs", "host", "steps"):
        return True
    return max(c.a, c.b) >= floor and ch.hi > ruled_out


def _expected(changes: list[LineChange], where: str) -> tuple[str, LineChange]:
    file, line = parse_where(where)
    for c in changes:
        if c.at(file, line):
            return where, c
    raise UsageError(
        f"--expect-faster {where}: no such line in either run (lines with no cost are in neither)"
    )


def decide(
    changes: list[LineChange],
    tested: bool,
    *,
    max_regression: float | None = None,
    expect_faster: tuple[str, ...] = (),
    allow_cant_tell: bool = False,
    total: float = 0.0,
) -> Decision:
    """The decision on ``changes`` (:func:`dlpt.query.compare.judged`'s); ``tested``: whether
    both sessions saved per-step spreads; ``total``: the larger run's total per step (lines
    under 1% of it are not news either way). ``max_regression`` is a fraction (0.05: 5%).
    Raises UsageError for an ``expect_faster`` line neither run holds."""
    d = Decision(PASS)
    if not tested:
        d.reasons.append(
            "a session saved no per-step spreads (format 3, 2 steps or more): nothing can be tested"
        )
        d.status = PASS if allow_cant_tell else CANT_TELL_STATUS
        return d
    limit = _limit(max_regression)
    d.slower = [c for c in changes if c.verdict == SLOWER and c.change is not None and c.change.ratio > limit]
    d.undecided = [
        c for c in changes if c not in d.slower and _blocks(c, _ruled_out(max_regression), MIN_SHARE * total)
    ]
    for where, c in (_expected(changes, w) for w in expect_faster):
        if c.verdict == CANT_TELL:
            d.undecided.append(c)
        elif c.verdict != FASTER:
            d.missed.append(f"{where}: expected faster, measured {c.verdict}")
    if d.slower or d.missed:
        d.status = SLOWER_STATUS
    elif d.undecided and not allow_cant_tell:
        d.status = CANT_TELL_STATUS
    d.reasons = _reasons(d, limit, _ruled_out(max_regression), allow_cant_tell)
    return d


_WHY = {
    "runs": "the whole run moved 1.5x or more, its lines unevenly",
    "host": "too few lines to tell the host by",
    "fastest": "its mean changed and its ops' fastest calls did not: a busy host's",
    "steps": f"a run counted fewer than {MIN_STEPS} steps",
}


def _reasons(d: Decision, limit: float, ruled_out: float, allowed: bool) -> list[str]:
    out = [
        f"{c.cost.where}: slower, {_ratio(c)} after the run shift (more than {limit:.2f}x)" for c in d.slower
    ]
    out += d.missed
    seen: set[int] = set()
    for c in d.undecided:
        if id(c) in seen or c.change is None:
            continue
        seen.add(id(c))
        ch = c.change
        text = _WHY.get(ch.why, f"its interval {ch.lo:.2f}-{ch.hi:.2f}x reaches past {ruled_out:.2f}x")
        label = "can't tell" if ch.verdict == CANT_TELL else f"{ch.verdict}, but"
        allowance = " - allowed by --allow-cant-tell" if allowed else ""
        out.append(f"{c.cost.where}: {label} ({text}){allowance}")
    return out


def _ratio(c: LineChange) -> str:
    ch = c.change
    if ch is None or ch.ratio == float("inf"):
        return "new in this run"
    basis = f" on its {ch.basis}" if ch.basis else ""  # the ops' fastest calls (dlpt diff's floors)
    return f"{ch.ratio:.2f}x ({ch.lo:.2f}-{ch.hi:.2f}){basis}"
