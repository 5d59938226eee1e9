"""What the exports share: how a node is named (:func:`frame_label`), the stacks of a tree with
their self values (:func:`stacks`) and the program's name (:func:`program_name`)."""

from __future__ import annotations

import os
from collections.abc import Iterator

from dlpt.model.meta import program_argv
from dlpt.model.metrics import Metric
from dlpt.model.resume_names import display_name
from dlpt.model.session import Session
from dlpt.model.tree import Node, walk

__all__ = ["frame_label", "printable", "program_name", "stacks"]


def printable(s: str) -> str:
    return "".join(c if c.isprintable() else " " for c in s)


def frame_label(node: Node) -> str:
    """How a node is named in an export: ``file.py:12 function`` for source lines (what the
    terminal shows first), ``scope "name"`` for scopes, the name for everything else."""
    if node.kind == "frame":
        return printable(f"{os.path.basename(node.file) or node.file}:{node.line} {display_name(node.name)}")
    if node.kind == "scope":
        return printable(f'scope "{node.name}"')
    if node.kind == "root":
        return "<root>"
    return printable(node.name)


def stacks(root: Node, metric: Metric) -> Iterator[tuple[list[Node], int]]:
    """(path below the root, self value) of every node with a self value of ``metric``; the
    root's own value, if any, comes with an empty path."""
    path: list[Node] = []
    for node, depth in walk(root):
        del path[max(depth - 1, 0) :]
        if depth > 0:
            path.append(node)
        v = metric(node.metrics)
        if v > 0:
            yield list(path), v


def program_name(session: Session) -> str:
    return " ".join(program_argv(session.typed_meta)) or "dlpt profile"
