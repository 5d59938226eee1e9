"""``dlpt diff``'s verdicts on pairs of runs whose truth is set by construction
(known_answers/lines.py: three lines of known cost; bench/verdicts.py runs them).

Cases (counts of LINE-A, LINE-B, LINE-C per step; the base holds B at 67% of the step, A at 11%):
A/A (two runs of the base), one line made 1.25x, 1.5x and 2x heavier (B, the dominant line, and
A, a minor one), every line 1.3x heavier together (a slower host), and short runs. Each case's
pair i shares base run i, so pairs within a case are independent.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from verdict_rates import Rate

BASE = (20, 120, 40)


@dataclass(frozen=True)
class Case:
    name: str
    counts: tuple[int, int, int]
    changed: str | None  # the line made heavier ("LINE-A"...), None for A/A or the host case
    host: bool = False  # every line heavier together: the run changed, no line did
    steps: int = 40


def _scaled(line: int, k: float) -> tuple[int, int, int]:
    c = list(BASE)
    c[line] = round(c[line] * k)
    return (c[0], c[1], c[2])


CASES = [
    Case("A/A", BASE, None),
    *(Case(f"B (67%) x{k:g}", _scaled(1, k), "LINE-B") for k in (1.25, 1.5, 2.0)),
    *(Case(f"A (11%) x{k:g}", _scaled(0, k), "LINE-A") for k in (1.25, 1.5, 2.0)),
    Case("every line x1.3 (a slower host)", (26, 156, 52), None, host=True),
    Case("A/A, 20-step runs", BASE, None, steps=20),
    Case("B (67%) x1.5, 20-step runs", _scaled(1, 1.5), "LINE-B", steps=20),
]


def base_args(steps: int) -> list[str]:
    return ["lines.py", str(steps), *(str(c) for c in BASE)]


def case_args(case: Case) -> list[str]:
    return ["lines.py", str(case.steps), *(str(c) for c in case.counts)]


@dataclass
class Outcome:
    """One pair's diff, as the verdicts read it."""

    flagged: list[str]  # lines judged changed (their LINE- tags, or the source text)
    cant_tell: list[str]  # lines judged "can't tell"
    target_ratio: float | None  # the changed line's B/A after the run shift
    shift: str  # the run's verdict
    shift_factor: float
    steps: tuple[int, int]
    step_change: str = ""  # the step line's verdict ("differs", "within noise" or "")
    on_floors: list[str] = field(default_factory=list)  # of `flagged`, those judged on the ops' fastest calls
    shift_interval: tuple[float, float] = (1.0, 1.0)  # the run shift's 95% interval
    shift_basis: str = ""  # "fastest calls" where the run's verdict is its ops' fastest calls'
    target_verdict: str = ""  # the changed line's verdict


def _tag(text: str | None, where: str) -> str:
    for tag in ("LINE-A", "LINE-B", "LINE-C", "LINE-EXTRA"):
        if text and tag in text:
            return tag
    return where


def judge_pair(a: Path, b: Path, changed: str | None) -> Outcome:
    from dlpt.analysis.diff import default_diff_metric, diff_sessions
    from dlpt.model.session import Session

    d = diff_sessions(Session.load(str(a)), Session.load(str(b)))
    metric = default_diff_metric(d)
    shift, changes = d.judge(metric)
    flagged, unsure, floors, ratio, said = [], [], [], None, ""
    for r in d.rows:
        c = changes.get(r.key)
        one = r.a or r.b
        if c is None or one is None:
            continue
        tag = _tag(one.text, one.where)
        if c.significant:
            flagged.append(tag)
            if c.basis:
                floors.append(tag)
        elif c.verdict == "can't tell":
            unsure.append(tag)
        if tag == changed:
            ratio, said = c.ratio, c.verdict
    return Outcome(
        flagged, unsure, ratio,
        shift.verdict if shift else "not tested", shift.factor if shift else 1.0,
        (d.a.steps, d.b.steps), d.step_change(), floors,
        (shift.lo, shift.hi) if shift else (1.0, 1.0),
        shift.basis if shift else "",
        said,
    )


def rates(case: Case, outcomes: Iterable[Outcome]) -> list[Rate]:
    """The verdict rates of one case: false positives (a line flagged that did not change),
    detection (the changed line flagged, alone), the run's own verdict."""
    out = list(outcomes)
    n = len(out)
    wrong = sum(1 for o in out if any(t != case.changed for t in o.flagged))
    rows = [Rate(case.name, "a line flagged that did not change", wrong, n, ("<=", 0.05))]
    if case.changed is not None:
        found = sum(1 for o in out if case.changed in o.flagged)
        alone = sum(1 for o in out if o.flagged == [case.changed])
        k = case.name.rsplit(" x", 1)[-1].split(",")[0]
        target = ("<=", 1.0) if k == "1.25" else (">=", 0.95)  # 1.25x: measured, no target
        rows.append(Rate(case.name, f"{case.changed} flagged", found, n, target if k != "1.25" else None))
        rows.append(Rate(case.name, f"{case.changed} flagged and nothing else", alone, n,
                         (">=", 0.95) if k != "1.25" else None))
        # "Within noise" says no 1.5x change fits: wrong of a line made 1.5x or 2x heavier.
        same = sum(1 for o in out if o.target_verdict == "same")
        rows.append(Rate(case.name, f"{case.changed} called within noise", same, n,
                         ("<=", 0.05) if k != "1.25" else None))
    floors = sum(1 for o in out if o.on_floors)
    if floors:
        wrong_floor = sum(1 for o in out if any(t != case.changed for t in o.on_floors))
        rows.append(Rate(case.name, "a line flagged on its fastest calls", floors, n))
        rows.append(Rate(case.name, "... one that did not change", wrong_floor, n, ("<=", 0.05)))
    unsure = sum(1 for o in out if o.cant_tell)
    rows.append(Rate(case.name, "a line \"can't tell\"", unsure, n))
    # The step line and the run shift speak of the runs (the host or the code): on a shared
    # host two runs of one program do differ, so their rates are shown without a target.
    step = sum(1 for o in out if o.step_change == "differs")
    rows.append(Rate(case.name, "the step times said to differ", step, n))
    unchanged = sum(1 for o in out if o.shift == "same")
    if case.host:
        said = sum(1 for o in out if o.shift == "slower")
        rows.append(Rate(case.name, "the whole run called slower", said, n, (">=", 0.95)))
        faster = sum(1 for o in out if o.shift == "faster")
        rows.append(Rate(case.name, "the whole run called faster", faster, n, ("<=", 0.05)))
        rows.append(Rate(case.name, "the whole run called unchanged", unchanged, n, ("<=", 0.05)))
    else:
        said = sum(1 for o in out if o.shift in ("slower", "faster"))
        rows.append(Rate(case.name, "the whole run called changed (the host or the input)", said, n))
        rows.append(Rate(case.name, "the whole run called unchanged", unchanged, n))
    unsure_run = sum(1 for o in out if o.shift == "can't tell")
    rows.append(Rate(case.name, "the whole run \"can't tell\"", unsure_run, n))
    fastest = sum(1 for o in out if o.shift_basis)
    rows.append(Rate(case.name, "the whole run's verdict on its ops' fastest calls", fastest, n))
    return rows


def save_outcomes(path: Path, by_case: dict[str, list[Outcome]]) -> None:
    path.write_text(json.dumps({k: [o.__dict__ for o in v] for k, v in by_case.items()}, indent=1))
