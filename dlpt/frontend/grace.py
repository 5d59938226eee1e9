"""The grace: how long dlpt may take to save after a signal before the process dies of it
(``--signal-grace``, ``DLPT_SIGNAL_GRACE``; :mod:`dlpt.cli.signals` enforces it)."""

from __future__ import annotations

import os

from dlpt.errors import UsageError

__all__ = ["DEFAULT_GRACE_S", "GRACE_ENV", "grace_s"]

#: How long dlpt may take to save after a signal, unless told otherwise.
DEFAULT_GRACE_S = 10.0
#: The environment variable that sets the grace (seconds) when ``--signal-grace`` is not given.
GRACE_ENV = "DLPT_SIGNAL_GRACE"


def grace_s(option: float | None) -> float:
    """The grace: ``option`` (``--signal-grace``) if given, else :data:`GRACE_ENV`, else the
    default. UsageError for a value that is not a finite number of seconds > 0."""
    given: str | float | None = option
    where = "--signal-grace"
    if option is None:
        given, where = os.environ.get(GRACE_ENV), GRACE_ENV
    if given is None or given == "":
        return DEFAULT_GRACE_S
    try:
        value = float(given)
    except ValueError:
        raise UsageError(f"{where} must be a number of seconds, got {given!r}") from None
    if not 0 < value < float("inf"):
        raise UsageError(f"{where} must be a number of seconds > 0, got {given}")
    return value
