"""Where writing an output path would land, worked out the way the kernel looks it up, and never
through a trap.

``os.path.realpath`` is not that: it resolves ``..`` after a missing directory lexically
(``nodir/../x`` becomes ``x``, where the shell says "No such file or directory"), drops a
trailing ``/`` (``notes.txt/`` becomes ``notes.txt``), follows any symlink (one another user
planted in ``/tmp``, a dangling one, whose target would be created), and resolves
``/dev/stdout`` to whatever file the shell opened for it (``>> log.txt``), which an atomic
replace would then wipe. So :func:`resolve_target` walks the path one component at a time:

- ``..`` goes up from the directory actually reached, and every directory must exist;
- a path ending in ``/``, ``.`` or ``..`` names a directory and is refused (as the shell does);
- a symlink is followed only if it is not in a world-writable sticky directory (``/tmp``) while
  owned by someone else (the kernel's ``protected_symlinks`` rule, whatever the sysctl says),
  its final target exists (a dangling link is refused, not created through) and that target is
  the caller's own file;
- this process's stdout and stderr (``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/1``,
  ``/proc/self/fd/2``, or a link to them) are a *stream*: written to the open file descriptor,
  never replaced; anything else under ``/proc`` is refused.

What it returns is checked further by :mod:`dlpt.files.safe_files` (file type, permissions,
whether dlpt wrote the file it would replace).
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections import deque
from dataclasses import dataclass

from dlpt.errors import UnsafeFileError

__all__ = ["Target", "resolve_target", "absolute", "MAX_LINKS"]

MAX_LINKS = 40  # the kernel's limit on symlinks followed in one lookup (ELOOP beyond)


@dataclass(frozen=True)
class Target:
    """Where a write of ``path`` goes: the regular file ``file`` (symlinks resolved), which
    ``exists`` or is a new name, or ``stream``, the file descriptor (1 or 2) of this process's
    stdout or stderr."""

    path: str
    file: str | None
    exists: bool
    stream: int | None = None
    via_link: bool = False


def _check_link(link: str, st: os.stat_result) -> None:
    """Refuse a symlink in a world-writable sticky directory (``/tmp``) owned by someone else:
    whoever can write there could have planted it to point anywhere the caller may write."""
    try:
        parent = os.stat(os.path.dirname(link) or "/")
    except OSError as e:
        raise UnsafeFileError(
            f"cannot check the directory of the symlink {link} ({e.strerror or e})"
        ) from None
    sticky_shared = parent.st_mode & stat.S_ISVTX and parent.st_mode & stat.S_IWOTH
    if sticky_shared and st.st_uid != os.geteuid():
        raise UnsafeFileError(
            f"{link} is another user's symlink in a world-writable sticky directory; dlpt does not follow it"
        )


class _Walk:
    """One lookup: counts the symlinks it follows (ELOOP past :data:`MAX_LINKS`)."""

    def __init__(self) -> None:
        self.links = 0

    def follow(self, link: str, st: os.stat_result) -> str:
        _check_link(link, st)
        self.links += 1
        if self.links > MAX_LINKS:
            raise UnsafeFileError(os.strerror(errno.ELOOP))
        return os.readlink(link)

    def directory(self, path: str) -> str:
        """The physical directory ``path`` names (absolute, no symlinks), looked up component
        by component; UnsafeFileError if a component is missing or not a directory."""
        real = "/" if os.path.isabs(path) else os.getcwd()
        todo = deque(path.split("/"))
        while todo:
            comp = todo.popleft()
            if comp in ("", "."):
                continue
            if comp == "..":
                real = os.path.dirname(real)
                continue
            nxt = os.path.join(real, comp)
            try:
                st = os.lstat(nxt)
            except FileNotFoundError:
                raise UnsafeFileError(f"directory {nxt} does not exist") from None
            except OSError as e:
                raise UnsafeFileError(f"{nxt}: {e.strerror or e}") from None
            if stat.S_ISLNK(st.st_mode):
                target = self.follow(nxt, st)
                if os.path.isabs(target):
                    real = "/"
                todo.extendleft(reversed(target.split("/")))
                continue
            if not stat.S_ISDIR(st.st_mode):
                raise UnsafeFileError(f"{nxt}: {os.strerror(errno.ENOTDIR)}")
            real = nxt
        return real


def absolute(path: str) -> str:
    """``path`` made absolute against the working directory, and nothing else: unlike
    ``os.path.abspath`` it keeps ``..`` and a trailing ``/`` for the lookup to judge."""
    return path if os.path.isabs(path) or not path else os.path.join(os.getcwd(), path)


def _own_fd_dirs() -> tuple[str, ...]:
    pid = os.getpid()
    return (f"/proc/{pid}/fd", f"/proc/{pid}/task/{threading.get_native_id()}/fd")


def _names_directory(path: str) -> bool:
    return path.endswith("/") or os.path.basename(path) in (".", "..")


def resolve_target(path: str) -> Target:
    """Where a write of ``path`` would go (see the module docstring); UnsafeFileError saying
    why it cannot go anywhere. Nothing is created."""
    if not path:
        raise UnsafeFileError("the path is empty")
    if "\0" in path:
        raise UnsafeFileError("the path contains a NUL character")
    walk = _Walk()
    if _names_directory(path):
        # The shell: "Not a directory" when what precedes the slash is a file, "Is a
        # directory" otherwise (a new name with a slash, or an existing directory).
        head = path.rstrip("/")
        try:
            is_file = bool(head) and not stat.S_ISDIR(os.stat(head).st_mode)
        except OSError:
            is_file = False
        raise UnsafeFileError(os.strerror(errno.ENOTDIR if is_file else errno.EISDIR))
    head, name = os.path.split(path)
    directory = walk.directory(head or ".")
    via_link = False
    while True:
        if directory == "/proc" or directory.startswith("/proc/"):
            if directory in _own_fd_dirs() and name in ("1", "2"):
                return Target(path, None, True, stream=int(name), via_link=via_link)
            raise UnsafeFileError(
                "is under /proc (only this process's stdout and stderr can be written there)"
            )
        full = os.path.join(directory, name)
        try:
            st = os.lstat(full)
        except FileNotFoundError:
            if via_link:
                raise UnsafeFileError(
                    f"is a dangling symlink (its target {full} does not exist); dlpt does not create "
                    "files through one"
                ) from None
            return Target(path, full, False)
        except OSError as e:
            raise UnsafeFileError(e.strerror or str(e)) from None
        if not stat.S_ISLNK(st.st_mode):
            if via_link and stat.S_ISREG(st.st_mode) and st.st_uid != os.geteuid():
                raise UnsafeFileError(
                    f"is a symlink to {full}, a file of another user; dlpt does not write it"
                )
            return Target(path, full, True, via_link=via_link)
        link = walk.follow(full, st)
        if _names_directory(link):
            raise UnsafeFileError(f"is a symlink to {link}, a directory")
        link_head, name = os.path.split(link)
        directory = walk.directory(os.path.join(directory, link_head))  # an absolute link_head wins
        via_link = True
