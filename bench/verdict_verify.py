"""``dlpt verify``'s exit status on pairs of known truth (bench/verdicts.py verify): a base run of
known_answers/lines.py, then ``dlpt verify base.json -- lines.py ...`` with one line made heavier
(right: 1), the same program (right: 0) or every line heavier together (a slower host; right: 0).
Exit 3 ("can't tell") is never right and never wrong: it is counted apart, as the share of pairs
the gate could not decide, beside the share it decided right. Base counts: verdict_diff.BASE."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from verdict_diff import CASES, Case, case_args
from verdict_rates import Rate
from verdict_runs import KNOWN, REPO

__all__ = ["PICKED", "Outcome", "verify", "rates"]

#: The cases verify is measured on (40-step runs): A/A, one line 1.5x and 2x, a slower host.
PICKED = [c for c in CASES if c.steps == 40 and not c.name.endswith("x1.25")]


@dataclass
class Outcome:
    status: int
    runs: int
    seconds: float
    load: float
    reasons: list[str]


def right_status(case: Case) -> int:
    return 1 if case.changed is not None else 0


def verify(base: Path, case: Case, out: Path, runs: int) -> Outcome:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p))
    cmd = [sys.executable, "-m", "dlpt", "verify", str(base), "--json", "--runs", str(runs), "-o", str(out),
           "--", *case_args(case)]
    load, t0 = os.getloadavg()[0], time.perf_counter()
    r = subprocess.run(cmd, cwd=str(KNOWN), env=env, capture_output=True, text=True, timeout=1800)
    v = json.loads(r.stdout) if r.stdout.strip().startswith("{") else {"runs": [], "reasons": [r.stderr[-300:]]}
    return Outcome(r.returncode, len(v["runs"]), time.perf_counter() - t0, load, v["reasons"])


def rates(case: Case, outcomes: list[Outcome]) -> list[Rate]:
    n, want = len(outcomes), right_status(case)
    decided = [o for o in outcomes if o.status in (0, 1)]
    return [
        Rate(case.name, f"exit {want} (right)", sum(o.status == want for o in outcomes), n, (">=", 0.95)),
        Rate(case.name, f"exit {1 - want} (wrong)", sum(o.status == 1 - want for o in outcomes), n, ("<=", 0.05)),
        Rate(case.name, "exit 3 (can't tell)", sum(o.status == 3 for o in outcomes), n),
        Rate(case.name, "right, of the pairs decided", sum(o.status == want for o in decided), len(decided)),
    ]

