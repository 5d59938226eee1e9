"""The largest session dlpt renders: a bound on the memory a report takes.

Rendering builds the report tree and its views in memory, about 1.6 KB per session node at the
peak (the HTML report of a 1,000,000-node session, 120 MB of JSON: 1.59 GB peak RSS, measured
with ``python -m dlpt --load s.json --html r.html`` on tools/render_scale.py's session; the
text report of the same session: 0.86 GB), so a 4,000,000-node session took 6 GB and a
comparison of 4M and 3M nodes 10 GB, and a session at the 1 GiB file limit (~8M nodes) would
take 13 GB. Reports (the text report, the HTML report, the tree's exports, ``dlpt diff``) are
therefore made of at most :data:`MAX_RENDER_NODES` nodes (~3.2 GB at the peak); a larger
session is refused in one line (the session itself is kept and still saved with ``-o``;
nothing is written over). A session that large is far beyond a real profile (100,000 call sites
make ~300,000 nodes). A timeline window's events and frames cost what nodes do (an 88 MB file of
mostly timeline took 4.2 GB and a 661 MB perfetto export): they count with the nodes
(:func:`render_size`), for every report and export, the perfetto one included.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dlpt.errors import DlptError

if TYPE_CHECKING:
    from dlpt.model.session import Session

__all__ = ["MAX_RENDER_NODES", "TooLargeToRender", "check_renderable", "check_sessions", "render_size"]

MAX_RENDER_NODES = 2_000_000
_BYTES_PER_NODE = 1_600  # the measured peak per node (module docstring)


class TooLargeToRender(DlptError):
    """A session (or two, compared) with more nodes than a report is made of."""


def check_renderable(nodes: int, what: str, timeline: int = 0) -> None:
    """Raise :class:`TooLargeToRender` when ``nodes`` and ``timeline`` events (of the session, or
    of both sessions of a comparison) exceed :data:`MAX_RENDER_NODES`; ``what`` names the report
    in the message."""
    if nodes + timeline > MAX_RENDER_NODES:
        gb = MAX_RENDER_NODES * _BYTES_PER_NODE / 1e9
        size = f"{nodes:,} nodes and {timeline:,} timeline events" if timeline else f"{nodes:,} nodes"
        together = " (together)" if timeline else ""
        raise TooLargeToRender(
            f"{size}: {what} is made of at most {MAX_RENDER_NODES:,}{together} (about {gb:.1f} GB of memory)"
        )


def render_size(session: Session) -> tuple[int, int]:
    """(nodes, timeline events and frames) of ``session``: what a report of it is made of."""
    timeline = session.typed_meta.timeline
    rows = len(timeline.events) + len(timeline.frames) if timeline is not None else 0
    return len(session.nodes), rows


def check_sessions(what: str, *sessions: Session) -> None:
    """:func:`check_renderable` for ``sessions`` (both of a comparison) as they are."""
    sizes = [render_size(s) for s in sessions]
    check_renderable(sum(n for n, _ in sizes), what, sum(t for _, t in sizes))
