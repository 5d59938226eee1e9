"""The session's torch.compile events (``meta.compile``): one per compilation, with its compile
time, the graph breaks Dynamo restarted for and the guard whose failure caused a recompilation.

Built at capture time from Dynamo's compilation metrics records (collected by
:mod:`dlpt.compile.dynamo`), and read back for reports: graph breaks at their line (located
through the resume function Dynamo compiles after a break), recompilations, and short markers
for tree rows. Plain data in, plain data out: nothing here imports torch.
"""

from __future__ import annotations

import re
from typing import Any

from dlpt.compile.resume import parse_resume_name

__all__ = ["events_from_metrics", "graph_breaks", "recompilations", "line_markers"]

_MAX_TEXT = 2000


def _squeeze(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _first_lines(text: str) -> str:
    """The headline of a Dynamo reason: its first line and, if present, its 'Explanation:'."""
    lines = [_squeeze(ln) for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    head = lines[0]
    expl = next((ln for ln in lines[1:] if ln.startswith("Explanation:")), None)
    return f"{head} ({expl.removeprefix('Explanation:').strip()})" if expl else head


def _get(m: Any, name: str, default: Any = None) -> Any:
    v = getattr(m, name, default)
    return default if v is None else v


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


def graph_breaks(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Distinct graph breaks: file, line (where Dynamo resumed), function, reason headline."""
    reasons: dict[tuple[str, str], list[str]] = {}
    for ev in events:
        if ev["break_reasons"]:
            fn = (
                ev.get("resume_of", {}).get("function", ev["function"])
                if "resume_of" in ev
                else ev["function"]
            )
            reasons.setdefault((ev["file"], fn), []).extend(ev["break_reasons"])
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for ev in events:
        r = ev.get("resume_of")
        if not r:
            continue
        texts = reasons.get((ev["file"], r["function"]), [])
        key = (ev["file"], r["line"])
        out.setdefault(
            key,
            {
                "file": ev["file"],
                "line": r["line"],
                "function": r["function"],
                "reason": _first_lines(texts[0]) if texts else "graph break",
            },
        )
    # Breaks whose resume was never compiled in the window: shown at the compiled frame.
    located = {(b["file"], b["function"]) for b in out.values()}
    for (file, fn), texts in reasons.items():
        if (file, fn) not in located:
            line = next((ev["line"] for ev in events if ev["file"] == file and ev["function"] == fn), 0)
            out.setdefault(
                (file, line, fn),
                {"file": file, "line": line, "function": fn, "reason": _first_lines(texts[0])},
            )
    return list(out.values())


def recompilations(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Compilations caused by a failed guard: where, and the guard's text (first line)."""
    out = []
    for ev in events:
        if not ev.get("recompile_reason"):
            continue
        r = ev.get("resume_of")
        fn = f"{r['function']} (after the graph break at line {r['line']})" if r else ev["function"]
        lines = ev["recompile_reason"].strip().splitlines()
        out.append(
            {
                "file": ev["file"],
                "line": ev["line"],
                "function": fn,
                "reason": _squeeze(lines[0]) if lines else "",
            }
        )
    return out


def line_markers(events: list[dict[str, Any]]) -> dict[tuple[str, int], str]:
    """Short markers for tree rows at (file, line): graph breaks at their line, recompilations
    at the compiled function's first line (the row Dynamo's frame shows)."""
    marks: dict[tuple[str, int], list[str]] = {}
    for b in graph_breaks(events):
        marks.setdefault((b["file"], b["line"]), []).append("graph break")
    recompiled: dict[tuple[str, int], int] = {}
    for ev in events:
        if ev.get("recompile_reason"):
            key = (ev["file"], ev["line"])
            recompiled[key] = recompiled.get(key, 0) + 1
    for key, n in recompiled.items():
        marks.setdefault(key, []).append(f"recompiled x{n}")
    return {k: ", ".join(v) for k, v in marks.items()}
