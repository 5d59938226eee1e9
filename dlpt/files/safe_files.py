"""Reading and writing files without ever destroying, hanging on or swallowing the wrong thing.

dlpt reads files it is pointed at (``--load``, source files at stop) and writes where it is told
(``-o``, ``prof.save``, ``--html``, ``--export``, ``dlpt diff --html``). Those paths may name a
device (``/dev/zero``, ``/dev/full``), a FIFO that never delivers, a directory, ``/proc``, a
symlink, or a file of gigabytes. So:

- reads open with ``O_NONBLOCK`` (a FIFO cannot block the open), accept regular files only and
  read at most a given number of bytes;
- writes land where the kernel's own lookup of the path would, checked link by link
  (:mod:`dlpt.files.write_target`: no link planted in ``/tmp`` by another user, no dangling
  link, no other user's file, no ``..`` through a missing directory); this process's stdout
  and stderr are written as streams, never replaced;
- an existing file is replaced only if dlpt wrote it as the kind of file being written (a
  session by a session, an HTML report by an HTML report: :mod:`dlpt.files.own_files`), or it
  is empty (and no Python source), or with ``force``; a temporary file in the target's directory
  is written, flushed and renamed over it, so a crash leaves the old file or the new one, never
  a mix; nothing else is created or replaced.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from typing import IO

from dlpt.errors import UnsafeFileError
from dlpt.files.own_files import PREFIX_BYTES, kind_written, written_by_dlpt
from dlpt.files.write_target import Target, resolve_target

__all__ = [
    "read_regular_file",
    "check_output_path",
    "atomic_text_writer",
    "write_text_file",
    "on_partial_files",
]


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


_TEMP_NAME_BYTES = 200  # of the target's name in the temporary file's: NAME_MAX is 255 bytes

#: Temporary files being written: removed by the native grace when a signal ends the process in
#: the middle of a save (dlpt.cli.signals), which :func:`on_partial_files` keeps told.
_partial: set[str] = set()
_partial_listeners: list[Callable[[list[str]], None]] = []


def on_partial_files(listener: Callable[[list[str]], None]) -> Callable[[], None]:
    """Call ``listener`` with the temporary files being written each time they change (a save
    starts or ends); returns what stops it. Listeners must not raise."""
    _partial_listeners.append(listener)
    return lambda: _partial_listeners.remove(listener) if listener in _partial_listeners else None


def _partial_changed() -> None:
    now = sorted(_partial)
    for listener in list(_partial_listeners):
        listener(now)


def check_output_path(
    path: str,
    what: str = "sessions",
    *,
    force: bool = False,
    protected: Mapping[str, str] | None = None,
    probe: bool = True,
) -> Target:
    """Where writing ``path`` would go (:func:`dlpt.files.write_target.resolve_target`),
    checked without writing it: a new name in a directory where files can be created, an
    existing regular file dlpt wrote (or any regular file with ``force``), or this process's
    stdout or stderr (written as a stream).

    ``protected`` maps real paths that are never replaced without ``force`` to what they are
    ("the profiled script"). Raises :class:`~dlpt.errors.UnsafeFileError` saying why not;
    ``what`` names what is written ("sessions", "HTML reports") in the message. ``probe``:
    create and remove a temporary file to be sure files can be created there."""
    target = resolve_target(path)
    if target.stream is not None:
        try:
            os.fstat(target.stream)
        except OSError:
            raise UnsafeFileError(f"is this process's {_STREAMS[target.stream]}, which is closed") from None
        return target
    file = target.file
    assert file is not None
    if target.exists:
        try:
            st = os.stat(file)
        except OSError as e:
            raise UnsafeFileError(e.strerror or str(e)) from None
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFileError(f"is {_kind(st.st_mode)}; dlpt writes {what} to regular files only")
        if not os.access(file, os.W_OK):
            raise UnsafeFileError("the file is not writable")
        if not force:
            _check_ours(file, st, protected or {}, what)
    directory = os.path.dirname(file)
    if probe:
        # Whether files can be created there (os.access says yes to root on /proc and read-only
        # mounts): create and remove the kind of temporary file the write itself will use.
        try:
            fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(file), suffix=".tmp", dir=directory)
        except OSError as e:
            raise UnsafeFileError(f"cannot create files in {directory} ({e.strerror or e})") from None
        os.close(fd)
        os.unlink(tmp)
    return target


_STREAMS = {1: "stdout", 2: "stderr"}
_NOT_OURS = "not replaced (--force, or force=True, replaces it)"


def _check_ours(file: str, st: os.stat_result, protected: Mapping[str, str], what: str) -> None:
    """Refuse to replace ``file`` unless dlpt wrote it as the kind of file ``what`` names
    (dlpt.files.own_files) or it is empty and no Python source; ``protected`` files are
    refused whatever they hold."""
    role = protected.get(file)
    if role is not None:
        raise UnsafeFileError(f"is {role}; {_NOT_OURS}")
    if st.st_size == 0:
        if file.endswith((".py", ".pyw", ".pyi")):
            raise UnsafeFileError(f"is an empty Python source file; {_NOT_OURS}")
        return  # nothing to lose (`mktemp` makes such files for outputs to go to)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC
    try:
        fd = os.open(file, flags)
        with os.fdopen(fd, "rb") as f:
            prefix = f.read(PREFIX_BYTES)
    except OSError as e:
        raise UnsafeFileError(f"cannot read it to check that dlpt wrote it ({e.strerror or e})") from None
    kind = written_by_dlpt(prefix, complete=len(prefix) < PREFIX_BYTES)
    if kind is None:
        raise UnsafeFileError(
            f"exists and is not a file dlpt wrote (a session, an HTML report or an export); {_NOT_OURS}"
        )
    allowed = kind_written(what)
    if allowed is not None and kind not in allowed:
        raise UnsafeFileError(f"is a dlpt {kind} (dlpt replaces it only with another {kind}); {_NOT_OURS}")


def _temp_prefix(file: str) -> str:
    """``.NAME.`` for the temporary file next to ``file``, ``NAME`` cut so that the temporary
    name stays within NAME_MAX (255 bytes) however long the target's legal name is."""
    name = os.fsencode(os.path.basename(file))[:_TEMP_NAME_BYTES]
    return f".{os.fsdecode(name)}."


