"""Reading and writing files without ever destroying, hanging on or swallowing the wrong thing.

dlpt reads files it is pointed at (``--load``, source files at stop) and writes where it is told
(``-o``, ``prof.save``, ``--html``, ``--export``, ``dlpt diff --html``). Those paths may name a
device (``/dev/zero``, ``/dev/full``), a FIFO that never delivers, a directory, ``/proc``, a
symlink, or a file of gigabytes. So:

- reads open with ``O_NONBLOCK`` (a FIFO cannot block the open), accept regular files only and
  read at most a given number of bytes;
- writes go to the symlink's target, never replace the link, and only ever replace a regular
  file: a temporary file in the target's directory is written, flushed and renamed over it, so
  a crash leaves the old file or the new one, never a mix; nothing else is created or replaced.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from typing import IO

from dlpt.errors import UnsafeFileError

__all__ = ["read_regular_file", "check_output_path", "atomic_text_writer", "write_text_file"]


def _kind(mode: int) -> str:
    for test, what in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return what
    return "not a regular file"


def read_regular_file(path: str | os.PathLike[str], limit: int) -> bytes:
    """The contents of ``path`` if it is a regular file of at most ``limit`` bytes.

    Raises FileNotFoundError / PermissionError / OSError as ``open`` would, and
    :class:`~dlpt.errors.UnsafeFileError` for anything that is not a regular file or is larger
    than ``limit`` (checked before reading, and again while reading a file that grows)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | os.O_CLOEXEC
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFileError(f"is {_kind(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise UnsafeFileError(f"is {_size(st.st_size)}, more than the {_size(limit)} dlpt reads")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise UnsafeFileError(f"is larger than the {_size(limit)} dlpt reads")
    return data


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    v = n / 1024
    for unit in ("KiB", "MiB"):
        if v < 1024:
            return f"{v:.1f} {unit}"
        v /= 1024
    return f"{v:.1f} GiB"


def check_output_path(path: str, what: str = "sessions") -> str:
    """Where writing ``path`` would go (a symlink's target), checked without writing it: an
    existing regular file we may replace, or a new name in a directory where we can create files.

    Raises :class:`~dlpt.errors.UnsafeFileError` saying why not (an empty path, a device, FIFO,
    directory or socket, a missing or read-only directory, ``/proc``); ``what`` names what is
    written ("sessions", "HTML reports") in the message."""
    if not path:
        raise UnsafeFileError("the path is empty")
    target = os.path.realpath(path)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise UnsafeFileError(e.strerror or str(e)) from None
    if st is not None:
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFileError(f"is {_kind(st.st_mode)}; dlpt writes {what} to regular files only")
        if not os.access(target, os.W_OK):
            raise UnsafeFileError("the file is not writable")
    directory = os.path.dirname(target)
    if not os.path.isdir(directory):
        raise UnsafeFileError(f"directory {directory} does not exist")
    # Whether files can be created there (os.access says yes to root on /proc and read-only
    # mounts): create and remove the kind of temporary file the write itself will use.
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=directory)
    except OSError as e:
        raise UnsafeFileError(f"cannot create files in {directory} ({e.strerror or e})") from None
    os.close(fd)
    os.unlink(probe)
    return target


@contextlib.contextmanager
def atomic_text_writer(path: str | os.PathLike[str], what: str = "sessions") -> Iterator[IO[str]]:
    """A UTF-8 text file to write; on success it replaces the target of ``path`` atomically.

    The target is ``path`` with symlinks resolved (the link stays, its file changes). It must be
    a regular file or not exist (:class:`~dlpt.errors.UnsafeFileError` otherwise). A replaced
    file keeps its permissions; a new one gets those ``open()`` would give it. If the body
    raises, the temporary file is removed and the target is untouched."""
    target = check_output_path(os.fspath(path), what)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    directory = os.path.dirname(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _sync_directory(directory)


def _sync_directory(directory: str) -> None:
    """Make the rename durable (best effort: not every file system lets a directory be synced)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_text_file(path: str | os.PathLike[str], text: str, what: str) -> None:
    """Write ``text`` to ``path`` through :func:`atomic_text_writer`: HTML reports and exports
    follow the same rules as sessions (``what`` names them in an error)."""
    with atomic_text_writer(path, what) as f:
        f.write(text)
