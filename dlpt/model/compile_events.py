"""The session's torch.compile events (``meta.compile``, written by
:mod:`dlpt.capture.compile.events`) read back for reports: graph breaks at their line (located
through the resume function Dynamo compiles after a break), recompilations with the guard that
failed, and short markers for tree rows. Plain data in, plain data out.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["graph_breaks", "recompilations", "line_markers"]


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
