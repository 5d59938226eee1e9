"""Inductor's kernel provenance, per generated wrapper: which FX nodes (with their stack traces)
each kernel launch of a compiled graph came from.

Inductor's line map (:mod:`.inductor_lines`) gives each wrapper line the stack trace of one FX
node, the *last* origin of the kernel launched there; where that node has no stack trace the line
has no model line, though other nodes of the same kernel have one. Provenance tracking
(``torch._inductor.config.trace.provenance_tracking_level``, torch 2.11 to 2.14) records the
stack traces of *every* node of each kernel, keyed ``"<kernel>:<debug handle>"``, and writes the
key above the kernel's launch in the wrapper (``# [Provenance debug handles] <kernel>:<handle>``).

Inductor keeps those traces per compiled graph only, in
``CompiledFxGraph.inductor_provenance_stack_traces_str`` (a JSON object), for a fresh compile
(set in ``__init__``) and for one served from the FX graph cache (the cached object, loaded in
``after_deserialization``). :func:`install` wraps both methods to copy the traces under the
graph's ``cache_key``, the stem of its wrapper module's file name (``<dir>/<key[1:3]>/<key>.py``).

While a profile runs, :func:`enable` sets the tracking level to 2 ("basic": kernel stack traces
only) unless the program chose one; :func:`restore` puts the program's back. The level is part of
torch 2.13's FX-cache key, so the first profiled run of a model compiles it afresh (cached after).
Compile-time cost only. A torch without these names records nothing (counted under
``provenance``), and the line map serves alone.
"""

from __future__ import annotations

import functools
import json
import os
import re
import threading
from typing import Any

from dlpt.capture.compile import failures

__all__ = ["install", "enable", "restore", "traces_for", "model_frames"]

_BASIC = 2  # Inductor's "basic" level: kernel -> stack traces, no node-mapping passes
_lock = threading.Lock()
_by_key: dict[str, str] = {}  # wrapper cache key -> the graph's provenance JSON (parsed when read)
_installed = False
_changed_from: int | None = None  # the program's level while ours is set


def _record(graph: Any) -> None:
    """Copy one compiled graph's kernel stack traces (never raises: a compile must not fail)."""
    try:
        key = getattr(graph, "cache_key", None)
        text = getattr(graph, "inductor_provenance_stack_traces_str", None)
        if isinstance(key, str) and key and isinstance(text, str) and text:
            with _lock:
                _by_key[key] = text
    except Exception as e:  # noqa: BLE001 - recording must never break a compile; counted
        failures.record("provenance", e)


def install() -> bool:
    """Wrap ``CompiledFxGraph.__init__`` and ``after_deserialization`` once; True if in place."""
    global _installed
    if _installed:
        return True
    try:
        from torch._inductor.output_code import CompiledFxGraph

        init, loaded = CompiledFxGraph.__init__, CompiledFxGraph.after_deserialization
    except Exception as e:  # noqa: BLE001 - another torch: the line map serves alone; counted
        failures.record("provenance", e)
        return False

    @functools.wraps(init)
    def recording_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        _record(self)

    @functools.wraps(loaded)
    def recording_load(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = loaded(self, *args, **kwargs)
        _record(self)
        return out

    # Wrapping the methods is the point (mypy forbids assigning to methods).
    CompiledFxGraph.__init__ = recording_init  # type: ignore[method-assign]
    CompiledFxGraph.after_deserialization = recording_load  # type: ignore[method-assign]
    _installed = True
    return True


def enable() -> None:
    """Provenance tracking on for what compiles from now on, unless the program set a level."""
    global _changed_from
    try:
        import torch._inductor.config as inductor_config

        level = inductor_config.trace.provenance_tracking_level
        if level == 0 and _changed_from is None:
            inductor_config.trace.provenance_tracking_level = _BASIC
            _changed_from = level
    except Exception as e:  # noqa: BLE001 - no such setting: the line map serves alone; counted
        failures.record("provenance", e)


def restore() -> None:
    """The program's tracking level back (if :func:`enable` changed it and nobody since)."""
    global _changed_from
    if _changed_from is None:
        return
    try:
        import torch._inductor.config as inductor_config

        if inductor_config.trace.provenance_tracking_level == _BASIC:
            inductor_config.trace.provenance_tracking_level = _changed_from
    except Exception as e:  # noqa: BLE001 - best effort, as when it was set; counted
        failures.record("provenance", e)
    _changed_from = None


def traces_for(wrapper: str) -> dict[str, list[str]]:
    """``"<kernel>:<handle>"`` -> stack traces, for the generated wrapper module at ``wrapper``
    (empty when its graph was compiled without provenance)."""
    key = os.path.splitext(os.path.basename(wrapper))[0]
    with _lock:
        text = _by_key.get(key)
    if not text:
        return {}
    try:
        parsed = json.loads(text)
    except ValueError as e:
        failures.record("provenance", e)
        return {}
    if not isinstance(parsed, dict):
        return {}
    return {str(k): [str(t) for t in v] for k, v in parsed.items() if isinstance(v, list)}


_FRAME = re.compile(r'File "(.+)", line (\d+), in (.+)\n')


def model_frames(stack_trace: str) -> list[dict[str, Any]]:
    """One FX stack trace as ``PyCodeCache.stack_frames_for_code`` gives frames: innermost first,
    ``{"filename", "line", "name"}`` (the same pattern Inductor parses them with)."""
    return [
        {"filename": f, "line": int(ln), "name": name}
        for f, ln, name in reversed(_FRAME.findall(stack_trace + "\n"))
    ]
