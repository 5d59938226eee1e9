"""Code a library generates and runs with exec() is the library's code.

Such frames have no file, only ``<string>``: Triton's kernel launcher is one (every Triton launch
goes through it), so without this each fused kernel of a compiled model would show a
``<string>:5 launcher`` row between the model line and the kernel. A ``<string>`` frame called
from library code is marked ``x.library = True`` and folds like library code; one called from
the user's own code (``python -m dlpt -c ...``, an exec in a notebook) stays the user's.
"""

from __future__ import annotations

from typing import Any

from dlpt.model.source_files import is_library_file

EXEC_FILE = "<string>"


def mark_library_exec_frames(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mark (in place) ``<string>`` frames whose nearest calling frame is library code."""
    # Whether the nearest frame at or above each node is library code (parents come first).
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
            library[n["id"]] = is_library_file(n["file"])
    return nodes
