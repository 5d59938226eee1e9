"""Brendan Gregg's folded stacks, ``frame;frame;frame value`` per line, for ``flamegraph.pl`` and
``inferno-flamegraph``; one metric (``--metric``, default as in the terminal report). Raw totals
over the profiled window (not per step), from the run's view's whole tree, so the values of all
folded lines sum to the session's total of the metric."""

from __future__ import annotations

from dlpt.files.own_files import FOLDED_HEADER
from dlpt.model.metrics import Metric
from dlpt.model.session import Session
from dlpt.renderers.exports.stacks import frame_label, stacks
from dlpt.views.run import RunView, view_of

__all__ = ["folded"]


def folded(
    source: Session | RunView, metric: str | Metric | None = None, show_all: bool | None = None
) -> str:
    """Folded stacks of a session or of the run's view of it for one metric: ``a;b;c value`` per
    distinct stack (in tree order), integer values. Semicolons inside names would split frames,
    so they become commas."""
    sv = view_of(source, show_all)
    root, m = sv.whole, sv.metric(metric)
    lines: dict[str, int] = {}
    for path, v in stacks(root, m):
        stack = ";".join(frame_label(n).replace(";", ",") for n in path) if path else "<root>"
        lines[stack] = lines.get(stack, 0) + v
    # The header marks the file as dlpt's (dlpt.files.own_files): only it may be replaced.
    return FOLDED_HEADER + "".join(f"{stack} {v}\n" for stack, v in lines.items())
