"""Code a library generates and runs with exec() is the library's code.

Such frames have no file, only ``<string>``: Triton's kernel launcher is one (every Triton launch
goes through it), so without this each fused kernel of a compiled model would show a
``<string>:5 launcher`` row between the model line and the kernel. A ``<string>`` frame called
from library code is marked ``x.library = True`` and folds like library code; one called from
the user's own code (an exec in a notebook) or from dlpt itself (``python -m dlpt -c CODE``: the
launcher runs the code) stays the user's.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from dlpt.model.source_files import is_library_file

EXEC_FILE = "<string>"


@functools.cache
def _dlpt_dir() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _is_dlpt_file(path: str) -> bool:
    return os.path.abspath(path).startswith(_dlpt_dir()) if path and not path.startswith("<") else False


def mark_library_exec_frames(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mark (in place) ``<string>`` frames whose nearest calling frame is library code other
    than dlpt's own."""
    # Whether the nearest frame at or above each node is library code whose exec'd code is
    # library code too (parents come first).
    library: list[bool] = [False] * len(nodes)
    for n in nodes:
        inherited = library[n["parent"]] if n["parent"] >= 0 else False
        if n["kind"] != "frame":
            library[n["id"]] = inherited
        elif n["file"] == EXEC_FILE:
            if inherited:
                n["x"] = dict(n.get("x") or {}, library=True)
            library[n["id"]] = inherited
        else:
            library[n["id"]] = is_library_file(n["file"]) and not _is_dlpt_file(n["file"])
    return nodes
