"""The torch.compile summary: how many compilations, how long they took, the graph breaks at
their lines and the recompilations with the guard that failed (from ``meta.compile``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dlpt.analysis.report.model import CompileSummary, Fact, Located
from dlpt.model.compile_events import graph_breaks, recompilations
from dlpt.model.meta import Capture, Meta, int_of, saved_dict, typed

__all__ = ["compile_summary", "attribution_facts", "plural"]


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _seconds(events: list[dict[str, Any]], key: str) -> float:
    total = 0.0
    for e in events:
        v = e.get(key, 0.0)
        finite = isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < float("inf")
        if finite:  # NaN fails the comparison too
            total += float(v)
    return total


def _cache_hits(events: list[dict[str, Any]]) -> int:
    return sum(int_of(e.get("cache_hits")) for e in events)


def _time_text(frames_s: float, inductor_s: float, cached: int = 0) -> str:
    """Compile time without a part larger than its whole: Dynamo's frame compile time contains
    Inductor's forward graphs, but AOTAutograd compiles the backward graph at the first backward
    pass, after the frame, so Inductor's total can exceed the frames' time. Graphs served from
    a compile cache (``cached``) cost Inductor nothing: "cached", not "Inductor 0.00 s"."""
    if cached and inductor_s < 0.005:
        return f"{frames_s:.2f} s compiling (Inductor: cached, {plural(cached, 'graph')} from its cache)"
    if inductor_s <= frames_s:
        return f"{frames_s:.2f} s compiling (Inductor {inductor_s:.2f} s of it)"
    return (
        f"{frames_s:.2f} s compiling frames, Inductor {inductor_s:.2f} s (it also compiles the backward "
        "graphs, at the first backward pass)"
    )


def _located(rows: list[dict[str, Any]]) -> tuple[Located, ...]:
    return tuple(
        Located(str(r["file"]), int_of(r["line"]), str(r["function"]), str(r["reason"])) for r in rows
    )


def compile_summary(meta: Meta | Mapping[str, Any]) -> CompileSummary | None:
    """The summary of ``meta.compile``; None when the session holds no compile events."""
    events = [saved_dict(e) for e in typed(meta).compile or []]
    if not events:
        return None
    try:
        breaks, recompiles = graph_breaks(events), recompilations(events)
    except (KeyError, TypeError, ValueError, AttributeError):  # a hand-edited or foreign compile list
        return CompileSummary(f"{plural(len(events), 'compilation')} (details unreadable)", (), ())
    time = _time_text(_seconds(events, "compile_s"), _seconds(events, "inductor_s"), _cache_hits(events))
    text = (
        f"{plural(len(events), 'compilation')}, {time}, "
        f"{plural(len(breaks), 'graph break')}, {plural(len(recompiles), 'recompilation')}"
    )
    return CompileSummary(text, _located(breaks), _located(recompiles))


def attribution_facts(meta: Meta) -> list[Fact]:
    """What dlpt's torch.compile integration could not do (``meta.capture``, see
    :mod:`dlpt.capture.compile.failures`): Inductor lines left unmapped, failures by reason."""
    c = meta.capture or Capture()
    lines = []
    frames, kernels = c.inductor_unmapped_frames or 0, c.inductor_unmapped_kernels or 0
    generated = f"{frames:,} generated line{'s' if frames != 1 else ''}"
    if kernels:
        launches = f"{kernels:,} Inductor kernel launch{'es' if kernels != 1 else ''}"
        lines.append(
            f"{launches} could not be mapped to model lines "
            f"(from {generated}; they stay with the compiled call)"
        )
    elif frames:
        lines.append(
            f"{generated} of Inductor's code could not be mapped to model lines "
            "(their costs stay with the compiled call)"
        )
    failed = c.compile_failures or {}
    parts = [f"{reason} x{n}" for reason, n in sorted(failed.items()) if n]
    if parts:
        lines.append(
            f"torch.compile attribution incomplete: {', '.join(parts)} failed (details: DLPT_LOG=debug)"
        )
    return [Fact("compile", text, "warn") for text in lines]
