"""An optimizer stepping parameter by parameter (neither ``foreach`` nor ``fused``) ->
``fused=True`` (Adam, AdamW, SGD, Adagrad) or ``foreach=True``.

The for-loop implementation issues a handful of ops per parameter, each with its own launch, so
the step is bound by the host. Gain per step, from measured numbers: the optimizer's ops take
``C`` of host time per step (their CPU op time) for ``N`` op calls of ``K`` kinds and launch
``G`` of GPU kernel time. Multi-tensor (foreach) code issues one call per kind instead of one per
parameter, about ``C x K / N``; the GPU still has to move the same bytes, assumed to take ``G``
again. The step's optimizer part goes from ``max(C, G)`` to ``max(C x K / N, G)``. Python
overhead between the calls is not in ``C``, so this is conservative. GPU runs only: on the CPU
the ops' time is the update's arithmetic, which multi-tensor code does not remove.
"""

from __future__ import annotations

from dlpt.analysis.finding import Finding
from dlpt.analysis.inputs import Analysis, user_line
from dlpt.analysis.rules.common import ms, significant, where
from dlpt.model.tree import Node, walk

__all__ = ["optimizer_loop"]

_PREFIX = "Optimizer.step#"
_FUSED = ("Adam", "AdamW", "SGD", "Adagrad")
#: Op calls per step below this are not a per-parameter loop worth reporting.
MIN_CALLS = 8


def optimizer_loop(a: Analysis) -> list[Finding]:
    if not any(name.startswith(_PREFIX) for name in a.recorded.get("scope", ())):
        return []
    out = []
    for node, _ in a.lines:
        if node.kind != "scope" or not node.name.startswith(_PREFIX):
            continue
        ops = [n for n, _ in walk(node) if n.kind == "op"]
        names = {o.name for o in ops}
        if any(n.startswith(("aten::_foreach_", "aten::_fused_")) for n in names):
            continue  # already multi-tensor or fused
        top = [o for o in ops if o.parent is not None and o.parent.kind not in ("op", "phase")]
        calls = sum(o.metrics.get("calls", 0) for o in top or ops) / a.per
        kinds = len({o.name for o in top or ops})
        if calls < MIN_CALLS or not kinds:
            continue
        if not node.inclusive.get("kernels"):
            continue  # a CPU run: its op time is the update's arithmetic, not per-call overhead
        cpu = node.inclusive.get("cpu_ns", 0) / a.per
        gpu = node.inclusive.get("gpu_ns", 0) / a.per
        after = max(cpu * kinds / calls, gpu)
        gain = max(cpu, gpu) - after
        if not significant(a, gain):
            continue
        cls = node.name[len(_PREFIX) :].split(".")[0]
        flag = "fused=True" if cls in _FUSED else "foreach=True"
        out.append(_finding(a, node, cls, flag, calls, kinds, cpu, gpu, after, gain))
    return out


def _finding(
    a: Analysis,
    node: Node,
    cls: str,
    flag: str,
    calls: float,
    kinds: int,
    cpu: float,
    gpu: float,
    after: float,
    gain: float,
) -> Finding:
    return Finding(
        rule="optimizer_loop",
        title=f"{cls} steps one parameter at a time (no foreach, no fused)",
        evidence=f"{calls:.0f} op calls of {kinds} kinds per step: {ms(cpu)} of host op time for "
        f"{ms(gpu)} of GPU kernels",
        action=f"torch.optim.{cls}(..., {flag})",
        basis=f"one call per kind instead of per parameter: host op time {ms(cpu)} x "
        f"{kinds}/{calls:.0f}; the kernels' {ms(gpu)} kept: {ms(max(cpu, gpu))} -> {ms(after)}",
        gain_ns=round(gain),
        per_step=a.steps > 0,
        **where(user_line(node)),
        numbers={
            "calls": calls,
            "kinds": kinds,
            "cpu_ns": round(cpu),
            "gpu_ns": round(gpu),
            "after_ns": round(after),
        },
    )
