"""Exception classes used across dlpt.

Every error dlpt raises on purpose derives from :class:`DlptError`, so a caller (the CLI in
particular) can catch one type and show ``str(err)`` to the user without a traceback: the message
is written for people, not for debugging.
"""

from __future__ import annotations

__all__ = [
    "DlptError",
    "SessionFormatError",
    "UsageError",
    "ProfilerBusyError",
    "NativeUnavailableError",
    "UnsafeFileError",
]


class DlptError(Exception):
    """Base class of dlpt's errors; ``message`` is user-facing and complete on its own."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class SessionFormatError(DlptError):
    """A session file or dict is missing, corrupt, truncated, not a dlpt session, or of a
    version this dlpt cannot read."""


class UsageError(DlptError):
    """The API or CLI was used incorrectly (bad option, bad argument combination)."""


class ProfilerBusyError(DlptError):
    """A profile was started while another one is still running in this process."""


class NativeUnavailableError(DlptError):
    """The native extension (dlpt._C) could not be loaded or lacks a needed capability."""


class UnsafeFileError(DlptError):
    """A path names something dlpt will not read or write: not a regular file (a device, FIFO,
    directory, socket), a file larger than dlpt reads, or a place where no file can be created.
    The message completes the path: ``f"{path}: {err}"``."""
