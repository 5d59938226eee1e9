"""``dlpt.load(path)``: a saved session that answers queries (``.query(...)``), as ``dlpt query``
does on the command line. The session is folded and analysed once, on the first query; later
queries of the same session reuse that view."""

from __future__ import annotations

import os
from typing import Any

from dlpt.model.session import Session
from dlpt.query.answer import query
from dlpt.views.run import RunView, build_view

__all__ = ["LoadedSession", "load"]


class LoadedSession(Session):
    """A :class:`~dlpt.model.session.Session` read from a file, with :meth:`query`."""

    path: str | None = None
    _view: RunView | None = None

    def view(self) -> RunView:
        """The session folded and analysed (once)."""
        if self._view is None or self._view.session is not self:
            self._view = build_view(self)
        return self._view

    def query(self, top: int = 20, line: str | None = None, metric: str | None = None) -> dict[str, Any]:
        """The answer docs/query-format.md describes: the header, the ``top`` lines by own cost
        of ``metric`` (default: GPU time when the run has any, else CPU op time), ``line``'s
        detail (``"train.py:42"``) when given, the suggestions and the ranks. Raises
        :class:`~dlpt.errors.UsageError` for a bad argument or a line the session does not hold."""
        return query(self.view(), top=top, line=line, metric=metric, path=self.path)


def load(path: str | os.PathLike[str]) -> LoadedSession:
    """Load a saved session (``python -m dlpt -o run.json ...``) to query it:
    ``dlpt.load("run.json").query(top=10)``. Raises :class:`~dlpt.errors.SessionFormatError`
    (a :class:`~dlpt.errors.DlptError`) for a missing, unreadable or malformed file."""
    s = LoadedSession.load(path)
    assert isinstance(s, LoadedSession)  # Session.load builds its own class
    s.path = os.fspath(path)
    return s
