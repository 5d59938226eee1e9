"""The model frames of one line of Inductor's generated wrapper, from the best source there is.

A wrapper module (``<cache>/<key[1:3]>/<key>.py``) has two kinds of lines:

- lines of its functions (``call``, ``Runner.call``, ``partition_0``): what runs each time the
  compiled graph runs, one launch per kernel line. Their model frames come, in order, from
  1. Inductor's provenance of the kernel launched there (:mod:`.provenance`; the key is the
     ``# [Provenance debug handles] <kernel>:<handle>`` comment above the launch): the stack
     traces of all of the kernel's FX nodes. The line map's choice (the kernel's last node) is
     kept when it is one of them, so a fused kernel stays on the line it always had;
     otherwise the last node with a stack trace;
  2. Inductor's line map (``PyCodeCache.stack_frames_for_code``), for graphs compiled without
     provenance;
  3. the line that reads what this one writes: a launch that only makes a buffer for a later
     kernel has no FX node with a stack trace (the RNG seeds of a graph with dropout:
     ``aten.randint.low_out(..., out=buf1)``, one launch per run of the graph) and goes where
     its first reader goes (the first dropout's line). One hop, within the same function.
- module-level lines (imports, ``<kernel> = async_compile.triton(...)``,
  ``async_compile.wait(globals())``): they run once, when Inductor loads the module, and compile
  or load its kernels. They have no model line; their work is Inductor's (:attr:`Where.loading`).

Reads only the wrapper's text (cached per file) and the recorded provenance; never raises for a
file that is gone or is not Python (the line map alone then).
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass, field
from typing import Any

from dlpt.capture.compile import provenance

__all__ = ["Where", "WrapperText", "wrapper_text", "model_frames"]

_HANDLE = re.compile(r"#\s*\[Provenance debug handles\]\s*(\S+)")
_WRITES = re.compile(r"\bout=(buf\d+)\b|^\s*(buf\d+)\s*=")
# A comment applies to the launch within this many code lines after it.
_WINDOW = 3


@dataclass
class WrapperText:
    """One wrapper module's text: its lines, the line ranges of its functions and the
    provenance key of each launch line."""

    lines: tuple[str, ...] = ()
    functions: list[tuple[int, int]] = field(default_factory=list)  # (first, last) line of each def
    handles: dict[int, str] = field(default_factory=dict)  # launch line -> "<kernel>:<handle>"

    def function_of(self, line: int) -> tuple[int, int] | None:
        """The innermost def holding ``line`` (None: module level or unknown)."""
        inside = [r for r in self.functions if r[0] <= line <= r[1]]
        return min(inside, key=lambda r: r[1] - r[0]) if inside else None

    def at_load(self, line: int) -> bool:
        """Whether ``line`` is module-level code (runs when Inductor loads the module)."""
        return 0 < line <= len(self.lines) and bool(self.functions) and self.function_of(line) is None

    def reader_of(self, line: int) -> int | None:
        """The first later line of the same function that reads the buffer ``line`` writes."""
        where = self.function_of(line)
        m = _WRITES.search(self.lines[line - 1]) if 0 < line <= len(self.lines) else None
        if where is None or m is None:
            return None
        name = re.compile(rf"\b{m.group(1) or m.group(2)}\b")
        for i in range(line + 1, where[1] + 1):
            text = self.lines[i - 1].split("#", 1)[0]
            if name.search(text) and not text.lstrip().startswith(("del ", "assert")):
                return i
        return None


def _functions(source: str) -> list[tuple[int, int]]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    return [
        (n.lineno, n.end_lineno or n.lineno)
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]


def _handles(lines: tuple[str, ...]) -> dict[int, str]:
    out: dict[int, str] = {}
    pending, left = "", 0
    for i, text in enumerate(lines, 1):
        if m := _HANDLE.search(text):
            pending, left = m.group(1), _WINDOW
            continue
        code = text.strip()
        if not code or code.startswith("#"):
            continue
        if pending and left > 0:
            out[i] = pending
            pending, left = "", 0
        left -= 1
    return out


@functools.lru_cache(maxsize=256)
def wrapper_text(path: str) -> WrapperText:
    """The parsed text of one wrapper module (empty when it cannot be read)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            source = f.read()
    except OSError:
        return WrapperText()
    lines = tuple(source.split("\n"))
    return WrapperText(lines, _functions(source), _handles(lines))


@dataclass
class Where:
    """A generated line's model frames (innermost first, as Inductor gives them), where they came
    from, or that the line is the module's loading code."""

    frames: list[dict[str, Any]]
    source: str = ""  # "provenance", "line map", "reader" or "" (none found)
    loading: bool = False


def _innermost(frames: list[dict[str, Any]] | None) -> tuple[str, int] | None:
    return (str(frames[0]["filename"]), int(frames[0]["line"])) if frames else None


def _from_provenance(text: WrapperText, path: str, line: int, mapped: list[dict[str, Any]] | None) -> Any:
    key = text.handles.get(line)
    traces = provenance.traces_for(path).get(key, []) if key else []
    chains = [f for f in (provenance.model_frames(t) for t in traces) if f]
    if not chains:
        return None
    same = [c for c in chains if _innermost(c) == _innermost(mapped)]
    return mapped if same and mapped else chains[-1]


def model_frames(cache: Any, path: str, line: int) -> Where:
    """Where generated line ``path:line`` came from. ``cache`` is Inductor's ``PyCodeCache``
    (its ``stack_frames_for_code`` may raise: the caller counts that)."""
    text = wrapper_text(path)
    if text.at_load(line):
        return Where([], loading=True)
    own = _own(cache, text, path, line)
    if own.frames:
        return own
    reader = text.reader_of(line)
    if reader is not None:
        found = _own(cache, text, path, reader)
        if found.frames:
            return Where(found.frames, "reader")
    return own


def _own(cache: Any, text: WrapperText, path: str, line: int) -> Where:
    mapped = cache.stack_frames_for_code(path, line)
    chosen = _from_provenance(text, path, line, mapped)
    if chosen:
        return Where(list(chosen), "provenance")
    return Where(list(mapped or []), "line map" if mapped else "")
