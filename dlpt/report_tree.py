"""The tree every report of a session starts from, shared by the HTML report, the exports and
``dlpt diff`` so that they agree with the terminal report on what a row is.

Same steps as the terminal renderer: library frames folded into their callers (unless
``show_all``), a ``<forward>`` phase that is its op's only phase dropped, compile-event markers
(graph break, recompiled xN) on the frames where they happened.
"""

from __future__ import annotations

from collections.abc import Callable

from dlpt.compile_events import line_markers
from dlpt.processors import collapse_library, collapse_lone_forward, mark_lines
from dlpt.session import Session
from dlpt.tree import Node, build_tree

__all__ = ["report_tree"]


def report_tree(
    session: Session, show_all: bool = False, before_lone_forward: Callable[[Node], None] | None = None
) -> Node:
    """Build ``session``'s tree as the reports show it.

    ``before_lone_forward`` is called on the tree while every op still has its ``<forward>``
    phase, for callers that need to know which work ran in the forward pass (the phase row is
    then dropped where it is the op's only phase).
    """
    root = build_tree(session)
    if not show_all:
        root = collapse_library(root)
    if before_lone_forward is not None:
        before_lone_forward(root)
    root = collapse_lone_forward(root)
    compiled = session.meta.get("compile")
    if isinstance(compiled, list) and compiled:
        root = mark_lines(root, line_markers(compiled))
    return root
