"""Suggestions against the change they ask for (bench/verdicts.py suggest): each case of
known_answers/suggest.py is profiled as it is (the rule should fire, at the case's line) and
with the fix applied (it should not), and the gain the fix brings is measured by the program's
own clock, paired in one process. The suggestion's estimated gain is then judged against it.

An estimate is one of three kinds, by what its rule claims (dlpt/analysis/rules/*):
- "point": the gain itself (a sync's wait, fp32 at the bf16 peak, a pageable copy at the pinned
  bandwidth): right when the measured gain is within ``POINT_TOLERANCE`` of it;
- "upper": "up to" (the GPU's idle time a graph or a prefetch can hide): right when the measured
  gain is no more than ``BOUND_SLACK`` over it;
- "lower": "conservative" (attention's non-matmul kernels, the optimizer's per-parameter calls):
  right when the measured gain is no less than ``BOUND_SLACK`` under it.
A suggestion is worth making where the fix gains at least ``WORTH`` of the step (measured);
where it gains less, the right verdict is none (the README's command's SGD over 6 parameters:
``foreach=True`` gained nothing there). The tolerances were fixed before any run was judged;
``WORTH`` after the README's case, which no tolerance could have made right.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from verdict_rates import Rate
from verdict_runs import KNOWN, REPO, profile

from dlpt.analysis.inputs import analyze
from dlpt.analysis.suggest import derive
from dlpt.model.session import Session
from dlpt.model.stats import median_interval

__all__ = ["CASES", "Case", "Outcome", "run", "judge", "rates", "summary"]

#: A point estimate is right within this share of itself.
POINT_TOLERANCE = 0.30
#: A bound is right unless the measured gain passes it by more than this share of it.
BOUND_SLACK = 0.15
#: A fix that gains less than this share of the step is not worth a suggestion (the paired
#: measurement resolves about 1% of a step on the 2-core machine).
WORTH = 0.02
PROGRAM = KNOWN / "suggest.py"


@dataclass(frozen=True)
class Case:
    name: str  # known_answers/suggest.py's case
    rule: str  # the rule that should fire on it
    kind: str  # "point" | "upper" | "lower"
    device: str  # "cuda" | "cpu"
    marker: str  # the comment that marks the line the finding should name ("" for the step)


CASES = [
    Case("sync", "sync_in_step", "point", "cuda", "@sync"),
    Case("loader", "data_loader_stall", "upper", "cuda", ""),
    Case("launch", "launch_bound", "upper", "cuda", ""),
    Case("fp32", "fp32_matmul", "point", "cuda", "@fp32"),
    Case("attention", "attention_unfused", "lower", "cuda", ""),
    Case("optimizer", "optimizer_loop", "lower", "cuda", ""),
    Case("optimizer_cpu", "optimizer_loop", "lower", "cpu", ""),
    Case("optimizer_few_cpu", "optimizer_loop", "lower", "cpu", ""),
    Case("readme_cpu", "optimizer_loop", "lower", "cpu", ""),
    Case("pinned", "pinned_memory", "point", "cuda", "@copy"),
]


@dataclass
class Outcome:
    case: str
    found: bool  # the rule fired on the program as it is
    at_line: bool  # ... at the case's line (True where the case names none)
    on_fixed: bool  # the rule fired on the fixed program
    estimate_ns: int  # the finding's gain per step (0 when it did not fire)
    measured_ns: float  # what the fix gained per step, paired, the program's own clock
    step_ns: float  # the unfixed step, untraced, the program's own clock
    basis: str
    measured_lo_ns: float = 0.0  # the 95% interval of that median over the paired rounds
    measured_hi_ns: float = 0.0


def marker_line(marker: str) -> int:
    for i, text in enumerate(PROGRAM.read_text().splitlines(), 1):
        if re.search(rf"#\s*{re.escape(marker)}\b", text):
            return i
    raise LookupError(f"{PROGRAM.name} has no line marked {marker}")


def _findings(session: Path, rule: str) -> list[dict]:
    """The findings of ``rule`` that today's rules derive from a saved run (those it saved were
    derived by the rules of its day)."""
    if not session.exists():
        return []
    found = derive(analyze(Session.load(session)))
    return [f.to_dict() for f in found if f.rule == rule]


def measure(case: Case, rounds: int, steps: int) -> dict:
    """The fix's gain per step, paired in one process (known_answers/suggest.py --paired)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p))
    r = subprocess.run(
        [sys.executable, str(PROGRAM), case.name, "--paired", str(rounds), "--steps", str(steps)],
        cwd=str(KNOWN), env=env, capture_output=True, text=True, timeout=600,
    )
    if r.returncode != 0:
        raise RuntimeError(f"suggest.py {case.name} --paired exited {r.returncode}: {r.stderr[-1500:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def run(case: Case, out: Path, steps: int, rounds: int) -> Outcome:
    """One outcome of ``case``: the program profiled as it is and fixed, and the fix measured."""
    out.mkdir(parents=True, exist_ok=True)
    args = [PROGRAM.name, case.name, "--steps", str(steps)]
    for name, extra in (("as-is", []), ("fixed", ["--fixed"])):
        profile([*args, *extra], out / f"{name}.json", ["--step-on", "step"])
    paired = measure(case, rounds, max(10, steps // 10))
    (out / "paired.json").write_text(json.dumps(paired))
    return judge(case, out)


def judge(case: Case, out: Path) -> Outcome:
    """The outcome of the runs saved in ``out`` (:func:`run`)."""
    found = _findings(out / "as-is.json", case.rule)
    paired = json.loads((out / "paired.json").read_text())
    lo, hi, _ = median_interval([r["unfixed_ns"] - r["fixed_ns"] for r in paired["rounds"]])
    best = max(found, key=lambda f: f["gain_ns"], default=None)
    line = marker_line(case.marker) if case.marker else 0
    return Outcome(
        case=case.name,
        found=best is not None,
        at_line=best is not None and (not line or (best.get("line") == line and best.get("file", "").endswith(PROGRAM.name))),
        on_fixed=bool(_findings(out / "fixed.json", case.rule)),
        estimate_ns=best["gain_ns"] if best else 0,
        measured_ns=paired["gain_ns"],
        step_ns=paired["unfixed_ns"],
        basis=best.get("basis", "") if best else "",
        measured_lo_ns=lo,
        measured_hi_ns=hi,
    )


def worth(o: Outcome) -> bool:
    """Whether the fix gained enough to be worth suggesting (the truth, measured)."""
    return o.measured_ns >= WORTH * o.step_ns


def truth_known(o: Outcome) -> bool:
    """Whether the paired rounds settle :func:`worth`: the interval of their median difference
    lies wholly on one side of the threshold. On a busy host the rounds can disagree by more
    than the step (a 0.8 ms step "gaining" -5.4 ms): such a run has no truth to judge by."""
    if o.measured_lo_ns == o.measured_hi_ns == 0.0:  # saved before the interval was kept
        return True
    threshold = WORTH * o.step_ns
    return o.measured_lo_ns >= threshold or o.measured_hi_ns < threshold


def estimate_right(case: Case, o: Outcome) -> bool:
    if not o.found or o.estimate_ns <= 0:
        return False
    if case.kind == "point":
        return abs(o.measured_ns - o.estimate_ns) <= POINT_TOLERANCE * o.estimate_ns
    if case.kind == "upper":
        return o.measured_ns <= (1 + BOUND_SLACK) * o.estimate_ns
    return o.measured_ns >= (1 - BOUND_SLACK) * o.estimate_ns


def rates(case: Case, outcomes: list[Outcome]) -> list[Rate]:
    n = len(outcomes)
    claim = {"point": f"estimate within {POINT_TOLERANCE:.0%} of the gain",
             "upper": f"gain at most the estimate (+{BOUND_SLACK:.0%})",
             "lower": f"gain at least the estimate (-{BOUND_SLACK:.0%})"}[case.kind]
    name = f"{case.name} ({case.rule}, {case.device})"
    known = [o for o in outcomes if truth_known(o)]
    gains = [o for o in known if worth(o)]
    little = [o for o in known if not worth(o)]
    found = [o for o in gains if o.found]
    rows = [
        Rate(name, f"suggested, at its line (the fix gained >= {WORTH:.0%})", sum(o.found and o.at_line for o in gains),
             len(gains), (">=", 0.95)),
        Rate(name, f"not suggested (the fix gained < {WORTH:.0%})", sum(not o.found for o in little), len(little),
             (">=", 0.95)),
        Rate(name, "not suggested once fixed", sum(not o.on_fixed for o in outcomes), n, (">=", 0.95)),
        Rate(name, f"{claim}, where suggested", sum(estimate_right(case, o) for o in found), len(found), (">=", 0.95)),
    ]
    return [r for r in rows if r.n]


def summary(case: Case, outcomes: list[Outcome]) -> str:
    """One line: estimate and measured gain per run (its rounds' interval; "?" where they leave
    the truth open), and their ratio's median."""
    pairs = ", ".join(
        f"{o.estimate_ns / 1e6:.2f}/{o.measured_ns / 1e6:.2f}"
        + ("" if truth_known(o) else f" ({o.measured_lo_ns / 1e6:.1f} to {o.measured_hi_ns / 1e6:.1f} ?)")
        for o in outcomes
    )
    ratios = [o.measured_ns / o.estimate_ns for o in outcomes if o.estimate_ns > 0]
    mid = f"{statistics.median(ratios):.2f}" if ratios else "-"
    step = statistics.median(o.step_ns for o in outcomes) / 1e6 if outcomes else 0
    return f"| {case.name} | {case.kind} | {step:.2f} | {pairs} | {mid} |"


SUMMARY_HEADER = (
    "| case | estimate | step (ms, untraced) | estimated/measured gain per run (ms/step) | measured / estimated, median |\n"
    "|---|---|---|---|---|"
)
