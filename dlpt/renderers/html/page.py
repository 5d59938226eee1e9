"""Assemble one self-contained HTML document: inline CSS, the data model as JSON in a
``<script type="application/json">`` block, inline JS. No network, works from ``file://``.

Safety: session strings (kernel, file and function names, source text) reach the page only
inside the JSON block, where every ``<``, ``>`` and ``&`` is written as a ``\\u`` escape, so no
string can close the block or open a tag; the scripts build the DOM with ``textContent``. A
Content-Security-Policy forbids every fetch, so a report cannot phone home either.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["ASSETS", "embed_json", "document"]

ASSETS = Path(__file__).parent / "assets"

_CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)


@cache
def _asset(name: str) -> str:
    text = (ASSETS / name).read_text(encoding="utf-8")
    # Inline <script>/<style> end at the first "</script"/"</style"; assets must not contain it.
    low = text.lower()
    if "</script" in low or "</style" in low:
        raise ValueError(f"asset {name} contains a closing script/style tag")
    return text


def embed_json(data: Any) -> str:
    """``data`` as JSON that is inert inside a script data block (pure ASCII; ``<``, ``>``,
    ``&`` escaped). ``ensure_ascii`` also keeps lone surrogates from a foreign session from
    breaking the UTF-8 encoding of the page."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def document(title: str, data: Any, scripts: Sequence[str], styles: Sequence[str]) -> str:
    """The whole page. ``scripts``/``styles`` name files in ``assets/``, inlined in order."""
    safe_title = html.escape(title, quote=True).encode("ascii", "xmlcharrefreplace").decode("ascii")
    css = "\n".join(_asset(s) for s in styles)
    js = "\n".join(_asset(s) for s in scripts)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="generator" content="dlpt">\n'
        f"<title>{safe_title}</title>\n"
        f"<style>\n{css}\n</style>\n</head>\n<body>\n"
        '<div id="app"><noscript>This dlpt report needs JavaScript.</noscript></div>\n'
        f'<script type="application/json" id="dlpt-data">{embed_json(data)}</script>\n'
        f"<script>\n{js}\n</script>\n</body>\n</html>\n"
    )
