"""A profile started while a *joinable* one runs (the one ``python -m dlpt`` starts) joins it
instead of recording on its own, so ``@dlpt.profile()`` in a script still works under the CLI.

A profile that joined records nothing itself: its ``step()`` marks steps of the running profile,
its ``stop()`` leaves that profile running, its session is the running one's once that stops,
and its ``save(path)`` asks the running profile to write the file when it stops
(:class:`SavesAtStop`). Its own options are ignored: :func:`join` warns when they differ from
both the defaults and the running profile's.

Thread contract: as the profile's (start and stop with the GIL held).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dlpt.errors import DlptError
from dlpt.model.safe_text import escape_control

__all__ = ["OPTIONS", "Joined", "SavesAtStop", "join", "options_of"]

#: The options a joining profile cannot have: the running profile's are the ones that record.
OPTIONS = (
    "skip_first",
    "active",
    "calibrate",
    "step_on",
    "gpu",
    "nested_ops",
    "sources",
    "flops",
    "memory",
    "sample_hz",
    "timeline",
    "exact_ops",
)


def options_of(prof: object) -> tuple[Any, ...]:
    """``prof``'s values of :data:`OPTIONS`, in that order."""
    return tuple(getattr(prof, name) for name in OPTIONS)


@dataclass
class Joined:
    """A profile's part in the running one it joined: ``host`` (that profile), and ``inside``:
    between this profile's start() and stop()."""

    host: Any  # dlpt.capture.profiler.Profile (which imports this module)
    inside: bool = True

    @property
    def waiting(self) -> bool:
        """The running profile has not stopped yet: no session exists."""
        return self.host.stopped_session is None


def join(guest: tuple[Any, ...], defaults: tuple[Any, ...], host: Any) -> Joined:
    """Join ``host``, the running profile, with the guest's options ``guest`` (as
    :func:`options_of` gives them): a warning when they are neither the defaults nor the host's."""
    if guest != defaults and guest != options_of(host):
        warnings.warn(
            "dlpt: this profile joins the one already running (python -m dlpt); its options "
            f"({', '.join(OPTIONS)}) are ignored: give them on the command line instead",
            RuntimeWarning,
            stacklevel=3,
        )
    return Joined(host)


@dataclass
class SavesAtStop:
    """The paths joined profiles asked the running one to save its session to, written when it
    stops (:meth:`write`)."""

    paths: list[str] = field(default_factory=list)

    def write(self, save: Callable[[str], object]) -> None:
        """``save`` each path; a failure is said, never raised (the profile itself is safe in
        memory, and the CLI saves its own copy)."""
        for path in self.paths:
            try:
                save(path)
            except (OSError, DlptError) as e:
                warnings.warn(
                    f"dlpt: could not save the profile to {escape_control(path)}: {e}",
                    RuntimeWarning,
                    stacklevel=3,
                )
        self.paths = []
