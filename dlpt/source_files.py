"""Which source files are library code (torch, site-/dist-packages, the stdlib, generated code,
dlpt itself) rather than the user's.

Both sides need the answer: capture marks exec'd code by its caller's file
(:mod:`dlpt.capture.exec_frames`) and reports fold library frames into their callers
(:mod:`dlpt.processors`). It lives below both so that neither imports the other.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import sysconfig
from pathlib import Path

__all__ = ["is_library_file"]

# Patterns for sessions recorded elsewhere (--load on another machine), where the local
# sysconfig/torch paths do not apply.
# Also generated code: Inductor's cache (torchinductor_<user>/) and AOTAutograd's codegen'd
# functions (filenames like "...py:codegen(runtime_wrapper_orchestration)").
_FOREIGN_LIB = re.compile(
    r"[\\/](site-packages|dist-packages)[\\/]|[\\/]lib[\\/]python\d+(\.\d+)?t?[\\/]"
    r"|[\\/]torchinductor_[^\\/]*[\\/]|:codegen\("
)


@functools.cache
def _library_roots() -> tuple[str, ...]:
    roots: set[str] = set()
    paths = sysconfig.get_paths()
    for k in ("stdlib", "platstdlib", "purelib", "platlib"):
        if paths.get(k):
            roots.add(paths[k])
    try:
        # find_spec on a top-level name locates the package without importing it (torch's
        # import takes seconds; rendering a loaded session must not pay for it).
        spec = importlib.util.find_spec("torch")
        if spec is not None and spec.submodule_search_locations:
            roots.update(spec.submodule_search_locations)
    except (ImportError, ValueError):
        pass
    roots.add(str(Path(__file__).resolve().parent))  # dlpt's own frames (CLI, runpy glue)
    out: set[str] = set()
    for r in roots:
        for p in (r, os.path.realpath(r)):
            out.add(os.path.normcase(p).rstrip("\\/") + os.sep)
    return tuple(sorted(out))


@functools.lru_cache(maxsize=8192)
def is_library_file(path: str) -> bool:
    """True for files of torch, site-/dist-packages, the Python stdlib, ``<frozen ...>`` modules
    and dlpt itself: frames the user did not write."""
    if path.startswith(("<frozen ", "<eval_with_key>")):  # stdlib; FX-generated forward()
        return True
    if _FOREIGN_LIB.search(path):
        return True
    p = os.path.normcase(path)
    return any(p.startswith(r) for r in _library_roots())
