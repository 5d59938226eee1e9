"""Whether an existing file is one dlpt wrote, from the start of its content.

dlpt replaces an existing file only if it wrote it (dlpt.files.safe_files): ``-o run.json`` run
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
- a perfetto export (Chrome trace JSON): ``"otherData"`` first, its ``"exporter"`` ``dlpt ...``;
- a folded-stacks export: its first line, :data:`FOLDED_HEADER`, which reads as a comment and is
  itself a valid folded line of zero samples (flamegraph.pl, inferno and speedscope take it
  without a warning and draw nothing for it). Folded files of other tools (py-spy, perf) have the
  same shape as dlpt's, so the shape decides nothing: a folded file without the header (or one
  dlpt wrote before it had one) is not dlpt's.

An output replaces only a file of the kind it writes (:func:`kind_written`): a session only a
session, an HTML report an HTML report, a folded export a folded export, so that a typo
(``--html run.json``) cannot wipe a session.
"""

from __future__ import annotations

import re

__all__ = ["PREFIX_BYTES", "FOLDED_HEADER", "written_by_dlpt", "kind_written", "EXPORT_KINDS"]

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
_PERFETTO = re.compile(rb'\A\s*\{\s*"otherData"\s*:\s*\{\s*"exporter"\s*:\s*"dlpt ')
#: The first line of every folded export dlpt writes: dlpt's mark on it.
FOLDED_HEADER = "# folded stacks written by dlpt 0\n"

#: What each ``what`` (as :func:`dlpt.files.safe_files.check_output_path` names the outputs)
#: may replace: the kind :func:`written_by_dlpt` names.
_KIND_OF_WHAT = {
    "sessions": "session",
    "HTML reports": "HTML report",
    "text reports": "text report",
    "speedscope exports": "speedscope export",
    "folded exports": "folded export",
    "perfetto exports": "perfetto export",
}
EXPORT_KINDS = ("speedscope export", "folded export", "perfetto export")


def kind_written(what: str) -> tuple[str, ...] | None:
    """The kinds of dlpt file an output named ``what`` replaces ("sessions": a session only;
    "exports", unspecified: any export); None: any file dlpt wrote."""
    if what in _KIND_OF_WHAT:
        return (_KIND_OF_WHAT[what],)
    return EXPORT_KINDS if what == "exports" else None


def written_by_dlpt(prefix: bytes, complete: bool) -> str | None:
    """What dlpt output ``prefix`` starts ("session", "HTML report", "speedscope export", "text
    report", "perfetto export", "folded export"), or None. ``complete`` is kept for callers (the
    kinds are all recognised from their first bytes)."""
    if _SESSION.match(prefix):
        return "session"
    if _HTML_HEAD.match(prefix) and _HTML_GENERATOR in prefix[:8192]:
        return "HTML report"
    if _SPEEDSCOPE.match(prefix):
        return "speedscope export"
    if _TEXT_REPORT.match(prefix):
        return "text report"
    if _PERFETTO.match(prefix):
        return "perfetto export"
    return "folded export" if prefix.startswith(FOLDED_HEADER.encode()) else None
