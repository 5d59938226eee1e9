"""Synthetic pairs of runs for ``dlpt diff``'s verdicts, whose truth is set by construction (a
line made k times heavier, a slower host), with the noise a shared host gives: per step (each
line +-10%, every line together +-5%) and per run (every line together: the host's load during
that run; each line on its own: the load landing unevenly on the lines, ``line_run``). The
node's ``m`` and ``q`` are what the native core records: the per-step sum and sum of squares."""

from __future__ import annotations

import random
from typing import Any

from dlpt.analysis.diff import diff_sessions
from dlpt.model.metrics import METRICS
from dlpt.model.session import Session

GPU = METRICS["gpu"]


def session(
    seed: int,
    costs: list[float],
    heavier: dict[int, float] | None = None,
    steps: int = 50,
    host: float = 1.0,
    line_run: float = 0.03,
    moments: bool = True,
) -> Session:
    """A run of ``steps`` steps whose line i costs ``costs[i]`` us per step (times ``heavier[i]``,
    times ``host``), with the noise above; line i is at /p/model.py:100+i, one kernel each."""
    rng = random.Random(seed)
    run_factor = [
        host * (1 + rng.gauss(0, line_run)) * (heavier or {}).get(i, 1.0) for i in range(len(costs))
    ]
    per_line: list[list[int]] = [[] for _ in costs]
    for _ in range(steps):
        shared = 1 + rng.gauss(0, 0.05)
        for i, c in enumerate(costs):
            per_line[i].append(max(0, round(c * 1000 * run_factor[i] * shared * (1 + rng.gauss(0, 0.10)))))
    nodes: list[dict[str, Any]] = [
        {"id": 0, "parent": -1, "kind": "root", "name": "<root>", "file": "", "line": 0, "m": {}},
        {"id": 1, "parent": 0, "kind": "frame", "name": "main", "file": "/p/train.py", "line": 10, "m": {}},
    ]
    for i, xs in enumerate(per_line):
        frame = len(nodes)
        nodes.append(
            {
                "id": frame,
                "parent": 1,
                "kind": "frame",
                "name": "forward",
                "file": "/p/model.py",
                "line": 100 + i,
                "m": {},
            }
        )
        kernel: dict[str, Any] = {
            "id": frame + 1,
            "parent": frame,
            "kind": "kernel",
            "name": f"kernel_{i}",
            "file": "",
            "line": 0,
            "m": {"gpu_ns": sum(xs), "kernels": steps},
        }
        if moments:
            kernel["q"] = {"gpu_ns": float(sum(x * x for x in xs))}
        nodes.append(kernel)
    meta = {"steps": {"profiled": steps}}
    return Session.from_dict({"format": "dlpt-session", "version": 3, "meta": meta, "nodes": nodes})


def verdicts(a: Session, b: Session) -> tuple[str, dict[int, str]]:
    """The run shift's verdict and each model line's (0-based) verdict that is not "same"."""
    d = diff_sessions(a, b)
    shift, changes = d.judge(GPU)
    out = {}
    for row in d.rows:
        c = changes.get(row.key)
        one = row.a or row.b
        if c is not None and one is not None and c.verdict != "same":
            out[one.line - 100] = c.verdict
    return (shift.verdict if shift is not None else "not tested"), out
