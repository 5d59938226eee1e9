"""Exports of a session for other tools, one module per format: ``speedscope``
(:mod:`.speedscope`, speedscope.app's JSON, one profile per metric), ``folded``
(:mod:`.folded`, folded stacks for flamegraph.pl and inferno) and ``perfetto``
(:mod:`.perfetto`, the ``--timeline`` window as a Chrome trace); what the stack exports share
(how a node is named, a tree's stacks) is :mod:`.stacks`. :func:`write_export` writes any of
them by the rules of every file dlpt writes (:mod:`dlpt.files.safe_files`).
"""

from __future__ import annotations

import json
import os

from dlpt.errors import UsageError
from dlpt.files.safe_files import write_text_file
from dlpt.model.metrics import Metric
from dlpt.model.render_limit import check_sessions
from dlpt.model.session import Session
from dlpt.renderers.exports.folded import folded
from dlpt.renderers.exports.perfetto import perfetto
from dlpt.renderers.exports.speedscope import speedscope
from dlpt.renderers.exports.stacks import frame_label
from dlpt.views.run import RunView

__all__ = ["FORMATS", "frame_label", "speedscope", "folded", "perfetto", "write_export"]

FORMATS = ("speedscope", "folded", "perfetto")


def write_export(
    source: Session | RunView,
    fmt: str,
    path: str | os.PathLike[str],
    metric: str | Metric | None = None,
    show_all: bool | None = None,
    *,
    force: bool = False,
) -> None:
    """Write the ``fmt`` export of a session or of the run's view of it to ``path`` atomically
    (an existing file only if dlpt wrote it, or with ``force``: dlpt.files.safe_files). Every
    export is made of at most dlpt.model.render_limit's nodes and timeline events."""
    session = source.session if isinstance(source, RunView) else source
    check_sessions(f"a {fmt} export", session)
    if fmt == "speedscope":
        text = (
            json.dumps(speedscope(source, metric, show_all), separators=(",", ":"), ensure_ascii=True) + "\n"
        )
    elif fmt == "folded":
        text = folded(source, metric, show_all)
    elif fmt == "perfetto":
        text = json.dumps(perfetto(source), separators=(",", ":"), ensure_ascii=True) + "\n"
    else:
        raise UsageError(f"unknown export format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    write_text_file(path, text, f"{fmt} exports", force=force)
