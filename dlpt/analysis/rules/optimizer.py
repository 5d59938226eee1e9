"""An optimizer stepping parameter by parameter (neither ``foreach`` nor ``fused``) ->
``fused=True`` (Adam, AdamW, SGD, Adagrad) or ``foreach=True``.

The for-loop implementation issues a handful of ops per parameter, each with its own launch, so
the step is bound by the host. Gain per step, from measured numbers: the optimizer's ops take
``C`` of host time per step (their CPU op time) for ``N`` op calls of ``K`` kinds and launch
``G`` of GPU kernel time. Multi-tensor (foreach) code issues one call per kind instead of one per
parameter, about ``C x K / N``; the GPU still has to move the same bytes, assumed to take ``G``
again. The step's optimizer part goes from ``max(C, G)`` to ``max(C x K / N, G)``. Python
overhead between the calls is not in ``C``, so this is conservative.

On the CPU (no kernels) the ops' time is the update's arithmetic, which multi-tensor code does
not remove; what it removes is the Python of the per-parameter loop (``_single_tensor_adam``)
between the ops. The host sampler measures it: the step's thread's time under the optimizer's
step (``H``) beyond its ops' time (``C``), less dlpt's own cost on the optimizer's calls (``D``:
the op callbacks run between the ops too; from the calibration, or from its largest untraced
window where it has fewer than the header needs). Gain: ``(H - C - D) x (1 - K / N)``,
conservative again: multi-tensor code also saves the per-call dispatch inside ``C``. Without an
untraced window there is no ``D``: the gain is as traced, and the evidence says it holds that cost;
measured by bench/verdicts.py suggest, ``H - C`` alone promised 1.45-1.5x what ``foreach=True``
gained. ``H`` is a count of host samples and ``C`` is exact, so their difference carries the
count's noise (a count of c samples varies by sqrt(c)): the Python between the ops must stand
``PYTHON_Z`` deviations out of it. The README's command (SGD over 6 parameters) was promised
184 µs a step from 236 µs of "Python between the ops" that was ±120 µs of sampling noise;
``foreach=True`` gained -80 to +20 µs there in 8 runs (the multi-tensor code has Python of its
own, which a few parameters do not repay). Without the sampler (``--sample-hz 0``) there is no
evidence, and no finding (issue 33: on the CPU no rule fired).
"""

from __future__ import annotations

import math

from dlpt.analysis.finding import Finding
from dlpt.analysis.inputs import Analysis, user_line
from dlpt.analysis.rules.common import ms, own_cost_on, significant, where
from dlpt.model.tree import Node, walk

__all__ = ["optimizer_loop"]

_PREFIX = "Optimizer.step#"
_FUSED = ("Adam", "AdamW", "SGD", "Adagrad")
#: Op calls per step below this are not a per-parameter loop worth reporting.
MIN_CALLS = 8
#: Deviations of the host samples' count noise the Python between the ops must stand out of (as
#: the ranks' OWN_LINE_Z: a sampled figure is news only well beyond sqrt(count)).
PYTHON_Z = 3.0


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
        cls = node.name[len(_PREFIX) :].split(".")[0]
        cpu = node.inclusive.get("cpu_ns", 0) / a.per
        if not node.inclusive.get("kernels"):
            found = _cpu_finding(a, node, cls, calls, kinds, cpu)
            out.extend([found] if found is not None else [])
            continue
        gpu = node.inclusive.get("gpu_ns", 0) / a.per
        after = max(cpu * kinds / calls, gpu)
        gain = max(cpu, gpu) - after
        if not significant(a, gain):
            continue
        flag = "fused=True" if cls in _FUSED else "foreach=True"
        out.append(_finding(a, node, cls, flag, calls, kinds, cpu, gpu, after, gain))
    return out


def _sampling_noise(a: Analysis, host_per_step: float) -> float:
    """The standard deviation, per step, of a sampled host time of ``host_per_step``: sqrt(c)
    samples of c, each one sampling period (infinite, i.e. never news, without a known rate)."""
    rate = a.meta.host.sample_hz if a.meta.host is not None else None
    if not rate:
        return math.inf
    period = 1e9 / rate
    return math.sqrt(host_per_step * a.per * period) / a.per


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


def _cpu_finding(a: Analysis, node: Node, cls: str, calls: float, kinds: int, cpu: float) -> Finding | None:
    """The CPU run's finding (module docstring): the sampled Python between the ops, less dlpt's
    own cost on them, when it stands out of the samples' noise and its gain is worth a line."""
    host = node.inclusive.get("host_ns", 0) / a.per
    own = own_cost_on(a, node.inclusive.get("calls", 0) / a.per)
    python = max(0.0, host - cpu - (own or 0.0))
    gain = python * (1 - kinds / calls)
    if not host or not significant(a, gain) or python < PYTHON_Z * _sampling_noise(a, host):
        return None
    if own is None:
        less = "dlpt's own cost on its calls is in it (not measured in this run)"
    else:
        less = f"less dlpt's own cost on its calls ({ms(own)}, from the untraced steps)"
    return Finding(
        rule="optimizer_loop",
        title=f"{cls} steps one parameter at a time (no foreach): Python between its ops",
        evidence=f"{calls:.0f} op calls of {kinds} kinds per step; the step's thread spent {ms(host)} "
        f"in the optimizer's step, {ms(cpu)} of it in the ops: {ms(python)} of Python between them, {less}",
        action=f"torch.optim.{cls}(..., foreach=True)",
        basis=f"sampled host time: the Python between the ops, {ms(python)}, once per kind instead of "
        f"once per parameter ({kinds}/{calls:.0f} of it); the ops' arithmetic ({ms(cpu)}) is kept",
        gain_ns=round(gain),
        per_step=a.steps > 0,
        **where(user_line(node)),
        numbers={
            "calls": calls,
            "kinds": kinds,
            "cpu_ns": round(cpu),
            "host_ns": round(host),
            **({"own_cost_ns": round(own)} if own is not None else {}),
        },
    )
