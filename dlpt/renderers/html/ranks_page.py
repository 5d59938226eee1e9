"""The HTML page across ranks: what ``torchrun ... -m dlpt --html run.html`` writes from rank 0
(and ``dlpt --load 'run.rank*.json' --html all.html``): the job's verdict (the straggler, its
wait and its own lines, or how close the ranks are), a table of the ranks, each rank's steps on
one step axis (busy, communication and its exposed part, per step), the ranks' GPU streams on
one clock where they recorded a timeline window (``--timeline``), and the lines with their cost
on every rank (min / median / max, the slowest rank), for any metric.

The page formats :class:`~dlpt.views.ranks.RanksView`; it computes nothing of its own.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
from typing import Any

from dlpt.files.safe_files import write_text_file
from dlpt.model.metrics import Metric
from dlpt.model.resume_names import display_name
from dlpt.model.units import units_model
from dlpt.renderers.html.page import document
from dlpt.renderers.html.timeline import timeline_model
from dlpt.views.ranks import Cause, RanksView, Site, Spread

__all__ = ["build_ranks_model", "render_ranks_html", "write_ranks_html", "MAX_LINES"]

RANKS_SCRIPTS = ("util.js", "treetable.js", "timeline.js", "ranks.js")
RANKS_STYLES = ("report.css", "ranks.css")
MAX_LINES = 2000  # lines on the page, the costliest on any rank first


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
    line = _where(sources, s.line.node) if s.line is not None else None
    return {
        "line": line,
        "op": s.node.node.name,
        "paths": s.paths,
        "own": s.times.get(rank, 0.0),
        "others": RanksView.others_median(s, rank),
    }


def _lines(
    view: RanksView, metrics: list[Metric], sources: dict[str, dict[str, str]]
) -> list[dict[str, Any]]:
    """The costliest lines (by the view's metric on any rank), each with, per metric, its
    max, median and min across ranks and the slowest rank."""
    return [{**_where(sources, line.node), "v": line.values} for line in view.page_lines(metrics, MAX_LINES)]


def build_ranks_model(view: RanksView) -> dict[str, Any]:
    """The JSON-ready model of the page."""
    return _model(view)


def _spread(s: Spread | None) -> dict[str, Any] | None:
    return dataclasses.asdict(s) if s is not None else None


def _model(rep: RanksView) -> dict[str, Any]:
    metrics, sources, argv = rep.metrics, rep.sources, rep.argv
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
        # Ranks that counted no step: no straggler verdict (dlpt.views.ranks).
        "lacking": list(rep.lacking),
        "not_judged": rep.not_judged_why() if rep.lacking else "",
        "fewest_steps": rep.fewest_steps,
        "missing": [{"rank": r, "why": why} for r, why in rep.rs.missing.items()],
        "notes": list(rep.rs.notes),
        "ranks": [
            {
                "rank": r.rank,
                "where": rep.where(r),
                "step": rep.per_rank[r.rank].step_wall_ns,
                "untraced": rep.per_rank[r.rank].untraced_step_ns or 0,
                "compute": rep.per_rank[r.rank].compute_ns,
                "comm": rep.per_rank[r.rank].communication_ns,
                "exposed": rep.per_rank[r.rank].exposed_ns,
                "waited": rep.waits.per_rank.get(r.rank, 0.0),
                "steps": rep.steps_of(r),
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
                "unsure": bool(s.unsure),  # lines that stood out on too few samples: not decided
            }
            for s in rep.unnamed
        ],
        "metric": rep.metric.name,
        "metrics": [{"name": m.name, "label": m.label, "unit": m.unit} for m in metrics],
        "lines": _lines(rep, metrics, sources),  # v: {metric: [max, median, min, slowest rank]} per step
        "lines_total": len(rep.lines),
        "timeline": _timeline(rep),
        "units": units_model(),
    }


def _timeline(rep: RanksView) -> dict[str, Any] | None:
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
    model["note"] = rep.timeline_note
    return model


def render_ranks_html(rep: RanksView) -> str:
    model = build_ranks_model(rep)
    return document(f"dlpt · across ranks · {model['title']}", model, RANKS_SCRIPTS, RANKS_STYLES)


def write_ranks_html(rep: RanksView, path: str | os.PathLike[str], *, force: bool = False) -> None:
    """Write the page to ``path`` by dlpt.files.safe_files' rules (an existing file only if dlpt
    wrote it, or with ``force``)."""
    write_text_file(path, render_ranks_html(rep), "HTML reports", force=force)
