"""Stragglers on jobs of known truth (known_answers/ranks.py, two gloo ranks on the CPU): one
rank sleeping 10-30 ms before its all-reduce every step must be named with its sleeping line; two
symmetric ranks must name none; a job whose ranks counted no step must name no verdict.
bench/verdicts.py ranks runs each case several times."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from verdict_rates import Rate
from verdict_runs import KNOWN, REPO


@dataclass(frozen=True)
class Case:
    name: str
    steps: int
    sleeper: int  # -1: symmetric
    ms: float
    extra: tuple[str, ...] = ()  # dlpt options


CASES = [
    Case("symmetric, 40 steps", 40, -1, 0.0),
    Case("rank 1 sleeps 30 ms, 40 steps", 40, 1, 30.0),
    Case("rank 1 sleeps 10 ms, 40 steps", 40, 1, 10.0),
    Case("rank 1 sleeps 30 ms, 10 steps", 10, 1, 30.0),
    Case("symmetric, 10 steps", 10, -1, 0.0),
    # --skip-first past the run's end: every rank counts no step.
    Case("rank 1 sleeps 30 ms, no step counted", 10, 1, 30.0, ("--skip-first", "20")),
]


@dataclass
class Outcome:
    named: list[int]  # stragglers named
    lines: list[str]  # their first cause's source text
    unnamed: list[int]  # waited for, no line of its own
    unsure: list[int]  # ... of them: lines that stood out on too few samples (not decided)
    lacking: list[int]  # ranks without a counted step (no verdict)
    steps: list[int]


def run(case: Case, out: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           "-m", "dlpt", "-q", "--no-report", "--force", "-o", str(out), *case.extra,
           "ranks.py", str(case.steps), str(case.sleeper), str(case.ms)]
    r = subprocess.run(cmd, cwd=str(KNOWN), env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        sys.stderr.write(f"verdicts: ranks {case.name} exited {r.returncode}: {r.stderr[-2000:]}\n")
    return {"rc": r.returncode}


def judge(out: Path) -> Outcome:
    from dlpt.analysis.ranks.merge import rank_set
    from dlpt.views.ranks import ranks_view
    from dlpt.model.session import Session

    paths = sorted(out.parent.glob(out.stem + ".rank*.json"))
    rs = rank_set([(str(p), Session.load(str(p))) for p in paths])
    rep = ranks_view(rs)
    source = (KNOWN / "ranks.py").read_text().splitlines()
    texts = []
    for s in rep.stragglers:
        node = s.causes[0].node if s.causes else None
        line = node.line if node is not None and node.file.endswith("ranks.py") else 0
        texts.append(source[line - 1] if 0 < line <= len(source) else "")
    return Outcome(
        [s.rank for s in rep.stragglers], texts, [s.rank for s in rep.unnamed], [s.rank for s in rep.unnamed if s.unsure],
        list(rep.lacking), [t.counted for t in rep.per_rank.values()],
    )


def rates(case: Case, outs: list[Outcome]) -> list[Rate]:
    n = len(outs)
    if case.extra:
        return [Rate(case.name, "no verdict, the ranks without steps named",
                     sum(1 for o in outs if not o.named and not o.unnamed and o.lacking == [0, 1]), n, (">=", 0.95))]
    if case.sleeper < 0:
        return [
            Rate(case.name, "a straggler named", sum(1 for o in outs if o.named), n, ("<=", 0.05)),
            Rate(case.name, "a rank waited for, not named (slower, or no line)", sum(1 for o in outs if o.unnamed), n),
            Rate(case.name, "... of them not decided (a line on too few samples or too uneven steps)", sum(1 for o in outs if o.unsure), n),
        ]
    return [
        Rate(case.name, f"rank {case.sleeper} named", sum(1 for o in outs if o.named == [case.sleeper]), n, (">=", 0.95)),
        Rate(case.name, "... with LINE-SLEEP as its line",
             sum(1 for o in outs if o.named == [case.sleeper] and "LINE-SLEEP" in (o.lines[0] if o.lines else "")),
             n, (">=", 0.95)),
        Rate(case.name, "the other rank named", sum(1 for o in outs if any(r != case.sleeper for r in o.named)), n,
             ("<=", 0.05)),
    ]
