"""Dynamo's resume functions: after a graph break Dynamo compiles the rest of the function as a new
function named ``torch_dynamo_resume_in_<function>_at_<line>``, ``<line>`` being the line of the
break. dlpt locates graph breaks by that name and shows such frames as the function they continue.
"""

from __future__ import annotations

import re

__all__ = ["parse_resume_name", "display_name"]

_RESUME = re.compile(r"^torch_dynamo_resume_in_(.+)_at_(\d+)$")
# Also inside a qualified name (``Net.torch_dynamo_resume_in_forward_at_44``), as frames show it.
_RESUME_IN_QUALNAME = re.compile(r"(?:^|(?<=\.))torch_dynamo_resume_in_(\w+?)_at_(\d+)$")


def parse_resume_name(co_name: str) -> tuple[str, int] | None:
    """(function continued, line of the graph break) for a resume function's code name, else None."""
    m = _RESUME.match(co_name)
    return (m.group(1), int(m.group(2))) if m else None


def display_name(name: str) -> str:
    """A function's display name; a resume function reads as the function it continues:
    ``forward (resumed after line 44)``."""
    m = _RESUME_IN_QUALNAME.search(name)
    if m is None:
        return name
    return f"{name[: m.start()]}{m.group(1)} (resumed after line {m.group(2)})"
