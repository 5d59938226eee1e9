"""Source text stored in a session (``meta.sources``), read through the typed meta.

Producers store the profiled lines and a few around each as
``{"<file as in frame nodes>": {"<line number>": "<text>", ...}, ...}``. Renderers (the HTML
source view, ``dlpt diff``'s line matching) read only this: a renderer never opens the files a
session names, since the session may come from another machine or from someone else.

A loaded session's line numbers were checked as decimal digits (dlpt.model.meta); in one made in
memory, a file or line of the wrong shape is skipped rather than rejected (Meta.of): source text is
an aid to reading the profile, and an odd entry must not make a valid profile unreadable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dlpt.model.meta import Meta, typed

__all__ = ["Sources", "session_sources"]

#: file -> line number -> text of that line (no newline)
Sources = dict[str, dict[int, str]]


def session_sources(meta: Meta | Mapping[str, Any]) -> Sources:
    """The saved source text by file and line number (text without its line end); empty when
    the session has none."""
    out: Sources = {}
    for file, lines in (typed(meta).sources or {}).items():
        clean = {int(num): text.rstrip("\r\n") for num, text in lines.items()}
        if clean:
            out[file] = clean
    return out
