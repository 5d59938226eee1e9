"""``--inline-html``: the HTML report shown in the notebook itself.

The report is a whole page (its own scripts, styles and Content-Security-Policy), so it goes into
an ``<iframe srcdoc>``: the notebook's styles cannot reach it and it cannot reach the notebook
(``sandbox="allow-scripts"``: its scripts run, in an origin of their own, with no access to the
notebook's page or storage). The page is embedded in the notebook's output, so a saved notebook
carries it (about 1 MB for a 10,000-node profile).
"""

from __future__ import annotations

import html

from dlpt.model.metrics import Metric
from dlpt.model.session import Session
from dlpt.renderers.html import render_html
from dlpt.views.run import RunView

__all__ = ["HEIGHT_PX", "inline_report"]

HEIGHT_PX = 760


def inline_report(
    session: Session | RunView,
    metric: str | Metric | None = None,
    show_all: bool | None = None,
    peak_tflops: float | None = None,
) -> str:
    """An ``<iframe>`` holding the HTML report of ``session`` (or the run's view of it), for
    ``IPython.display.HTML`` (in a ``<div>``: IPython warns about HTML that starts with an
    iframe)."""
    page = render_html(session, metric=metric, show_all=show_all, peak_tflops=peak_tflops)
    return (
        '<div class="dlpt-inline">'
        f'<iframe class="dlpt-report" title="dlpt report" sandbox="allow-scripts" '
        f'style="width: 100%; height: {HEIGHT_PX}px; border: 1px solid #d0d7de; border-radius: 6px" '
        f'srcdoc="{html.escape(page, quote=True)}"></iframe></div>'
    )
