"""The header facts of an HTML report: what was profiled, for how long, how busy each GPU was,
MFU and GPU idle per step, the suggestions, torch.compile events, and every warning that limits
trust in the numbers.

The values are formatted here with the terminal report's :class:`~dlpt.renderers.terminal.format.Fmt`
(per step when steps were detected), so both reports print the same numbers the same way; the
page only lays the strings out.
"""

from __future__ import annotations

import shlex
from typing import Any

from dlpt.analysis.inputs import analyze
from dlpt.analysis.suggest import findings
from dlpt.model.compile_events import graph_breaks, recompilations
from dlpt.model.session import Session
from dlpt.model.tree import Node
from dlpt.renderers.terminal.communication import header_lines as comm_lines
from dlpt.renderers.terminal.format import Fmt
from dlpt.renderers.terminal.header import (
    compile_attribution_notes,
    rank_label,
    step_notes,
    step_source,
    thread_notes,
)
from dlpt.renderers.terminal.suggestions import gain_text, header_lines, where_text

__all__ = ["header_facts"]


def _int(v: object) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _dict(v: object) -> dict:
    return v if isinstance(v, dict) else {}


def _steps_text(steps: dict) -> str:
    profiled = _int(steps.get("profiled"))
    why = [step_source(steps)] if isinstance(steps.get("source"), str) else []
    if _int(steps.get("seen")):
        why.append(f"{_int(steps.get('seen'))} seen, first {_int(steps.get('skip_first'))} skipped")
    return f"{profiled} profiled" + (f" ({'; '.join(why)})" if why else "")


def _totals(fmt: Fmt, inc: dict[str, int]) -> list[list[str]]:
    gpu = inc.get("gpu_ns", 0) + inc.get("copy_ns", 0) + inc.get("memset_ns", 0)
    out = []
    if gpu:
        out.append(["GPU time", fmt.time(gpu)])
    if inc.get("kernels"):
        out.append(["kernels", fmt.count(inc["kernels"])])
    if inc.get("copies"):
        out.append(["copies", f"{fmt.count(inc['copies'])} ({fmt.bytes(inc.get('copy_bytes', 0))})"])
    if inc.get("sync_ns"):
        out.append(["sync wait", fmt.time(inc["sync_ns"])])
    if inc.get("cpu_ns"):
        out.append(["CPU ops", fmt.time(inc["cpu_ns"])])
    if inc.get("api_ns"):
        out.append(["CUDA API", fmt.time(inc["api_ns"])])
    return out


def _devices(meta: dict, fmt: Fmt) -> list[dict[str, Any]]:
    wall = _int(meta.get("wall_ns"))
    names = {str(d.get("index")): d for d in meta.get("devices") or [] if isinstance(d, dict)}
    busy = _dict(meta.get("gpu_busy_ns"))
    out: list[dict[str, Any]] = []
    for dev in sorted(set(busy) | set(names), key=lambda s: (len(s), s)):
        d = names.get(dev, {})
        name = f"GPU {dev} {d.get('name', '')}".rstrip()
        if d.get("capability"):
            name += f" (sm {d['capability']})"
        if dev not in busy:
            out.append({"name": name, "busy_pct": None, "text": "no busy time recorded"})
            continue
        b = _int(busy.get(dev))
        frac = b / wall if wall else 0.0
        out.append(
            {
                "name": name,
                "busy_pct": round(100 * frac, 1),
                "text": f"busy {fmt.time(b)} of {fmt.time(wall)} wall ({100 * frac:.1f}%), "
                f"idle {100 * (1 - frac):.1f}%",
            }
        )
    return out


def _compile(meta: dict) -> dict[str, Any] | None:
    events = [e for e in meta.get("compile") or [] if isinstance(e, dict)]
    if not events:
        return None
    try:
        total = sum(float(e.get("compile_s", 0.0)) for e in events)
        inductor = sum(float(e.get("inductor_s", 0.0)) for e in events)
        breaks, recompiles = graph_breaks(events), recompilations(events)
    except (KeyError, TypeError, ValueError):  # a hand-edited or foreign compile list
        return {"summary": f"{len(events)} compilations (details unreadable)", "breaks": [], "recompiles": []}

    def located(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            {
                "file": str(r["file"]),
                "line": _int(r["line"]),
                "function": str(r["function"]),
                "reason": str(r["reason"]),
            }
            for r in rows
        ]

    return {
        "summary": f"{_n(len(events), 'compilation')}, {total:.2f} s compiling (Inductor {inductor:.2f} s), "
        f"{_n(len(breaks), 'graph break')}, {_n(len(recompiles), 'recompilation')}",
        "breaks": located(breaks),
        "recompiles": located(recompiles),
    }


