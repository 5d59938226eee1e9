"""The ``dlpt`` logger: where dlpt says what it could not do, without bothering the program.

dlpt runs inside someone else's program, so by default it logs nowhere (a ``NullHandler``; an
application that configures logging for ``dlpt`` gets the records). ``DLPT_LOG=debug`` (or
``info``, ``warning``, ``error``) in the environment adds a stderr handler at that level when
dlpt is imported: the way to see, for example, why Inductor's kernels could not be mapped to
model lines after a torch upgrade. Modules log through ``logging.getLogger(__name__)``, children
of this logger.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings

__all__ = ["ENV_VAR", "logger", "configure"]

ENV_VAR = "DLPT_LOG"
logger = logging.getLogger("dlpt")
logger.addHandler(logging.NullHandler())

_FORMAT = "dlpt %(levelname)s %(name)s: %(message)s"
_handler: logging.Handler | None = None  # the stderr handler DLPT_LOG installed, if any


def configure(level_name: str | None) -> logging.Handler | None:
    """Log dlpt's records at ``level_name`` and above to stderr, as ``DLPT_LOG`` does; returns the
    handler. None or "" changes nothing. Calling again replaces the previous handler.

    The records then stop propagating to the root logger, so an application that also logs to
    stderr does not print them twice.
    """
    global _handler
    if not level_name:
        return None
    level = logging.getLevelNamesMapping().get(level_name.strip().upper())
    if level is None:
        warnings.warn(
            f"dlpt: {ENV_VAR}={level_name!r} is not a log level (debug, info, warning, "
            "error); dlpt's logging stays off",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    if _handler is not None:
        logger.removeHandler(_handler)
    _handler = logging.StreamHandler(sys.stderr)
    _handler.setFormatter(logging.Formatter(_FORMAT))
    logger.addHandler(_handler)
    logger.setLevel(level)
    logger.propagate = False
    return _handler


configure(os.environ.get(ENV_VAR))