@contextlib.contextmanager
def atomic_text_writer(
    path: str | os.PathLike[str],
    what: str = "sessions",
    *,
    force: bool = False,
    protected: Mapping[str, str] | None = None,
) -> Iterator[IO[str]]:
    """A UTF-8 text file to write; on success it replaces the target of ``path`` atomically.

    The target is checked by :func:`check_output_path` (the same rules as before the program
    ran, ``force`` and ``protected`` as there) when the write starts, and again just before
    the rename. A symlink is written through (the link stays, its file changes). A replaced
    file keeps its permissions; a new one gets those ``open()`` would give it. If the body
    raises, the temporary file is removed and the target is untouched. This process's stdout
    or stderr is written as a stream (nothing replaced, nothing atomic)."""
    shown = os.fspath(path)
    target = check_output_path(shown, what, force=force, protected=protected, probe=False)
    if target.stream is not None:
        with _stream_writer(target.stream) as out:
            yield out
        return
    file = target.file
    assert file is not None
    try:
        mode = stat.S_IMODE(os.stat(file).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    directory = os.path.dirname(file)
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(file), suffix=".tmp", dir=directory)
    _partial.add(tmp)
    _partial_changed()
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        # Again at the last moment: the file may have been replaced while dlpt wrote.
        if check_output_path(shown, what, force=force, protected=protected, probe=False).file != file:
            raise UnsafeFileError("now leads somewhere else than when dlpt started writing; not replaced")
        os.replace(tmp, file)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    finally:
        _partial.discard(tmp)
        _partial_changed()
    _sync_directory(directory)


@contextlib.contextmanager
def _stream_writer(fd: int) -> Iterator[IO[str]]:
    """Write to this process's stdout or stderr as they are open now (``>> log`` appends, a
    pipe gets the bytes), after what Python buffered for them, and leave them open."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with open(os.dup(fd), "w", encoding="utf-8", closefd=True) as out:
        yield out


def _sync_directory(directory: str) -> None:
    """Make the rename durable (best effort: not every file system lets a directory be synced)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_text_file(
    path: str | os.PathLike[str],
    text: str,
    what: str,
    *,
    force: bool = False,
    protected: Mapping[str, str] | None = None,
) -> None:
    """Write ``text`` to ``path`` through :func:`atomic_text_writer`: HTML reports and exports
    follow the same rules as sessions (``what`` names them in an error)."""
    with atomic_text_writer(path, what, force=force, protected=protected) as f:
        f.write(text)
