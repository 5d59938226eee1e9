"""Frame anchors: where the native core's walk of a thread's Python frames may stop.

Every outermost op and every launch outside an op needs its Python path, and reading it is a
walk of every frame (~60 in a Hugging Face ``generate`` step). A frame outward of which nothing
changed since the last walk could end it, but a frame at the same address with the same code is
no proof: CPython reuses a returned frame's memory for the next call. What proves it is that no
activation of that code began since, which CPython 3.12+ reports: ``sys.monitoring``'s PY_START
event, for the codes a tool asks for. The core picks a few outer frames per thread, asks for
their codes, counts their starts per thread, and stops a walk at such a frame while its count
is unchanged (csrc/frames/activations.h, csrc/context/frame_anchors.h).

This module lends the core a ``sys.monitoring`` tool id for the profile's duration (3 or 4, the
ids CPython leaves unnamed; none taken if both are in use) and gives it back at stop, every
event it asked for switched off. CPython 3.11 has no ``sys.monitoring``: every walk goes to the
root there. ``DLPT_FRAME_ANCHORS=0`` keeps it off (``bench/paired.py``'s ``dlpt_noanchors``).

Thread contract: :func:`enable` and :func:`disable` with the GIL held (the profile's start and
stop); the PY_START callback is the core's own C function (no Python runs per event).
"""

from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import Any

__all__ = ["available", "disable", "enable"]

_TOOL_IDS = (4, 3)  # sys.monitoring's ids without a predefined role (0-2 and 5 have one)


def available() -> bool:
    """Whether this Python can tell activations apart (3.12+) and the user has not turned it off."""
    return hasattr(sys, "monitoring") and os.environ.get("DLPT_FRAME_ANCHORS", "1") != "0"


def enable(core: ModuleType) -> int | None:
    """Takes a free tool id and hands it to the core; returns it, or None (not available, or
    every id taken: walks then go to the root, as on 3.11)."""
    if not available():
        return None
    mon: Any = sys.monitoring  # type: ignore[attr-defined,unused-ignore]
    for tool in _TOOL_IDS:
        if mon.get_tool(tool) is not None:
            continue
        mon.use_tool_id(tool, "dlpt")
        try:
            mon.register_callback(tool, mon.events.PY_START, core.activation_started)
            core.anchors_enable(tool, mon.set_local_events, mon.get_local_events, mon.events.PY_START)
        except BaseException:
            mon.register_callback(tool, mon.events.PY_START, None)
            mon.free_tool_id(tool)
            raise
        return tool
    return None


def disable(core: ModuleType, tool: int | None) -> None:
    """Switches off every event the core asked for and gives the tool id back."""
    if tool is None:
        return
    mon: Any = sys.monitoring  # type: ignore[attr-defined,unused-ignore]
    core.anchors_disable()
    mon.register_callback(tool, mon.events.PY_START, None)
    mon.free_tool_id(tool)
