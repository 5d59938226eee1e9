"""A launch-bound step (many short kernels, the GPU idle between them) -> CUDA graphs
(``torch.compile(mode="reduce-overhead")``, ``torch.cuda.graphs``) or fewer, bigger kernels
(``torch.compile``).

The GPU finishes each kernel before the host has launched the next. Replaying the step as a CUDA
graph launches all its kernels at once; it cannot make the kernels themselves faster. Gain per
step: up to the GPU's measured idle time between kernels (``meta.gpu_steps``), the part of the
step a graph replay removes. Not reported when most GPU time already comes from graph replays.
The line is the step's call (what a graph would capture); with host samples the evidence names
the lines the step's thread was in while the GPU idled between kernels (:mod:`dlpt.analysis.host`).
"""

from __future__ import annotations

from dlpt.analysis.finding import Finding
from dlpt.analysis.host import blamed, lines_text
from dlpt.analysis.idle import StepIdle, step_idle
from dlpt.analysis.inputs import Analysis
from dlpt.analysis.rules.common import CALIBRATED_BASIS, ms, significant, where, with_traced
from dlpt.model.metrics import METRICS
from dlpt.model.source_files import file_kind
from dlpt.model.tree import Node

__all__ = ["launch_bound", "step_line"]


def step_line(root: Node, share: float = 0.8) -> Node | None:
    """The innermost user line that launches at least ``share`` of all kernels: the call of the
    step (or the loop body) that a CUDA graph would capture. A line of the user's own code, not
    of an installed package kept as model code below it (``model.generate(...)``, not
    ``modeling_layers.py GradientCheckpointingLayer.__call__``: issue 33); a package's line
    only when no user line launches them."""
    total = root.inclusive.get("kernels", 0)
    if not total:
        return None
    best: Node | None = None
    other: Node | None = None  # the innermost such line of any file
    node = root
    while True:
        nxt = next(
            (
                c
                for c in node.children
                if c.inclusive.get("kernels", 0) >= share * total and c.kind in ("frame", "scope")
            ),
            None,
        )
        if nxt is None:
            return best or other
        node = nxt
        if node.kind == "frame":
            if file_kind(node.file) == "user":
                best = node
            else:
                other = node


def _replayed(a: Analysis) -> bool:
    replay = (a.meta.cuda_graphs or {}).get("replay_gpu_ns", 0)
    return replay > 0.5 * METRICS["gpu"](a.totals)


def launch_bound(a: Analysis) -> list[Finding]:
    idle: StepIdle | None = max(step_idle(a), key=lambda s: s.busy_ns, default=None)
    if idle is None or not idle.launch_bound or _replayed(a) or not significant(a, idle.between_ns):
        return []
    share = idle.between_ns / idle.span_ns
    tr = idle.traced
    numbers: dict[str, float | int | str] = {
        "between_ns": round(idle.between_ns),
        "span_ns": round(idle.span_ns),
        "busy_ns": round(idle.busy_ns),
        "kernels": idle.kernels,
        "mean_kernel_ns": round(idle.mean_kernel_ns),
    }
    if tr is not None:
        numbers["traced_gain_ns"] = round(tr.between_ns)
    span = with_traced(idle.span_ns, tr.span_ns if tr else None)
    between = with_traced(idle.between_ns, tr.between_ns if tr else None)
    evidence = (
        f"{idle.kernels:.0f} kernels per step, {ms(idle.mean_kernel_ns)} each on average; "
        f"on GPU {idle.device} each step spans {span}, of which the GPU works {ms(idle.busy_ns)} and "
        f"idles {between} between kernels ({100 * share:.0f}%)"
    )
    line = step_line(a.root)
    host = blamed(a, idle.device, "between")
    if host is not None:
        evidence += f"; meanwhile the host was in {lines_text(host.top(), ms, with_gil=True)} (sampled)"
        if line is None:
            top = host.top()[0]
            line = Node("frame", top.function, top.file, top.line)
    return [
        Finding(
            rule="launch_bound",
            title="Launch-bound step: many short kernels, the GPU idle between them",
            evidence=evidence,
            action='capture the step as a CUDA graph (torch.compile(mode="reduce-overhead"), or '
            "torch.cuda.graphs for static shapes) or fuse its small ops (torch.compile)",
            basis="up to the GPU's idle time between kernels, measured per step; a graph replay removes the "
            "launch gaps, not the kernels' own time" + (CALIBRATED_BASIS if tr is not None else ""),
            gain_ns=round(idle.between_ns),
            **where(line),
            numbers=numbers,
        )
    ]
