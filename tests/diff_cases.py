"""Synthetic pairs of runs for ``dlpt diff``'s verdicts, whose truth is set by construction (a
line made k times heavier, a slower host), with the noise a shared host gives: per step (each
line +-10%, every line together +-5%) and per run (every line together: the host's load during
that run; each line on its own: the load landing unevenly on the lines, ``line_run``). The
node's ``m`` and ``q`` are what the native core records: the per-step sum and sum of squares."""

from __future__ import annotations

import math
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
    nodes = _top_nodes()
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


def _top_nodes() -> list[dict[str, Any]]:
    """The root and the script's frame that every line of a made-up session sits under."""
    return [
        {"id": 0, "parent": -1, "kind": "root", "name": "<root>", "file": "", "line": 0, "m": {}},
        {"id": 1, "parent": 0, "kind": "frame", "name": "main", "file": "/p/train.py", "line": 10, "m": {}},
    ]


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


CPU = METRICS["cpu"]


def busy_cpu_session(
    seed: int,
    calls: list[int],
    heavier: dict[int, float] | None = None,
    steps: int = 40,
    host: float = 1.0,
    call_us: float = 20.0,
    slices: float = 0.5,
    slice_us: float = 3000.0,
    land: list[float] | None = None,
) -> Session:
    """A CPU run on a busy host: line i makes ``calls[i]`` op calls a step (times ``heavier[i]``)
    of ``call_us`` each (times ``host``), every call +-10%; each run as a whole faster or slower
    by +-20% (the host's load during it) and each line by +-4% more on its own (what the floors
    of lines.py's lines did between runs on the busy 2-core machine: docs/numbers.md). The host
    preempts the program ``slices`` times a step on average, each a scheduler slice of about
    ``slice_us`` landing on one call (a line picked by its share of the time): that call's time
    grows by it, its line's fastest call does not (``land``: weights of the lines the slices land
    on instead, a host whose load fell on some of them). ``m`` has the op's calls, CPU time and floor
    (``cpu_floor_ns``: calls x the fastest call), ``q`` the per-step squares of the CPU time."""
    rng = random.Random(seed)
    run = host * math.exp(rng.gauss(0, 0.2))
    n_calls = [round(c * (heavier or {}).get(i, 1.0)) for i, c in enumerate(calls)]
    per_call = [call_us * 1000 * run * math.exp(rng.gauss(0, 0.04)) for _ in calls]
    per_step: list[list[float]] = [[] for _ in calls]
    fastest = [math.inf for _ in calls]
    weights = land or [n * u for n, u in zip(n_calls, per_call, strict=True)]
    for _ in range(steps):
        step = [0.0 for _ in calls]
        for i, n in enumerate(n_calls):
            for _ in range(n):
                t = per_call[i] * (1 + rng.uniform(-0.1, 0.1))
                fastest[i] = min(fastest[i], t)
                step[i] += t
        for _ in range(_poisson(rng, slices)):
            step[rng.choices(range(len(calls)), weights)[0]] += slice_us * 1000 * rng.uniform(0.5, 1.5)
        for i, x in enumerate(step):
            per_step[i].append(x)
    return _cpu_session(
        [
            (
                n_calls[i] * steps,
                {"cpu_ns": round(sum(xs)), "cpu_floor_ns": round(n_calls[i] * steps * fastest[i])},
                float(sum(x * x for x in xs)),
            )
            for i, xs in enumerate(per_step)
        ],
        steps,
    )


# Measured busy-host runs of lines.py (bench/verdicts.py's machine, both cores busy): each line's
# (mean us per step, per-step sd us, floor us per step, op calls). The base, whose means a few
# stalls of seconds stretched 24x past their floors...
BASE_STALLED = [(19876.3, 32381.3, 524.3, 2592), (89703.4, 124916.1, 3802.7, 15360),
                (24558.0, 42180.6, 1286.0, 5120), (279.7, 806.5, 32.6, 96), (8.2, 3.4, 6.2, 32)]  # fmt: skip
# ...and two runs of every line made 1.3x heavier (a slower host), one less stalled than the base.
HEAVIER_STALLED = [(15382.8, 26776.4, 674.4, 3465), (76116.9, 88755.8, 4801.4, 20592),
                   (25940.3, 32437.3, 1596.8, 6864), (60.5, 3.2, 50.5, 99), (8.4, 2.1, 6.1, 33)]  # fmt: skip
HEAVIER_CALMER = [(5960.0, 3014.9, 672.4, 3465), (29767.2, 5255.1, 4906.0, 20592),
                  (14772.9, 16557.7, 1666.1, 6864), (180.0, 428.7, 30.0, 99),
                  (8.4, 1.8, 6.5, 33)]  # fmt: skip


def measured_cpu_session(lines: list[tuple[float, float, float, int]], steps: int) -> Session:
    """A CPU run as measured: line i's (mean us per step, per-step sd us, floor us per step, op
    calls in the run), at /p/train.py:100+i, shaped as busy_cpu_session's."""
    return _cpu_session(
        [
            (
                calls,
                {"cpu_ns": round(mean * 1000 * steps), "cpu_floor_ns": round(floor * 1000 * steps)},
                steps * ((sd * 1000) ** 2 + (mean * 1000) ** 2),
            )
            for mean, sd, floor, calls in lines
        ],
        steps,
    )


def _cpu_session(lines: list[tuple[int, dict[str, int], float]], steps: int) -> Session:
    """A CPU run of ``steps`` steps whose line i (/p/train.py:100+i) makes one op: (its calls in
    the run, its forward phase's metrics, the per-step sum of squares of its CPU time)."""
    nodes = _top_nodes()
    for i, (calls, m, squares) in enumerate(lines):
        frame = len(nodes)
        nodes.append(
            {
                "id": frame,
                "parent": 1,
                "kind": "frame",
                "name": "main",
                "file": "/p/train.py",
                "line": 100 + i,
                "m": {},
            }
        )
        nodes.append(
            {
                "id": frame + 1,
                "parent": frame,
                "kind": "op",
                "name": "aten::mm",
                "file": "",
                "line": 0,
                "m": {"calls": calls},
            }
        )
        nodes.append(
            {
                "id": frame + 2,
                "parent": frame + 1,
                "kind": "phase",
                "name": "<forward>",
                "file": "",
                "line": 0,
                "m": m,
                "q": {"cpu_ns": squares},
            }
        )
    meta = {"steps": {"profiled": steps}}
    return Session.from_dict({"format": "dlpt-session", "version": 3, "meta": meta, "nodes": nodes})


def _poisson(rng: random.Random, mean: float) -> int:
    n, t = 0, rng.expovariate(1.0)
    while t < mean:
        n, t = n + 1, t + rng.expovariate(1.0)
    return n


def cpu_verdicts(a: Session, b: Session) -> tuple[str, dict[int, tuple[str, str]]]:
    """The run shift's verdict and each line's (0-based) (verdict, basis) that is not "same"."""
    d = diff_sessions(a, b)
    shift, changes = d.judge(CPU)
    out = {}
    for row in d.rows:
        c = changes.get(row.key)
        one = row.a or row.b
        if c is not None and one is not None and one.line >= 100 and c.verdict != "same":
            out[one.line - 100] = (c.verdict, c.basis)
    return (shift.verdict if shift is not None else "not tested"), out
