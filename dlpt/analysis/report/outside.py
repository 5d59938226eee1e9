"""Work outside counted steps: the program's set-up before its first counted step, the warm-up
steps, the time between calls of a ``step_on`` function and the end of the run. It is once-work,
never divided by the number of steps: the report says how much there was and which lines did
most of it (the terminal shows its whole tree under "Outside steps")."""

from __future__ import annotations

import os
from dataclasses import replace

from dlpt.analysis.report.model import Fact
from dlpt.model.metrics import METRICS, Metric
from dlpt.model.session import Session
from dlpt.model.tree import Node
from dlpt.model.units import PLAIN
from dlpt.trees.folding import FoldedTable
from dlpt.trees.processors import flatten_by_line

__all__ = ["outside_tree", "outside_metric", "outside_facts", "one_outside_line", "TOP_LINES"]

#: Lines named in the header.
TOP_LINES = 3


def outside_tree(session: Session, show_all: bool = False) -> Node | None:
    """The folded tree of the work outside counted steps, or None when there was none."""
    if not any(n.get("o") for n in session.nodes):
        return None
    return FoldedTable(session, show_all, field="o").tree()


def outside_metric(root: Node) -> Metric:
    """GPU time when the work outside steps used the GPU, else CPU op time."""
    return METRICS["gpu"] if METRICS["gpu"](root.inclusive) > 0 else METRICS["cpu"]


def outside_facts(root: Node | None) -> list[Fact]:
    """How much work ran outside counted steps, and the lines that did most of it."""
    if root is None:
        return []
    inc = root.inclusive
    m = outside_metric(root)
    parts = []
    if METRICS["gpu"](inc):
        parts.append(f"GPU {PLAIN.time(METRICS['gpu'](inc))}")
    if inc.get("cpu_ns"):
        parts.append(f"CPU ops {PLAIN.time(inc['cpu_ns'])}")
    if not parts:
        return []
    rows = sorted(flatten_by_line(root), key=lambda r: -m(r.inclusive))
    top = [
        f"{os.path.basename(r.node.file) or r.node.file}:{r.node.line} {PLAIN.value(m, m(r.inclusive))}"
        for r in rows[:TOP_LINES]
        if m(r.inclusive) > 0
    ]
    value = ", ".join(parts) + (f"; most at {', '.join(top)}" if top else "")
    return [
        Fact("outside_work", f"work outside steps (once): {value}", label="work outside steps", value=value)
    ]


def one_outside_line(facts: list[Fact]) -> list[Fact]:
    """The time outside counted steps (``outside``, :func:`dlpt.analysis.report.run.once_facts`)
    and the work done there (``outside_work``) as one fact: a report says "outside steps (once)"
    once (issue 33)."""
    when = next((f for f in facts if f.kind == "outside"), None)
    work = next((f for f in facts if f.kind == "outside_work"), None)
    if when is None or work is None:
        return facts
    value = f"{when.value}; {work.label}: {work.value}"
    merged = replace(when, text=f"outside steps (once): {value}", value=value)
    return [merged if f is when else f for f in facts if f is not work]
