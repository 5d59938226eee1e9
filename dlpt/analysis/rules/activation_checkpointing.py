"""Activations of one module dominate the memory peak (or what was live when an allocation
failed) -> activation checkpointing at that module's call.

Evidence (``--memory``): the bytes that the forward ops beneath a line calling a module
(``x = block(x)``: a frame whose callee is a ``forward``) allocated and that were still live at
the step's peak, i.e. activations saved for backward, held on their forward lines. With an
allocation failure, the bytes live at the failure instead. A line is suggested when those bytes
are at least a quarter of the peak allocated (of the allocated total at the failure) and 1 MiB.
Of nested lines, the outer one is suggested unless the lines beneath it hold most of its bytes
(two thirds): the model call (``logits = model(x)``) gives way to its blocks (``x = block(x)``,
80% of it in examples/gpu_gpt.py on the CPU), but a block is not split into its MLP (62% of it
there) and the rest, since checkpointing the whole block frees more for the same recomputation.

Gain: up to those bytes off the peak. Checkpointing keeps the module's inputs and recomputes its
forward during backward, so the saving is at most this and the step pays about the module's
forward time again (the forward time beneath the line, measured, is given as the cost).
"""

from __future__ import annotations

from dlpt.analysis.finding import Finding
from dlpt.analysis.inputs import Analysis
from dlpt.analysis.memory import device_peaks, has_memory, in_forward, oom_of
from dlpt.analysis.rules.common import ms, per_step_text, size, where
from dlpt.model.metrics import METRICS
from dlpt.model.tree import Node

__all__ = ["activation_checkpointing", "MIN_SHARE", "MIN_BYTES"]

MIN_SHARE = 0.25
MIN_BYTES = 1 << 20
INNER_SHARE = 2 / 3  # of an outer line's bytes that the candidate lines beneath it must hold to replace it
_MAX_FINDINGS = 2


def _callee(frame: Node) -> str | None:
    """The module whose forward ``frame``'s line calls (``Block`` for ``Block.forward``), if any."""
    for c in frame.children:
        if c.kind == "frame" and c.name.rsplit(".", 1)[-1] == "forward":
            return c.name.rsplit(".", 1)[0] if "." in c.name else c.name
    return None


def _above(upper: Node, node: Node) -> bool:
    """Whether ``upper`` is an ancestor of ``node``."""
    p = node.parent
    while p is not None:
        if p is upper:
            return True
        p = p.parent
    return False


def _forward_bytes(a: Analysis, key: str) -> dict[int, tuple[Node, float, float]]:
    """Per frame node (by id): (node, forward bytes of ``key`` beneath it, forward time beneath it)."""
    time = METRICS["gpu"] if a.gpu else METRICS["cpu"]
    out: dict[int, tuple[Node, float, float]] = {}
    for node, _line in a.lines:
        nbytes = node.metrics.get(key, 0)
        t = time(node.metrics)
        if not (nbytes or t) or not in_forward(node):
            continue
        p = node.parent
        while p is not None:
            if p.kind == "frame":
                _, b0, t0 = out.get(id(p), (p, 0.0, 0.0))
                out[id(p)] = (p, b0 + nbytes, t0 + t)
            p = p.parent
    return out


Candidate = tuple[Node, float, float]  # (line's frame node, bytes per step, forward time per step)


def _chosen(cands: list[Candidate]) -> list[Candidate]:
    """Of nested candidates, the outermost, unless the candidates directly beneath it hold
    INNER_SHARE of its bytes: then those, chosen the same way."""

    def beneath(c: Candidate) -> list[Candidate]:
        below = [o for o in cands if o[0] is not c[0] and _above(c[0], o[0])]
        return [o for o in below if not any(m is not o and _above(m[0], o[0]) for m in below)]

    def pick(c: Candidate) -> list[Candidate]:
        direct = beneath(c)
        if direct and sum(o[1] for o in direct) >= INNER_SHARE * c[1]:
            return [x for o in direct for x in pick(o)]
        return [c]

    outermost = [c for c in cands if not any(o[0] is not c[0] and _above(o[0], c[0]) for o in cands)]
    return [x for c in outermost for x in pick(c)]


def activation_checkpointing(a: Analysis) -> list[Finding]:
    if not has_memory(a.meta):
        return []
    oom = oom_of(a.meta)
    if oom is not None:
        key, reference, per, what = "mem_oom_bytes", float(oom.allocated), 1, "memory live at the failure"
    else:
        peaks = device_peaks(a.meta)
        if not peaks:
            return []
        key, reference, per, what = "mem_peak_bytes", max(d.peak for d in peaks), a.per, "the peak"
    if not a.totals.get(key) or reference <= 0:
        return []
    fwd = _forward_bytes(a, key)
    cands = {
        i: (node, b / per, t / a.per)
        for i, (node, b, t) in fwd.items()
        if b / per >= max(MIN_BYTES, MIN_SHARE * reference) and _callee(node) is not None
    }
    out = []
    for node, nbytes, t in sorted(_chosen(list(cands.values())), key=lambda x: -x[1])[:_MAX_FINDINGS]:
        module = _callee(node) or "the module"
        share = 100 * nbytes / reference
        cost = f" (its forward took {ms(t)} {per_step_text(a)})" if t else ""
        out.append(
            Finding(
                rule="activation_checkpointing",
                title=f"activations of {module} hold {share:.0f}% of {what}",
                evidence=f"the forward ops beneath this call of {module} left {size(nbytes)} allocated at "
                f"{what} ({share:.0f}% of {size(reference)} allocated): activations kept for its backward",
                action=f"checkpoint {module} at this line (torch.utils.checkpoint.checkpoint(module, ..., "
                f"use_reentrant=False)): up to {size(nbytes)} less at {what}, for recomputing its forward "
                f"during backward{cost}",
                basis="bytes allocated by the forward ops beneath the line and still live at "
                + ("the failure" if oom is not None else "each step's peak of allocated memory (mean)")
                + ", recorded by --memory; checkpointing keeps the module's inputs, so the saving is at "
                "most this",
                gain_ns=0,
                per_step=oom is None and a.steps > 0,
                **where(node),
                numbers={
                    "freed_bytes": round(nbytes),
                    "reference_bytes": round(reference),
                    "recompute_ns": round(t),
                },
            )
        )
    return out
