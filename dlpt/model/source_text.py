"""Source text stored in a session (``meta["sources"]``), read defensively.

Producers store the profiled lines and a few around each as
``{"<file as in frame nodes>": {"<line number>": "<text>", ...}, ...}``. Renderers (the HTML
source view, ``dlpt diff``'s line matching) read only this: a renderer never opens the files a
session names, since the session may come from another machine or from someone else.

Anything malformed is skipped rather than rejected: source text is an aid to reading the
profile, and an odd entry must not make a valid profile unreadable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["Sources", "session_sources"]

#: file -> line number -> text of that line (no newline)
Sources = dict[str, dict[int, str]]


def session_sources(meta: Mapping[str, Any]) -> Sources:
    """The well-formed part of ``meta["sources"]``; empty when the session has none."""
    raw = meta.get("sources")
    out: Sources = {}
    if not isinstance(raw, Mapping):
        return out
    for file, lines in raw.items():
        if not isinstance(file, str) or not isinstance(lines, Mapping):
            continue
        clean: dict[int, str] = {}
        for num, text in lines.items():
            if isinstance(num, str) and num.isascii() and num.isdigit() and isinstance(text, str):
                clean[int(num)] = text.rstrip("\r\n")
        if clean:
            out[file] = clean
    return out
