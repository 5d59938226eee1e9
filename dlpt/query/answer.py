"""The answer to a query about one session (docs/query-format.md): the header with the basis of
each fact, the top lines by own cost per step, one line's detail when asked, the suggestions and
the ranks. Built from the session's :class:`~dlpt.views.run.RunView` (folded and analysed
once, as every report of it); the view's parts a query does not ask for are never computed."""

from __future__ import annotations

from typing import Any

from dlpt._version import __version__
from dlpt.errors import UsageError
from dlpt.model.metrics import Metric, default_metric, get_metric
from dlpt.model.session import Session
from dlpt.model.tree import Node
from dlpt.query.detail import detail, find_line
from dlpt.query.header import header
from dlpt.query.lines import line_nodes, line_row, per, ranked_rows
from dlpt.query.ranks import rank_of
from dlpt.query.suggestions import suggestions
from dlpt.views.run import RunView, view_of

__all__ = ["FORMAT", "VERSION", "query", "metric_of", "check_top", "MAX_TOP"]

FORMAT = "dlpt-query"
#: The schema's version: a key removed or whose meaning changed raises it; keys added do not
#: (readers ignore keys they do not know).
VERSION = 1
#: The most lines an answer lists (an answer stays small; ``--line`` gives any one line).
MAX_TOP = 200


def check_top(top: object) -> int:
    if isinstance(top, bool) or not isinstance(top, int) or not 0 <= top <= MAX_TOP:
        raise UsageError(f"top must be a whole number from 0 to {MAX_TOP}, got {top!r}")
    return top


def metric_of(view: RunView, name: str | None) -> Metric:
    """``name``'s metric (UsageError for an unknown one), else the report's default: GPU time
    when the run has any, else CPU op time."""
    if name is not None:
        return get_metric(name)
    totals = Node("root", "<root>")
    totals.inclusive = view.totals
    return default_metric(totals)


def query(
    source: Session | RunView,
    *,
    top: int = 20,
    line: str | None = None,
    metric: str | None = None,
    path: str | None = None,
) -> dict[str, Any]:
    """The answer about ``source`` (docs/query-format.md): the ``top`` lines by own cost of
    ``metric`` (default as the report's), and ``line``'s detail (``FILE:LINE``) when given.
    ``path`` names the session file in the answer. Raises UsageError for a bad argument or a
    line the session does not hold."""
    top = check_top(top)
    view = view_of(source)
    m = metric_of(view, metric)
    report = view.report()
    total = m(view.totals)
    rows = ranked_rows(view, m)
    nodes = line_nodes(view.whole)
    work = {(w.work.line.file, w.work.line.line): w for w in view.work.lines}

    def row_answer(r: Any) -> dict[str, Any]:
        key = (r.node.file, r.node.line)
        return line_row(view, m, r, total, nodes.get(key), work.get(key))

    steps = view.session.typed_meta.profiled_steps
    on_lines = sum(m(r.self) for r in rows)
    out: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "dlpt": __version__,
        "session": {"path": path, "recorded_by": view.session.typed_meta.dlpt},
        "metric": {"name": m.name, "label": m.label, "unit": m.unit},
        "per": "step" if steps else "run",
        "total": round(total / per(view)),
        "header": header(view, report),
        "lines": [row_answer(r) for r in rows[:top]],
        "lines_with_cost": len(rows),
        "on_no_line": round(max(0, total - on_lines) / per(view)),
    }
    out["suggestions"] = suggestions(report)
    if line is not None:
        found = find_line(view, line)
        key = (found.node.file, found.node.line)
        out["line"] = detail(view, m, found, row_answer(found), nodes.get(key))
        # The suggestions placed on that line.
        out["line"]["suggestions"] = [
            s for s in out["suggestions"] if "at" in s and (s["at"]["file"], s["at"]["line"]) == key
        ]
    out["ranks"] = rank_of(view.session.typed_meta)
    return out
