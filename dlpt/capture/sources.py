"""The source text a profile keeps (``meta.sources``), read once at stop in the profiled process.

A report shows the text of each line beside its number. Read later, at render time, the file may
have changed (the line number then shows today's code), be gone, or be something no report
should open (a session can name any path). So the text is saved with the session, sparsely:
each line of the user's files that appears in the node table, plus ``CONTEXT`` lines around it.
Library files (torch, site-packages, the stdlib, dlpt: :mod:`dlpt.model.source_files`) and code
without a file (``<string>``, ``<frozen ...>``) are left out, unless its text is known: code the
profiled process registered in :mod:`linecache` (notebook cells) or that dlpt was given to run
(``python -m dlpt -c CODE``, :func:`remember_source`).

Files are read like any file dlpt is pointed at (:mod:`dlpt.model.safe_files`): regular files only,
never blocking, at most ``MAX_FILE_BYTES``. Code that exists only in memory (notebook cells,
which IPython registers in :mod:`linecache` without a file) is taken from there.
"""

from __future__ import annotations

import io
import linecache
import logging
import tokenize
from collections.abc import Iterable
from typing import Any

from dlpt.model.safe_files import read_regular_file
from dlpt.model.source_files import is_library_file

__all__ = ["CONTEXT", "MAX_FILE_BYTES", "collect_sources", "file_lines", "remember_source"]

CONTEXT = 2  # lines kept before and after each profiled line
MAX_FILE_BYTES = 8 * 2**20  # larger "source files" are generated data, not code to show

_log = logging.getLogger(__name__)

# Code without a file whose text dlpt knows: name -> lines (python -m dlpt -c CODE's "<string>").
_remembered: dict[str, list[str]] = {}


def remember_source(name: str, text: str) -> None:
    """Keep ``text`` as the source of the code named ``name`` (a pseudo-file such as
    ``<string>``), for profiles that stop later in this process. Not put in :mod:`linecache`:
    the program's own tracebacks must look as under plain python."""
    _remembered[name] = io.StringIO(text, newline=None).readlines()


def _wanted(nodes: Iterable[dict[str, Any]]) -> dict[str, set[int]]:
    """Profiled lines of user files, by file."""
    out: dict[str, set[int]] = {}
    user: dict[str, bool] = {}
    for n in nodes:
        if n["kind"] != "frame" or n["line"] <= 0 or (n.get("x") or {}).get("library"):
            continue
        file = n["file"]
        ok = user.get(file)
        if ok is None:
            ok = user[file] = (
                bool(file)
                and not is_library_file(file)
                and (not file.startswith("<") or _in_memory_lines(file) is not None)
            )
        if ok:
            out.setdefault(file, set()).add(n["line"])
    return out


def _in_memory_lines(file: str) -> list[str] | None:
    """Lines dlpt was given (:func:`remember_source`), or that IPython (or anything else)
    registered in linecache without a file (mtime None)."""
    if file in _remembered:
        return _remembered[file]
    entry = linecache.cache.get(file)
    if isinstance(entry, tuple) and len(entry) == 4 and entry[1] is None and isinstance(entry[2], list):
        return [str(line) for line in entry[2]]
    return None


def file_lines(file: str) -> list[str] | None:
    """The lines of ``file`` read as source files are (regular files only, at most
    MAX_FILE_BYTES, its coding cookie honoured), or None; also for PC-sampled kernel files."""
    try:
        data = read_regular_file(file, MAX_FILE_BYTES)
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding, errors="replace")
    except (OSError, SyntaxError, LookupError, ValueError) as e:  # gone, a device, too large, bad cookie
        _log.debug("source text of %s not saved: %s", file, e)
        return None
    # Python numbers lines at \n, \r\n and \r only (str.splitlines would also split at \f, \x1c...).
    return io.StringIO(text, newline=None).readlines()


def collect_sources(nodes: Iterable[dict[str, Any]]) -> dict[str, dict[str, str]]:
    """``meta.sources``: file -> line number (decimal string) -> that line's text, without its
    line ending, for the profiled lines of user files and ``CONTEXT`` lines around each."""
    out: dict[str, dict[str, str]] = {}
    for file, numbers in _wanted(nodes).items():
        lines = _in_memory_lines(file)
        if lines is None:
            lines = file_lines(file)
        if not lines:
            continue
        keep: set[int] = set()
        for n in numbers:
            keep.update(range(max(1, n - CONTEXT), min(len(lines), n + CONTEXT) + 1))
        out[file] = {str(k): lines[k - 1].rstrip("\r\n") for k in sorted(keep)}
    return out
