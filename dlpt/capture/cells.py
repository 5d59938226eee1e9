"""Notebook cells named as cells: ``In [3]:12`` instead of the file names IPython makes up.

IPython compiles each cell under a made-up file name: ``<ipython-input-3-1a2b3c4d5e6f>`` in a
terminal IPython, ``/tmp/ipykernel_812/2154961530.py`` under Jupyter's kernel. A report would
show those; the user knows the cell by its prompt, ``In [3]``. When a profile stops in a process
where an IPython shell runs, :func:`name_cells` renames the frames of cells (and their saved
source text, which IPython keeps in :mod:`linecache`) to ``In [N]``. Several files may be one
cell (the ``%%dlpt`` magic runs a cell's body under a file of its own, with the cell's line
numbers): their lines merge, the text of the files named in ``prefer`` winning.

IPython is never imported here: only a shell the program already runs is asked. What is used
of it, checked against IPython 8.12.3 and 9.18.1 (terminal) and ipykernel 7.4.0 (Jupyter):
``IPython.get_ipython()`` and the shell's compiler's ``format_code_name(file)``, which returns
``("Cell", "In[3]")`` for a cell's file (IPython >= 8.0; the names of its tracebacks). Anything
else there (another IPython, a shell without that compiler) leaves the names as they are.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Iterable
from typing import Any

from dlpt.model.session import Session

__all__ = ["cell_labels", "cell_number", "name_cells"]

_log = logging.getLogger(__name__)
_CELL = re.compile(r"In\s*\[(\d+)\]")


def cell_labels(files: Iterable[str]) -> dict[str, str]:
    """``In [N]`` for each of ``files`` that is a cell of the running IPython shell."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    if get is None:
        return {}
    try:
        shell = get()
        name = getattr(getattr(shell, "compile", None), "format_code_name", None)
        if name is None:
            return {}
        out: dict[str, str] = {}
        for file in files:
            label = name(file)
            m = _CELL.fullmatch(str(label[1])) if isinstance(label, tuple) and len(label) == 2 else None
            if m:
                out[file] = f"In [{m.group(1)}]"
        return out
    except Exception:  # noqa: BLE001 - a shell we do not know: names stay as IPython made them
        _log.debug("could not name notebook cells", exc_info=True)
        return {}


def cell_number(file: str) -> int | None:
    """N for ``file`` if it is cell ``In [N]`` of the running IPython shell, else None."""
    label = cell_labels([file]).get(file)
    return int(label[len("In [") : -1]) if label else None


def name_cells(session: Session, prefer: Iterable[str] = ()) -> None:
    """Rename (in place) the frames of IPython cells in ``session`` to ``In [N]``, and their saved
    source text with them; where several files are one cell, ``prefer``'s text wins."""
    nodes: list[dict[str, Any]] = session.nodes
    labels = cell_labels({n["file"] for n in nodes if n["kind"] == "frame" and n["file"]})
    if not labels:
        return
    for n in nodes:
        if n["kind"] == "frame" and n["file"] in labels:
            n["file"] = labels[n["file"]]
    _name_host_lines(session.meta.get("host"), labels)
    _name_timeline(session.meta.get("timeline"), labels)
    sources = session.meta.get("sources")
    if not isinstance(sources, dict):
        return
    first = set(prefer)
    for file in sorted(labels, key=lambda f: f in first):  # preferred files last: they win
        lines = sources.pop(file, None)
        if isinstance(lines, dict):
            sources.setdefault(labels[file], {}).update(lines)
    for label in set(labels.values()):
        if label in sources:
            sources[label] = dict(sorted(sources[label].items(), key=lambda kv: int(kv[0])))


def _name_host_lines(host: object, labels: dict[str, str]) -> None:
    """The host sampler's lines (``meta.host``: the step's thread's, and those blamed for each
    GPU's idle time) named as the tree names them (issue 33: the header said ``281005417.py:4``
    where the tree said ``In [1]:4``)."""
    short = {os.path.basename(f) + ":": label + ":" for f, label in labels.items() if os.path.basename(f)}
    stack = [host]
    while stack:
        x = stack.pop()
        if isinstance(x, list):
            stack.extend(x)
        elif isinstance(x, dict):
            if isinstance(x.get("file"), str) and x["file"] in labels:
                x["file"] = labels[x["file"]]
            inner = x.get("inner")
            if isinstance(inner, str):  # "281005417.py:7 f": the innermost frame's label
                for old, new in short.items():
                    if inner.startswith(old):
                        x["inner"] = new + inner[len(old) :]
                        break
            stack.extend(v for v in x.values() if isinstance(v, (dict, list)))


def _name_timeline(timeline: object, labels: dict[str, str]) -> None:
    """The timeline's file strings (its frames name files through its string table)."""
    if not isinstance(timeline, dict) or not isinstance(timeline.get("strings"), list):
        return
    strings = timeline["strings"]
    for i, text in enumerate(strings):
        if isinstance(text, str) and text in labels:
            strings[i] = labels[text]
