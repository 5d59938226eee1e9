"""Whether an existing file is one dlpt wrote, from the start of its content.

dlpt replaces an existing file only if it wrote it (dlpt.model.safe_files): ``-o run.json`` run
twice must work, ``-o notes.txt`` or ``-o train.py`` must not wipe the user's file. Names say
nothing (a session may be called anything), so the content decides, from a bounded prefix
(:data:`PREFIX_BYTES`) so that the check costs the same for a 1 GB file as for a small one:

- a session: JSON whose first key is ``"format": "dlpt-session"`` (every dlpt version wrote
  ``format`` first);
- an HTML report or HTML diff: ``<meta name="generator" content="dlpt">`` in its head (every
  page dlpt wrote has it, before any session string);
- a speedscope export: speedscope's ``$schema`` and ``"exporter": "dlpt ..."`` (dlpt writes the
  exporter right after the schema, so a long program name cannot push it out of the prefix);
- a text report (``--report-file``): the report's header box, whose first row starts with
  ``dlpt`` (Unicode or ASCII box), or ``dlpt diff`` as the first word of a comparison;
- a folded-stacks export: every line ``stack value`` with an integer value, and at least one
  stack in dlpt's shape (frames joined by ``;``, a ``file.py:LINE function`` frame, or
  ``<root>``). The format has no room for a marker that flamegraph.pl and inferno would not
  warn about, so a file of ``word number`` lines is *not* taken for one unless a line looks like
  a dlpt stack.
"""

from __future__ import annotations

import re

__all__ = ["PREFIX_BYTES", "written_by_dlpt"]

PREFIX_BYTES = 64 * 1024

_SESSION = re.compile(rb'\A\s*\{\s*"format"\s*:\s*"dlpt-session"')
_HTML_HEAD = re.compile(rb"\A\s*<!DOCTYPE html>", re.IGNORECASE)
_HTML_GENERATOR = b'<meta name="generator" content="dlpt">'
_SPEEDSCOPE = re.compile(
    rb'\A\s*\{\s*"\$schema"\s*:\s*"https://www\.speedscope\.app/file-format-schema\.json"'
    rb'.*?"exporter"\s*:\s*"dlpt ',
    re.DOTALL,
)
_TEXT_REPORT = re.compile(
    rb"\A(?:(?:\xe2\x95\xad(?:\xe2\x94\x80)+\xe2\x95\xae|\+-+\+)\r?\n(?:\xe2\x94\x82|\|) dlpt |dlpt diff  )"
)
_FOLDED_LINE = re.compile(r"[^\s].* [0-9]+")
_DLPT_STACK = re.compile(r";|\S:[0-9]+ |\A<root> ")


def written_by_dlpt(prefix: bytes, complete: bool) -> str | None:
    """What dlpt output ``prefix`` starts ("session", "HTML report", "speedscope export", "text
    report", "folded export"), or None. ``complete``: ``prefix`` is the whole file (otherwise its last
    line may be cut short)."""
    if _SESSION.match(prefix):
        return "session"
    if _HTML_HEAD.match(prefix) and _HTML_GENERATOR in prefix[:8192]:
        return "HTML report"
    if _SPEEDSCOPE.match(prefix):
        return "speedscope export"
    if _TEXT_REPORT.match(prefix):
        return "text report"
    return "folded export" if _folded(prefix, complete) else None


def _folded(prefix: bytes, complete: bool) -> bool:
    try:
        text = prefix.decode("utf-8")
    except UnicodeDecodeError as e:
        if complete or e.start < len(prefix) - 4:  # not merely a character cut at the end
            return False
        text = prefix[: e.start].decode("utf-8")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    elif not complete and len(lines) > 1:
        lines.pop()  # cut short by the prefix
    if not lines or not all(_FOLDED_LINE.fullmatch(line) for line in lines):
        return False
    return any(_DLPT_STACK.search(line.rsplit(" ", 1)[0] + " ") for line in lines)
