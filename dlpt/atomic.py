"""Atomic file writes for render outputs (HTML reports, exports).

A report written at the end of an hour-long run must never be left half-written when the
process dies mid-write, and must never replace a good file with a truncated one: write a temp
file in the target's directory, then rename it over the target (atomic on POSIX), as
:meth:`dlpt.session.Session.save` does for sessions.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["write_text_atomic"]


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a temp file and a rename."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        # mkstemp creates 0600; give the file the permissions a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):  # the temp file may already be gone
            os.unlink(tmp)
        raise
