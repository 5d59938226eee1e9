"""A synchronisation inside the step (``.item()``, ``.cpu()``, ``print(tensor)``,
``torch.cuda.synchronize()``, data-dependent shapes) -> keep values on the GPU, read them less
often.

While the host waits, it queues no work; once the GPU has drained the queue it idles until the
host launches again. Gain per step = the host's measured wait at the line, bounded by the GPU's
measured idle time per step when the run recorded its step time line (``meta.gpu_steps``): a
sync only costs what the GPU spends idle, the rest of the wait overlaps GPU work that must run
anyway. Syncs of pageable copies are left to the pinned-memory rule, whose fix removes them.
Only lines that synchronise in most steps (at least every other one) are reported.
"""

from __future__ import annotations

from dlpt.analysis.finding import Finding
from dlpt.analysis.idle import step_idle
from dlpt.analysis.inputs import Analysis
from dlpt.analysis.rules.common import CALIBRATED_BASIS, lines_of, ms, per_step_text, significant, where
from dlpt.model.tree import Node, walk

__all__ = ["sync_in_step"]

# What caused the sync, from the op it happened in: (label, what to do).
_CAUSES: list[tuple[tuple[str, ...], str, str]] = [
    (
        ("aten::item", "aten::_local_scalar_dense", "aten::is_nonzero"),
        ".item() (a Python number from a GPU tensor)",
        "keep the value on the GPU (accumulate losses as tensors) and read it every N steps, or copy it "
        "with .to('cpu', non_blocking=True) into pinned memory and read it a step later",
    ),
    (
        ("aten::nonzero", "aten::masked_select", "aten::unique", "aten::_unique2", "aten::repeat_interleave"),
        "an op with a data-dependent output size (nonzero, masks, unique)",
        "avoid data-dependent shapes inside the step (torch.where with a fixed shape, masks as multipliers)",
    ),
    (
        ("aten::to", "aten::_to_copy", "aten::copy_", "aten::cpu"),
        "a copy to the host (.cpu(), .tolist(), .numpy())",
        "copy with non_blocking=True into pinned memory and read the result later, or less often",
    ),
]


def _cause(sync: Node) -> tuple[str, str]:
    names = set()
    p = sync.parent
    while p is not None and p.kind in ("op", "phase", "scope"):
        if p.kind == "op":
            names.add(p.name)
        p = p.parent
    op = sync.parent
    htod = op is not None and any(
        n.kind == "memcpy" and n.typed_extras.direction == "HtoD" for n, _ in walk(op)
    )
    if htod and not names & {"aten::item", "aten::_local_scalar_dense"}:
        return (
            "a blocking host-to-device copy",
            "copy from pinned memory with .to(device, non_blocking=True), so the host does not wait",
        )
    for ops, label, action in _CAUSES:
        if names & set(ops):
            return label, action
    if "DeviceSynchronize" in sync.name:
        return "torch.cuda.synchronize()", "drop the synchronize() inside the step (time with CUDA events)"
    api = sync.name.removeprefix("[sync ").removesuffix("]")
    return api, "remove the synchronisation from the step, or move it to every Nth step"


def _pageable_copy(sync: Node) -> bool:
    """Whether the sync belongs to a pageable host-to-device copy (the op it is in made one)."""
    op = sync.parent
    if op is None:
        return False
    return any(
        n.kind == "memcpy" and n.typed_extras.host_mem == "pageable" and n.typed_extras.direction == "HtoD"
        for n, _ in walk(op)
    )


def sync_in_step(a: Analysis) -> list[Finding]:
    if "sync" not in a.recorded:
        return []
    by_line: dict[tuple[str, int, str], tuple[Node | None, list[Node]]] = {}
    for node, line in lines_of(a, ("sync",)):
        if node.metrics.get("sync_ns", 0) and not _pageable_copy(node):
            label, _ = _cause(node)
            key = (line.file, line.line, label) if line is not None else ("", 0, label)
            by_line.setdefault(key, (line, []))[1].append(node)
    idle = max(step_idle(a), key=lambda s: s.busy_ns, default=None)
    out = []
    for (_, _, label), (line, syncs) in by_line.items():
        n = sum(s.metrics.get("syncs", 0) for s in syncs) / a.per
        wait = sum(s.metrics.get("sync_ns", 0) for s in syncs) / a.per
        if a.steps > 0 and n < 0.5:
            continue  # not a per-step habit (a final read-back, a checkpoint)
        if idle is not None:
            gain = min(wait, idle.idle_ns)
            basis = (
                f"the host's wait ({ms(wait)}), bounded by the GPU's idle time per step ({ms(idle.idle_ns)}, "
                "measured): the rest of the wait overlaps GPU work"
            ) + (CALIBRATED_BASIS if idle.traced is not None else "")
        else:
            gain = wait
            basis = (
                "the host's measured wait at this line; an upper bound (the GPU's idle time per step "
                "was not recorded)"
            )
        if not significant(a, gain):
            continue
        out.append(
            Finding(
                rule="sync_in_step",
                title=f"The host waits for the GPU at {label}",
                evidence=f"{n:.3g} synchronisation{'s' if n != 1 else ''} {per_step_text(a)}, "
                f"{ms(wait)} waiting",
                action=_cause(syncs[0])[1],
                basis=basis,
                gain_ns=round(gain),
                per_step=a.steps > 0,
                **where(line),
                numbers={
                    "syncs": n,
                    "wait_ns": round(wait),
                    "gpu_idle_ns": round(idle.idle_ns) if idle else -1,
                },
            )
        )
    return out
