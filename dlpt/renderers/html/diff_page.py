"""The HTML page of ``dlpt diff --html``: the line table (sortable, filterable, any metric) and,
for a clicked line, its kernels, copies and syncs in A and B side by side.

The page gets every metric key of every matched line (self and inclusive) and of every leaf,
so it can switch metrics without a second copy; a diff holds one row per distinct line, which
is small next to a full tree.
"""

from __future__ import annotations

import os
from typing import Any

from dlpt.files.safe_files import write_text_file
from dlpt.model.resume_names import display_name
from dlpt.model.units import PLAIN, units_model
from dlpt.renderers.html.data import KEYS, METRIC_KEYS
from dlpt.renderers.html.page import document
from dlpt.views.diff import CANT_TELL, FASTER, SAME, SLOWER, Change, DiffView, LineCost, RunShift, Side

__all__ = ["build_diff_model", "render_diff_html", "write_diff_html"]

DIFF_SCRIPTS = ("util.js", "treetable.js", "leaves.js", "diff.js")
DIFF_STYLES = ("report.css", "diff.css")


def _vector(m: dict[str, int]) -> list[int]:
    return [int(m.get(k, 0)) for k in KEYS]


def _cost(c: LineCost | None) -> dict[str, Any] | None:
    if c is None:
        return None
    leaves = sorted(c.leaves.values(), key=lambda leaf: -leaf.time_ns)
    return {
        "file": c.file,
        "line": c.line,
        "function": display_name(c.function),
        "text": c.text,
        "self": _vector(c.self),
        "inc": _vector(c.inclusive),
        "leaves": [
            [
                leaf.kind,
                leaf.name,
                leaf.detail,
                leaf.time_ns,
                leaf.count,
                leaf.forward_ns,
                leaf.backward_ns,
                leaf.other_ns,
            ]
            for leaf in leaves
        ],
    }


def _step(s: Side) -> str:
    """ "10.2ms (10.0ms-10.4ms) untraced step": the median with its interval."""
    if not s.step_ns:
        return ""
    st, t = s.step, PLAIN.time
    spread = ""
    if st is not None and st.median_lo_ns is not None and st.median_hi_ns is not None and st.n > 1:
        spread = f" ({t(st.median_lo_ns)}\u2013{t(st.median_hi_ns)})"
    return f"{t(s.step_ns)}{spread} {s.step_kind} step"


def _side(s: Side) -> dict[str, Any]:
    return {
        "label": s.label,
        "program": s.program,
        "steps": s.steps,
        "step": _step(s),
        "host": s.host_text,
        "scale": s.scale,
        "has_sources": s.has_sources,
        "total": _vector(s.total),
        "off": _vector(s.off_lines),
    }


_VERDICT_CODE = {SLOWER: 1, FASTER: 1, SAME: 0, CANT_TELL: 2}


def _verdict_code(c: Change) -> int:
    """A row's verdict for diff.js: _VERDICT_CODE, or 3 for a change judged on the ops' fastest calls."""
    return 3 if c.significant and c.basis else _VERDICT_CODE[c.verdict]


def _fastest(shift: RunShift) -> dict[str, float] | None:
    """The run shift at the ops' fastest calls (CPU op time), as diff.js reads it."""
    if shift.fastest is None:
        return None
    return dict(zip(("factor", "lo", "hi"), shift.fastest, strict=True))


def build_diff_model(d: DiffView) -> dict[str, Any]:
    """The JSON-ready model of ``d``; its metric is shown first."""
    offered = d.offered
    metrics = [
        {"name": n, "label": m.label, "unit": m.unit, "keys": list(METRIC_KEYS[n])}
        for n, m in offered.items()
    ]
    # Each row's verdict per offered metric (absent when the sessions cannot be tested):
    # 1 changed, 0 within noise, 2 can't tell (dlpt.analysis.diff_test); the run shift beside.
    judged = {n: d.judge(m) for n, m in offered.items()}
    rows = []
    for r in d.rows:
        row: dict[str, Any] = {"a": _cost(r.a), "b": _cost(r.b)}
        sig = {n: _verdict_code(c[r.key]) for n, (_, c) in judged.items() if r.key in c}
        if sig:
            row["sig"] = sig
        rows.append(row)
    shifts = {
        n: {
            "factor": sh.factor,
            "lo": sh.lo,
            "hi": sh.hi,
            "lines": sh.lines,
            "verdict": sh.verdict,
            "why": sh.why,
            "comparable": sh.comparable,
            "fastest": _fastest(sh),
            "basis": sh.basis,
        }
        for n, (sh, _) in judged.items()
        if sh is not None
    }
    return {
        "format": "dlpt-diff-model",
        "version": 1,
        "keys": list(KEYS),
        "metrics": metrics,
        "metric": d.metric.name,
        "note": d.note,
        "match_by": d.match_by,
        "a": _side(d.a),
        "b": _side(d.b),
        "tested": d.tested,
        "shifts": shifts,
        "step_change": d.step_change(),
        "rows": rows,
        "units": units_model(),  # what assets/util.js formats numbers with, as the report page
    }


def render_diff_html(d: DiffView) -> str:
    title = f"dlpt diff · {os.path.basename(d.a.label)} vs {os.path.basename(d.b.label)}"
    return document(title, build_diff_model(d), DIFF_SCRIPTS, DIFF_STYLES)


def write_diff_html(d: DiffView, path: str | os.PathLike[str], *, force: bool = False) -> None:
    """Write the comparison page to ``path`` by dlpt.files.safe_files' rules (an existing file
    only if dlpt wrote it, or with ``force``)."""
    write_text_file(path, render_diff_html(d), "HTML reports", force=force)
