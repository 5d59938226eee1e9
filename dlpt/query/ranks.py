"""The ranks of an answer: which rank a session is, and for the sessions of several ranks of one
job (``dlpt query r0.json r1.json ...``), each rank's step and totals and the stragglers the
report across ranks names (docs/query-format.md, "ranks")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dlpt.model.meta import Meta

if TYPE_CHECKING:  # the report across ranks is imported only where several ranks are queried
    from dlpt.views.ranks import RanksView

__all__ = ["rank_of", "across"]


def rank_of(meta: Meta) -> dict[str, Any] | None:
    """This session's rank, or None for a single process."""
    d = meta.distributed
    if d is None:
        return None
    out: dict[str, Any] = {"rank": d.rank, "world_size": d.world_size}
    if d.local_rank is not None:
        out["local_rank"] = d.local_rank
    if d.hostname:
        out["host"] = d.hostname
    return out


def across(rep: RanksView) -> dict[str, Any]:
    """The report across ranks, per step: each rank's figures and the stragglers, named (work of
    their own made the others wait) or not (slower, or outside the recorded work)."""
    per_rank = [
        {
            "rank": t.rank,
            "steps": t.steps,
            "step_ns": round(t.step_wall_ns),
            "gpu_ns": round(t.gpu_ns),
            "comm_ns": round(t.comm_ns),
            "cpu_ns": round(t.cpu_ns),
            "wait_ns": round(t.wait_ns),
        }
        for _, t in sorted(rep.per_rank.items())
    ]

    def straggler(s: Any, named: bool) -> dict[str, Any]:
        out = {"rank": s.rank, "waited_ns": round(s.waited_ns), "named": named, "counted_steps": s.counted}
        if named:
            out["own_work_ns"] = round(s.own_work_ns)
        else:
            out["label"] = s.unnamed_label
        return out

    return {
        "sessions": len(rep.per_rank),
        "metric": rep.metric.name,
        "per_rank": per_rank,
        "stragglers": [straggler(s, True) for s in rep.stragglers]
        + [straggler(s, False) for s in rep.unnamed],
        "lacking": list(rep.lacking),
    }
