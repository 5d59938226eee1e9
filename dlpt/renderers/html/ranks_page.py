"""The HTML page across ranks: what ``torchrun ... -m dlpt --html run.html`` writes from rank 0
(and ``dlpt --load 'run.rank*.json' --html all.html``): the job's verdict (the straggler, its
wait and its own lines, or how close the ranks are), a table of the ranks, each rank's steps on
one step axis (busy, communication and its exposed part, per step), the ranks' GPU streams on
one clock where they recorded a timeline window (``--timeline``), and the lines with their cost
on every rank (min / median / max, the slowest rank), for any metric.

The page formats :class:`~dlpt.analysis.ranks.report.RankReport`; it computes nothing of its own.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
from typing import Any

import torch

from dlpt.analysis.ranks.lines import one_thread, row_median
from dlpt.analysis.ranks.merge import Rank, median
from dlpt.analysis.ranks.report import RankReport, Spread
from dlpt.analysis.ranks.stragglers import Cause, Site
from dlpt.analysis.ranks.timelines import timeline_note
from dlpt.analysis.report.run import rank_label
from dlpt.files.safe_files import write_text_file
from dlpt.model.meta import int_of, obj, program_argv
from dlpt.model.metrics import METRICS, Metric
from dlpt.model.resume_names import display_name
from dlpt.model.units import units_model
from dlpt.renderers.html.page import document
from dlpt.renderers.html.timeline import timeline_model

__all__ = ["build_ranks_model", "render_ranks_html", "write_ranks_html", "MAX_LINES"]

RANKS_SCRIPTS = ("util.js", "treetable.js", "timeline.js", "ranks.js")
RANKS_STYLES = ("report.css", "ranks.css")
MAX_LINES = 2000  # lines on the page, the costliest on any rank first


def _sources(rep: RankReport) -> dict[str, dict[str, str]]:
    """The ranks' saved source text, merged once (the same code; the first rank's text wins)."""
    out: dict[str, dict[str, str]] = {}
    for r in reversed(rep.rs.ranks):
        for file, lines in obj(r.session.meta.get("sources")).items():
            if isinstance(lines, dict):
                out.setdefault(file, {}).update(lines)
    return out


def _where(sources: dict[str, dict[str, str]], node: Any) -> dict[str, Any]:
    text = sources.get(node.file, {}).get(str(node.line)) if node.kind == "frame" else None
    return {
        "file": node.file,
        "line": node.line,
        "function": display_name(node.name),
        "text": text.strip() if isinstance(text, str) else "",
        "name": node.name if node.kind != "frame" else "",
    }


def _cause(sources: dict[str, dict[str, str]], c: Cause) -> dict[str, Any]:
    return {**_where(sources, c.node), "metric": c.metric.name, "own": c.own_ns, "others": c.others_ns}


def _site(sources: dict[str, dict[str, str]], s: Site, rank: int) -> dict[str, Any]:
    others = [v for r, v in s.times.items() if r != rank]
    line = _where(sources, s.line.node) if s.line is not None else None
    return {
        "line": line,
        "op": s.node.node.name,
        "paths": s.paths,
        "own": s.times.get(rank, 0.0),
        "others": median(others),
    }


def _steps(rank: Rank) -> list[list[int]]:
    """Each counted step of the rank's first GPU: span, busy, communication, exposed."""
    for rows in obj(rank.session.meta.get("gpu_steps")).values():
        if isinstance(rows, list):
            return [
                [int_of(r.get(k)) for k in ("span_ns", "busy_ns", "comm_ns", "exposed_ns")]
                for r in rows
                if isinstance(r, dict)
            ]
    return []


def _lines(
    rep: RankReport, metrics: list[Metric], sources: dict[str, dict[str, str]]
) -> tuple[list[dict[str, Any]], int]:
    """The costliest lines (by the report's metric on any rank), each with, per metric, its
    max, median and min across ranks and the slowest rank; and how many lines there are."""
    table = rep.lines
    if not len(table):
        return [], 0
    values = [table.values(m) for m in metrics]
    maxima = [v.max(dim=1).values for v in values]
    # The costliest by the report's metric first; lines with only other metrics (a host line
    # without GPU time) after them, the page switches metrics.
    top = maxima[metrics.index(rep.metric)]
    anything = torch.stack(maxima).amax(dim=0)
    by_any = torch.argsort(anything, descending=True, stable=True)
    ranked = by_any[torch.argsort(top[by_any], descending=True, stable=True)]
    shown = [i for i in ranked[:MAX_LINES].tolist() if float(anything[i]) > 0]
    if not shown:
        return [], len(table)
    # The spread of the shown lines only: a median over the ranks is a selection per line
    # (1,024 ranks x 10,000 lines: 1.3 s per metric for all of them; the page shows 2,000).
    at = torch.tensor(shown, dtype=torch.long)
    stats: dict[str, tuple[list[float], list[float], list[float], list[int]]] = {}
    for m, v in zip(metrics, values, strict=True):
        part = v[at]
        hi = part.max(dim=1)
        stats[m.name] = (
            hi.values.tolist(),
            row_median(part).tolist(),
            part.min(dim=1).values.tolist(),
            hi.indices.tolist(),
        )
    out = []
    for k, i in enumerate(shown):
        row: dict[str, Any] = {**_where(sources, table.labels[i]), "v": {}}
        for name, (hi_v, mid, lo, slow) in stats.items():
            row["v"][name] = [round(hi_v[k]), round(mid[k]), round(lo[k]), table.order[slow[k]]]
        out.append(row)
    return out, len(table)


