"""The source text a profile keeps (``meta.sources``), read once at stop in the profiled process.

A report shows the text of each line beside its number. Read later, at render time, the file may
have changed (the line number then shows today's code), be gone, or be something no report
should open (a session can name any path). So the text is saved with the session, sparsely:
each line that appears in the node table, plus ``CONTEXT`` lines around it. The user's files
come first and whole (every line of theirs in the table). Installed packages (site-packages:
torchvision's ``resnet.py``, Hugging Face's ``modeling_gpt2.py``, whose lines the tree shows as
model code) come next, then the framework (torch, the stdlib: lines ``--show-all`` shows), within
``LIBRARY_BYTES`` of text in all and ``LIBRARY_SECONDS`` of reading at stop (issue 33), the
files under the counted steps' work first: a run through thousands of library lines (imports
included) keeps a bounded session and a quick stop. dlpt's own files are never kept, nor code
without a file (``<string>``,
``<frozen ...>``) unless its text is known: code the profiled process registered in
:mod:`linecache` (notebook cells) or that dlpt was given to run (``python -m dlpt -c CODE``,
:func:`remember_source`).

Files are read like any file dlpt is pointed at (:mod:`dlpt.files.safe_files`): regular files only,
never blocking, at most ``MAX_FILE_BYTES``. Code that exists only in memory (notebook cells,
which IPython registers in :mod:`linecache` without a file) is taken from there.
"""

from __future__ import annotations

import io
import linecache
import logging
import time
import tokenize
from collections.abc import Iterable
from typing import Any

from dlpt.files.safe_files import read_regular_file
from dlpt.model.source_files import file_kind, is_dlpt_file

__all__ = ["CONTEXT", "MAX_FILE_BYTES", "LIBRARY_BYTES", "collect_sources", "file_lines", "remember_source"]

CONTEXT = 2  # lines kept before and after each profiled line
MAX_FILE_BYTES = 8 * 2**20  # larger "source files" are generated data, not code to show
#: Text kept of installed packages' and the framework's files together (user files: unbounded).
LIBRARY_BYTES = 2**20
#: Time spent reading libraries' files at stop, at most (a run through hundreds of torch and
#: stdlib files took 0.8 s on a loaded 2-core machine to read them all; the user's come first).
LIBRARY_SECONDS = 0.25

# Which files come first: the user's, then installed packages (model code), then the framework.
_ORDER = {"user": 0, "package": 1, "framework": 2}

_log = logging.getLogger(__name__)

# Code without a file whose text dlpt knows: name -> lines (python -m dlpt -c CODE's "<string>").
_remembered: dict[str, list[str]] = {}


def remember_source(name: str, text: str) -> None:
    """Keep ``text`` as the source of the code named ``name`` (a pseudo-file such as
    ``<string>``), for profiles that stop later in this process. Not put in :mod:`linecache`:
    the program's own tracebacks must look as under plain python."""
    _remembered[name] = io.StringIO(text, newline=None).readlines()


def _wanted(nodes: Iterable[dict[str, Any]]) -> dict[str, tuple[int, bool, set[int]]]:
    """Profiled lines by file, with the file's rank in :data:`_ORDER` and whether a line of it
    is above work of the counted steps (what the per-step tree shows)."""
    table = list(nodes)
    hot = _under_counted_work(table)
    out: dict[str, tuple[int, bool, set[int]]] = {}
    rank_of: dict[str, int | None] = {}
    for n in table:
        if n["kind"] != "frame" or n["line"] <= 0:
            continue
        file = n["file"]
        if file not in rank_of:
            rank_of[file] = _rank(file)
        rank = rank_of[file]
        if rank is None:
            continue
        got = out.get(file)
        lines = got[2] if got is not None else set()
        lines.add(n["line"])
        out[file] = (rank, (got is not None and got[1]) or hot.get(n["id"], False), lines)
    return out


def _under_counted_work(table: list[dict[str, Any]]) -> dict[int, bool]:
    """Node id -> whether its subtree holds work of the counted steps (``m``)."""
    hot: dict[int, bool] = {}
    parent_of = {n["id"]: n["parent"] for n in table}
    for n in reversed(table):  # children after their parents in the core's table
        if n.get("m") or hot.get(n["id"]):
            hot[n["id"]] = True
            p = parent_of.get(n["id"], -1)
            if p is not None and p >= 0:
                hot[p] = True
    return hot


def _rank(file: str) -> int | None:
    """The file's place in :data:`_ORDER`, or None: not kept (no file, dlpt's own)."""
    if not file:
        return None
    if file.startswith("<"):
        return 0 if _in_memory_lines(file) is not None else None
    if is_dlpt_file(file):
        return None
    return _ORDER[file_kind(file)]


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
    line ending, for the profiled lines and ``CONTEXT`` lines around each: every user file's,
    then installed packages' and the framework's while their text stays within
    ``LIBRARY_BYTES`` (a file that does not fit is left out whole, so a file's lines are all
    there or none)."""
    out: dict[str, dict[str, str]] = {}
    budget = LIBRARY_BYTES
    wanted = _wanted(nodes)
    deadline: float | None = None
    # The user's files; then libraries' with lines above the counted steps' work (packages'
    # before the framework's), then the others (import-time code); more profiled lines first.
    for file in sorted(
        wanted, key=lambda f: (wanted[f][0] > 0, not wanted[f][1], wanted[f][0], -len(wanted[f][2]), f)
    ):
        rank, _hot, numbers = wanted[file]
        if rank > 0:
            now = time.perf_counter()
            deadline = now + LIBRARY_SECONDS if deadline is None else deadline
            if budget <= 0 or now > deadline:
                break
        lines = _in_memory_lines(file)
        if lines is None:
            lines = file_lines(file)
        if not lines:
            continue
        keep: set[int] = set()
        for n in numbers:
            keep.update(range(max(1, n - CONTEXT), min(len(lines), n + CONTEXT) + 1))
        text = {str(k): lines[k - 1].rstrip("\r\n") for k in sorted(keep)}
        if rank > 0:
            size = sum(len(v) + len(k) for k, v in text.items())
            if size > budget:
                _log.debug(
                    "source text of %s not saved: over the %d bytes kept of libraries", file, LIBRARY_BYTES
                )
                continue
            budget -= size
        out[file] = text
    return out
