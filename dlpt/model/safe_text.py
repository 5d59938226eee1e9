"""Make any string from a session safe to print: terminal control characters become visible
escapes.

A session is data from a file (``--load``) or from the profiled program (kernel, scope and file
names, source lines, argv), so any string in it may hold an escape sequence that would move the
cursor, recolour or clear the terminal, or rewrite a report saved to a file. rich removes a few
control characters but passes ESC through, so every session-provided string goes through
:func:`escape_control` before it reaches rich (and only ever as a ``Text``: a plain ``str`` cell
would be parsed as rich markup).
"""

from __future__ import annotations

import re

__all__ = ["escape_control"]

# C0 and C1 controls and DEL; line and paragraph separators (they break lines in some
# terminals); bidirectional overrides and isolates (they reorder what is displayed: "Trojan
# source"); the BOM; lone surrogates (JSON may hold them, and they cannot be encoded for output).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")


def _visible(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_control(text: str) -> str:
    """``text`` with every unsafe character written as its escape (``"\\x1b[2J"`` for ESC [2J)."""
    return _UNSAFE.sub(_visible, text) if _UNSAFE.search(text) else text