def build_ranks_model(rep: RankReport) -> dict[str, Any]:
    """The JSON-ready model of the page."""
    with one_thread():
        return _model(rep)


def _spread(s: Spread | None) -> dict[str, Any] | None:
    return dataclasses.asdict(s) if s is not None else None


def _model(rep: RankReport) -> dict[str, Any]:
    metrics = [m for m in METRICS.values() if rep.lines.has(m)]
    if rep.metric not in metrics:
        metrics.insert(0, rep.metric)
    sources = _sources(rep)
    lines, count = _lines(rep, metrics, sources)
    first = rep.rs.ranks[0].session.meta if rep.rs.ranks else {}
    argv = program_argv(first)
    low, high = rep.wait_spread
    return {
        "format": "dlpt-ranks-model",
        "version": 1,
        "title": shlex.join(str(a) for a in argv) if argv else "(no argv)",
        "world_size": rep.rs.world_size,
        "gpu": rep.gpu,
        "step_ns": rep.step_ns,
        "step_spread": _spread(rep.step_spread),
        "untraced_spread": _spread(rep.untraced_spread),
        "wait_rule": rep.wait_rule,
        "waits": {"low": low, "high": high},
        # Ranks that counted no step: no straggler verdict (dlpt.analysis.ranks.report).
        "lacking": list(rep.lacking),
        "fewest_steps": rep.fewest_steps,
        "missing": [{"rank": r, "why": why} for r, why in rep.rs.missing.items()],
        "notes": list(rep.rs.notes),
        "ranks": [
            {
                "rank": r.rank,
                "where": rank_label(r.session.meta) or r.path,
                "step": rep.per_rank[r.rank].step_wall_ns,
                "untraced": rep.per_rank[r.rank].untraced_step_ns or 0,
                "compute": rep.per_rank[r.rank].compute_ns,
                "comm": rep.per_rank[r.rank].communication_ns,
                "exposed": rep.per_rank[r.rank].exposed_ns,
                "waited": rep.waits.per_rank.get(r.rank, 0.0),
                "steps": _steps(r),
            }
            for r in rep.rs.ranks
        ],
        "stragglers": [
            {
                "rank": s.rank,
                "waited": s.waited_ns,
                "causes": [_cause(sources, c) for c in s.causes],
                "sites": [_site(sources, x, s.rank) for x in s.sites[:10]],
                "own_work": s.own_work_ns,
                "pace": s.pace_text(),
                "steps": s.steps_text(),
            }
            for s in rep.stragglers
        ],
        "unnamed": [
            {
                "rank": s.rank,
                "waited": s.waited_ns,
                "why": s.why_waited_for(),
                "label": s.unnamed_label,
                "steps": s.steps_text(),
            }
            for s in rep.unnamed
        ],
        "metric": rep.metric.name,
        "metrics": [{"name": m.name, "label": m.label, "unit": m.unit} for m in metrics],
        "lines": lines,  # v: {metric: [max, median, min, slowest rank]} per step
        "lines_total": count,
        "timeline": _timeline(rep),
        "units": units_model(),
    }


def _timeline(rep: RankReport) -> dict[str, Any] | None:
    """The ranks' GPU streams on one clock, as the report page's timeline draws them (its own
    string table beside it), or None without timelines."""
    t = rep.timelines
    if t is None:
        return None
    table: dict[str, int] = {}

    def strings(text: str) -> int:
        return table.setdefault(text, len(table))

    model = timeline_model(t.view, strings)
    if model is None:
        return None
    model["strings"] = list(table)
    model["title"] = "GPU timelines across ranks"
    model["note"] = timeline_note(t)
    return model


def render_ranks_html(rep: RankReport) -> str:
    model = build_ranks_model(rep)
    return document(f"dlpt · across ranks · {model['title']}", model, RANKS_SCRIPTS, RANKS_STYLES)


def write_ranks_html(rep: RankReport, path: str | os.PathLike[str], *, force: bool = False) -> None:
    """Write the page to ``path`` by dlpt.files.safe_files' rules (an existing file only if dlpt
    wrote it, or with ``force``)."""
    write_text_file(path, render_ranks_html(rep), "HTML reports", force=force)
