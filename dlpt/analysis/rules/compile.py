"""torch.compile graph breaks and recompilations -> remove the break / make the guard hold.

Their measured cost in this run is compile time (``meta.compile``: Dynamo and Inductor seconds
per compilation), a one-off cost rather than a per-step one, so these findings carry their gain
*per run* (``per_step`` false) and rank after the per-step ones. A graph break also costs every
step (code between the graphs runs eagerly, fusion stops at the break, more launches), but that
is not measured here: the text says so.

Graph break: the compile time of the graphs Dynamo compiled for the code after the break (its
resume functions). Recompilation: the compile time of that compilation.
"""

from __future__ import annotations

from typing import Any

from dlpt.analysis.finding import Finding
from dlpt.analysis.inputs import Analysis
from dlpt.model.compile_events import graph_breaks, recompilations
from dlpt.model.meta import saved_dict

__all__ = ["compile_events"]


def _seconds(v: object) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0.0


def compile_events(a: Analysis) -> list[Finding]:
    events = [saved_dict(e) for e in a.meta.compile or []]
    if not events:
        return []
    try:
        breaks, recompiles = graph_breaks(events), recompilations(events)
    except (KeyError, TypeError, ValueError, AttributeError):  # a hand-edited compile list
        return []
    out = []
    for b in breaks:
        resumed: list[dict[str, Any]] = [
            e
            for e in events
            if e.get("file") == b["file"]
            and isinstance(e.get("resume_of"), dict)
            and e["resume_of"].get("line") == b["line"]
        ]
        secs = sum(_seconds(e.get("compile_s")) for e in resumed)
        out.append(
            Finding(
                rule="graph_break",
                title="torch.compile graph break",
                evidence=f"{b['reason']}; the code after it was compiled as {len(resumed)} more "
                f"graph{'s' if len(resumed) != 1 else ''} ({secs:.2f} s compiling)",
                action="remove the break (torch._dynamo.explain() shows each reason) so the function "
                "compiles as one graph",
                basis="compile time of the graphs after the break, measured once in this run; its per-step "
                "cost (eager code between graphs, lost fusion) is not measured",
                gain_ns=round(secs * 1e9),
                per_step=False,
                file=str(b["file"]),
                line=int(b["line"]),
                function=str(b["function"]),
                numbers={"compile_s": round(secs, 3), "graphs": len(resumed)},
            )
        )
    recompiled = [e for e in events if e.get("recompile_reason")]
    for r, e in zip(recompiles, recompiled, strict=False):
        secs = _seconds(e.get("compile_s"))
        out.append(
            Finding(
                rule="recompilation",
                title="torch.compile recompilation",
                evidence=f"guard failed: {r['reason']} ({secs:.2f} s compiling)",
                action="keep the guarded value stable (pad shapes to a few sizes, mark dynamic dims with "
                "torch._dynamo.mark_dynamic, or compile with dynamic=True)",
                basis="compile time of the recompilation, measured once in this run",
                gain_ns=round(secs * 1e9),
                per_step=False,
                file=str(r["file"]),
                line=int(r["line"]),
                function=str(r["function"]),
                numbers={"compile_s": round(secs, 3)},
            )
        )
    return [f for f in out if f.gain_ns > 0]
