"""torch.compile events (``meta.compile``) from Dynamo's compilation metrics records (collected by
:mod:`dlpt.capture.compile.dynamo`): one per compilation, with its compile time, the graph breaks
Dynamo restarted for and the guard whose failure caused a recompilation. Reading them back for
reports is :mod:`dlpt.model.compile_events`.

The fields of Dynamo's ``CompilationMetrics`` records are read with ``getattr`` so a missing field
reads as empty (see :mod:`dlpt.capture.compile` for the versions checked). Nothing here imports
torch.
"""

from __future__ import annotations

from typing import Any

from dlpt.model.resume_names import parse_resume_name

__all__ = ["events_from_metrics"]

_MAX_TEXT = 2000


def _get(m: Any, name: str, default: Any = None) -> Any:
    v = getattr(m, name, default)
    return default if v is None else v


#: Compilation metrics counting graphs served from a cache (Inductor's FX graph cache, AOTAutograd's
#: cache; local and remote): such a graph costs Inductor no compile time.
_CACHE_HITS = (
    "inductor_fx_local_cache_hit_count",
    "inductor_fx_remote_cache_hit_count",
    "aotautograd_local_cache_hit_count",
    "aotautograd_remote_cache_hit_count",
)


def _cache_hits(m: Any) -> int:
    total = 0
    for name in _CACHE_HITS:
        v = _get(m, name, 0)
        total += v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else 0
    return total


def events_from_metrics(metrics: list[Any]) -> list[dict[str, Any]]:
    """One event per compilation, in order, with graph breaks located where Dynamo resumed."""
    events: list[dict[str, Any]] = []
    for m in metrics:
        restart = _get(m, "restart_reasons", set())
        recompile = _get(m, "recompile_reason", "")
        ev: dict[str, Any] = {
            "compile_id": str(_get(m, "compile_id", "")),
            "function": str(_get(m, "co_name", "")),
            "file": str(_get(m, "co_filename", "")),
            "line": int(_get(m, "co_firstlineno", 0)),
            "compile_s": float(_get(m, "entire_frame_compile_time_s", 0.0)),
            "backend_s": float(_get(m, "backend_compile_time_s", 0.0)),
            "inductor_s": float(_get(m, "inductor_compile_time_s", 0.0)),
            "graph_ops": int(_get(m, "graph_op_count", 0)),
            "cache_hits": _cache_hits(m),
            "break_reasons": sorted(str(r)[:_MAX_TEXT] for r in restart),
            "recompile_reason": str(recompile)[:_MAX_TEXT] or None,
            "fail": (
                f"{_get(m, 'fail_type', '')}: {_get(m, 'fail_reason', '')}"[:_MAX_TEXT]
                if _get(m, "fail_type", "")
                else None
            ),
        }
        resume = parse_resume_name(ev["function"])
        if resume:
            ev["resume_of"] = {"function": resume[0], "line": resume[1]}
        events.append(ev)
    return events
