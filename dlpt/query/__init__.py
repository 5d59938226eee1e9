"""Answers for scripts and coding agents: what a report shows, as one small, versioned JSON
document (``dlpt query SESSION --json``, ``dlpt.load(path).query()``, the MCP server's tools).

The schema is docs/query-format.md; :data:`FORMAT` and :data:`VERSION` name it in every answer.
Everything here reads the analysis (:class:`~dlpt.views.run.RunView`, the report model,
``dlpt diff``'s verdicts) and words nothing itself: numbers are integers in ns or bytes per step
(or per run when no steps were counted), fractions in 0..1, and texts the report's own.
"""

from __future__ import annotations

from dlpt.query.answer import FORMAT, VERSION, query
from dlpt.query.loaded import LoadedSession, load

__all__ = ["FORMAT", "VERSION", "query", "load", "LoadedSession"]
