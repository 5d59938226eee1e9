"""The fact that says which op mode a session ran (``meta.capture.op_mode``; docs/overhead.md,
issue 50) and what its CPU op time rests on: in the lean mode (the GPU default) every kernel,
copy, memset and sync keeps its exact line and op, but the ops that launched nothing got no node,
so their CPU time is only in the sampled host time; in the exact mode every op's CPU time and
calls are on its line. Sessions saved before the modes existed say nothing."""

from __future__ import annotations

from dlpt.analysis.host import sampler_info
from dlpt.analysis.report.model import Fact
from dlpt.model.meta import Capture, Meta

__all__ = ["op_mode_facts"]


def _sampled_by(meta: Meta) -> tuple[str, bool]:
    """What the CPU time of the ops that launched nothing rests on, and whether anything does."""
    info = sampler_info(meta)
    if info is None or not info.sampling or not info.hz:
        return "nothing: the host sampler was off (--sample-hz)", False
    return f"the host sampler's time per line ({info.hz:,} Hz, {info.samples:,} stacks)", True


def op_mode_facts(meta: Meta) -> list[Fact]:
    """One ``ops`` fact: the mode, and for the lean mode how many op calls went without a node."""
    c = meta.capture or Capture()
    mode = c.op_mode
    if mode == "exact":
        value = "exact - every op's CPU time and calls on its line (each op start walked the Python stack)"
        return [Fact("ops", f"ops: {value}", "dim", "ops", value)]
    if mode != "lean":
        return []
    deferred = c.deferred_ops or 0
    placed = (c.deferred_at_launch or 0) + (c.deferred_at_end or 0)
    unplaced = max(0, deferred - placed)
    share = f" ({100 * unplaced / deferred:.0f}%)" if deferred else ""
    rests_on, sampled = _sampled_by(meta)
    value = (
        "lean - kernels, copies, memsets and syncs on their exact lines and ops; "
        f"{unplaced:,} of {deferred:,} op calls{share} launched nothing and have no op node: "
        f"their CPU time is in {rests_on}, not in CPU ops (--exact-ops records every op)"
    )
    return [Fact("ops", f"ops: {value}", "dim" if sampled or not unplaced else "note", "ops", value)]
