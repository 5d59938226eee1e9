"""Self-contained HTML reports: ``python -m dlpt --html out.html`` and ``dlpt diff --html``.

:func:`render_html` turns a session into one HTML document (flame graph, top-down, bottom-up
and flat tables, source view, header facts); :func:`write_html` writes it atomically. The data
model is built in :mod:`dlpt.renderers.html.data`, the document in :mod:`dlpt.renderers.html.page`, the page's
JS and CSS live in ``dlpt/renderers/html/assets/``.
"""

from __future__ import annotations

import os

from dlpt.files.safe_files import write_text_file
from dlpt.model.metrics import Metric
from dlpt.model.render_limit import check_sessions
from dlpt.model.session import Session
from dlpt.renderers.html.data import build_model
from dlpt.renderers.html.page import document
from dlpt.views.run import RunView

__all__ = ["render_html", "write_html", "REPORT_SCRIPTS", "REPORT_STYLES"]

REPORT_STYLES = ("report.css",)
REPORT_SCRIPTS = (
    "util.js",
    "model.js",
    "flame.js",
    "treetable.js",
    "tables.js",
    "leaves.js",
    "source.js",
    "header.js",
    "timeline.js",
    "app.js",
)


def render_html(
    source: Session | RunView,
    metric: str | Metric | None = None,
    show_all: bool | None = None,
    peak_tflops: float | None = None,
) -> str:
    """The HTML report of a session, or of the run's view of it (:mod:`dlpt.views.run`).
    ``metric`` is the one shown first; ``show_all`` keeps library frames (folded into their
    callers by default, as in the terminal report); ``peak_tflops`` replaces the datasheet peak
    for MFU (None: as the view given does). A session larger than a report is made of is refused
    (dlpt.model.render_limit)."""
    session = source.session if isinstance(source, RunView) else source
    check_sessions("an HTML report", session)
    model = build_model(source, metric=metric, show_all=show_all, peak_tflops=peak_tflops)
    title = f"dlpt · {model['header']['title']}"
    return document(title, model, REPORT_SCRIPTS, REPORT_STYLES)


def write_html(
    source: Session | RunView,
    path: str | os.PathLike[str],
    metric: str | Metric | None = None,
    show_all: bool | None = None,
    peak_tflops: float | None = None,
    *,
    force: bool = False,
) -> None:
    """Write :func:`render_html`'s document to ``path`` atomically, by dlpt.files.safe_files' rules
    (an existing file only if dlpt wrote it, or with ``force``)."""
    html = render_html(source, metric=metric, show_all=show_all, peak_tflops=peak_tflops)
    write_text_file(path, html, "HTML reports", force=force)