def _warnings(meta: dict, fmt: Fmt) -> list[dict[str, str]]:
    out = []
    gpu = _dict(meta.get("gpu"))
    if gpu.get("enabled") is False:
        out.append(
            {
                "level": "warn",
                "text": f"GPU capture was off: {gpu.get('reason') or 'reason unknown'}; "
                "CPU-side attribution only",
            }
        )
    per = " per step" if fmt.steps else ""
    for key, label, level in (("dropped", "dropped", "error"), ("unattributed", "unattributed", "warn")):
        d = _dict(meta.get(key))
        parts = []
        for k, v in sorted(d.items(), key=lambda kv: str(kv[0]).endswith("_ns")):
            if not _int(v):
                continue
            if str(k).endswith("_ns"):
                what = str(k)[:-3].replace("_", " ")
                parts.append(f"{fmt.time(v)} {'GPU' if what == 'gpu' else what} time{per}")
            else:
                parts.append(f"{v:,} {str(k).replace('_', ' ')}")
        if parts:
            note = " (shown under <unknown>)" if key == "unattributed" else ""
            out.append({"level": level, "text": f"{label}: {', '.join(parts)}{note}"})
    graphs = _dict(meta.get("cuda_graphs"))
    lost = _int(graphs.get("uncaptured_gpu_ns"))
    if lost:
        out.append(
            {
                "level": "warn",
                "text": f"{fmt.time(lost)}{per} of CUDA graph replays was captured "
                "before profiling started: shown at the replay call",
            }
        )
    # The terminal header's own warnings, from the functions it uses (dlpt.renderers.terminal.header).
    notes = [*step_notes(_dict(meta.get("steps"))), *compile_attribution_notes(meta), *thread_notes(meta)]
    out.extend({"level": "warn", "text": text} for text in notes)
    return out


def _insights(session: Session, root: Node, fmt: Fmt) -> dict[str, Any]:
    """MFU and GPU idle lines and the suggestions, as the terminal report words them
    (dlpt.renderers.terminal.suggestions), from the page's own tree; the page lists them in the header. Their
    text comes from the session (any string): control characters are escaped, as in the
    terminal report; ``file`` stays as recorded, the key the source view looks the line up by."""
    a = analyze(session, root)
    clean = fmt.clean
    return {
        "lines": [t.plain for t in header_lines(a, fmt)],
        "suggestions": [
            {
                "gain": gain_text(f, fmt),
                "where": where_text(f, clean),
                "file": f.file,
                "line": f.line,
                "title": clean(f.title),
                "evidence": clean(f.evidence),
                "action": clean(f.action),
                "basis": clean(f.basis),
            }
            for f in findings(a)
        ],
    }


def header_facts(session: Session, root: Node, steps: int) -> dict[str, Any]:
    """Header of the report as strings and small records (see module docstring)."""
    meta = session.meta
    fmt = Fmt(steps=steps)
    argv = meta.get("argv") or []
    facts: list[list[str]] = [["wall", fmt.time(_int(meta.get("wall_ns")), per_step=False)]]
    rank = rank_label(meta, str)  # the page sets text, never markup: no escaping needed here
    if rank:
        facts.insert(0, ["rank", rank])
    steps_meta = _dict(meta.get("steps"))
    if _int(steps_meta.get("profiled")):
        facts.append(["steps", _steps_text(steps_meta)])
    walls = [s for s in meta.get("step_wall_ns") or [] if _int(s)]
    if walls:
        facts.append(
            [
                "step wall",
                f"mean {fmt.time(sum(walls) / len(walls), per_step=False)}, "
                f"min {fmt.time(min(walls), per_step=False)}, "
                f"max {fmt.time(max(walls), per_step=False)}",
            ]
        )
    # Communication: compute and communication, exposed communication, waits (as the terminal).
    facts.extend(["communication", line.plain] for line in comm_lines(meta, root.inclusive, fmt))
    graphs = _dict(meta.get("cuda_graphs"))
    if _int(graphs.get("replay_gpu_ns")):
        facts.append(
            [
                "CUDA graph replays",
                f"{fmt.time(_int(graphs['replay_gpu_ns']))} GPU time"
                f"{' per step' if steps else ''}, at the capturing lines",
            ]
        )
    versions = [f"{k} {meta[k]}" for k in ("python", "torch", "dlpt") if isinstance(meta.get(k), str)]
    if isinstance(meta.get("started_at"), str):
        versions.append(f"started {meta['started_at']}")
    return {
        "title": shlex.join(str(a) for a in argv) if isinstance(argv, list) and argv else "(no argv)",
        "facts": facts,
        "totals_label": f"per step (/{steps})" if steps else "totals",
        "totals": _totals(fmt, root.inclusive),
        "devices": _devices(meta, fmt),
        "compile": _compile(meta),
        "warnings": _warnings(meta, fmt),
        "insights": _insights(session, root, fmt),
        "versions": " · ".join(versions),
    }
