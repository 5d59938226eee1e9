"""dlpt: which line of your PyTorch model costs how much GPU time, and why.

    import dlpt
    with dlpt.profile() as prof:
        train_steps()
    prof.print()

Or from the shell: ``python -m dlpt train.py args…``; a saved session answers queries:
``dlpt.load("run.json").query(top=10)`` (docs/query-format.md). See README.md.
"""

from __future__ import annotations

from dlpt import log  # noqa: F401  (DLPT_LOG takes effect when dlpt is imported)
from dlpt._version import __version__
from dlpt.api import profile
from dlpt.capture.scope import scope
from dlpt.errors import DlptError, NativeUnavailableError, ProfilerBusyError, SessionFormatError, UsageError
from dlpt.model.session import Session
from dlpt.query import load

__all__ = [
    "profile",
    "scope",
    "Session",
    "load",
    "DlptError",
    "NativeUnavailableError",
    "ProfilerBusyError",
    "SessionFormatError",
    "UsageError",
    "__version__",
]


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext dlpt`` in IPython or Jupyter: registers ``%dlpt`` and ``%%dlpt``
    (:mod:`dlpt.notebook`; IPython is imported only then)."""
    from dlpt.notebook import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: object) -> None:
    """``%unload_ext dlpt``."""
    from dlpt.notebook import unload_ipython_extension as unload

    unload(ipython)
