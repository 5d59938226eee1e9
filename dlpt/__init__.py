"""dlpt: which line of your PyTorch model costs how much GPU time, and why.

    import dlpt
    with dlpt.profile() as prof:
        train_steps()
    prof.print()

Or from the shell: ``python -m dlpt train.py args…``; a saved session answers queries:
``dlpt.load("run.json").query(top=10)`` (docs/query-format.md). See README.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from dlpt import log  # noqa: F401  (DLPT_LOG takes effect when dlpt is imported)
from dlpt._version import __version__
from dlpt.errors import DlptError, NativeUnavailableError, ProfilerBusyError, SessionFormatError, UsageError
from dlpt.model.session import Session

if TYPE_CHECKING:
    from dlpt.api import profile
    from dlpt.capture.scope import scope
    from dlpt.query import load

#: Names imported on first use: they import torch (1-2 s), which ``python -m dlpt --help``,
#: ``--version`` and a bad option never need (the package is imported before its __main__).
_LAZY = {"profile": "dlpt.api", "scope": "dlpt.capture.scope", "load": "dlpt.query"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'dlpt' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


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
