"""The GPU idle at the start of every step (data loading, host preprocessing) -> load in
DataLoader workers, prefetch, pinned non-blocking copies.

Gain per step: up to the GPU's measured idle time before the first GPU work of the step
(``meta.gpu_steps``): what overlapping the host's preparation with the previous step's GPU work
can hide. Reported when that idle time is at least 10% of the step. The line is the one the host
sampler found the step's thread in most while the GPU waited (:mod:`dlpt.analysis.host`; the
evidence names the busiest lines with their sampled time); without samples, the user's call into
``torch.utils.data`` when the run recorded one (a DataLoader's collate runs aten ops); otherwise
the finding is about the step as a whole.
"""

from __future__ import annotations

from typing import Any

from dlpt.analysis.finding import Finding
from dlpt.analysis.host import blamed, lines_text
from dlpt.analysis.idle import step_idle
from dlpt.analysis.inputs import Analysis
from dlpt.analysis.rules.common import CALIBRATED_BASIS, ms, significant, where, with_traced
from dlpt.model.tree import Node
from dlpt.trees.processors import is_library_frame

__all__ = ["data_loader_stall", "MIN_SHARE"]

MIN_SHARE = 0.1
_DATA = "/torch/utils/data/"


def _frame(n: dict[str, Any]) -> Node:
    return Node("frame", n["name"], n["file"], n["line"], None, n.get("x"))


def _loader_line(a: Analysis) -> Node | None:
    """The user's line that calls into torch.utils.data. The folded tree has folded the
    DataLoader's frames away, so they are looked for in the recorded node table; the line is
    their nearest caller in a user's file, a line the report shows."""
    nodes = a.session.nodes
    for n in nodes:
        if n["kind"] == "frame" and _DATA in n["file"].replace("\\", "/"):
            p = n["parent"]
            while p > 0 and (nodes[p]["kind"] != "frame" or is_library_frame(_frame(nodes[p]))):
                p = nodes[p]["parent"]
            if p > 0:
                return _frame(nodes[p])
    return None


def data_loader_stall(a: Analysis) -> list[Finding]:
    idle = max(step_idle(a), key=lambda s: s.busy_ns, default=None)
    if idle is None or idle.span_ns <= 0:
        return []
    share = idle.before_ns / idle.span_ns
    if share < MIN_SHARE or not significant(a, idle.before_ns):
        return []
    tr = idle.traced
    numbers: dict[str, float | int | str] = {
        "idle_before_ns": round(idle.before_ns),
        "span_ns": round(idle.span_ns),
    }
    if tr is not None:
        numbers["traced_gain_ns"] = round(tr.before_ns)
    before = with_traced(idle.before_ns, tr.before_ns if tr else None)
    span = with_traced(idle.span_ns, tr.span_ns if tr else None)
    evidence = (
        f"on GPU {idle.device}, {before} of each {span} step ({100 * share:.0f}%) pass before "
        "its first GPU work"
    )
    host = blamed(a, idle.device, "before")
    if host is not None:
        top = host.top()
        evidence += f"; meanwhile the host was in {lines_text(top, ms, with_gil=True)} (sampled)"
        numbers["host_line_ns"] = round(top[0].ns)
        line: Node | None = Node("frame", top[0].function, top[0].file, top[0].line)
    else:
        line = _loader_line(a)
    return [
        Finding(
            rule="data_loader_stall",
            title="The GPU waits at the start of every step (data loading or host work before its "
            "first kernel)",
            evidence=evidence,
            action="load and preprocess batches in DataLoader workers (num_workers > 0, pin_memory=True, "
            "persistent_workers=True, prefetch_factor) and copy them with non_blocking=True",
            basis="up to the GPU's idle time before the first GPU work of each step, measured per step"
            + (CALIBRATED_BASIS if tr is not None else ""),
            gain_ns=round(idle.before_ns),
            **where(line),
            numbers=numbers,
        )
    ]
