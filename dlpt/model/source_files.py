"""Whose code a source file is: the user's, an installed package's, or the framework's (torch and
its compilers, the Python stdlib, generated code, dlpt itself).

Capture and reports both need the answer: capture marks exec'd code by its caller's file
(:mod:`dlpt.capture.exec_frames`) and saves the source text of user files
(:mod:`dlpt.capture.source_text`); reports fold library frames into their callers
(:mod:`dlpt.trees.processors`). Installed packages are told apart from the framework because they
hold model code (transformers, timm, torchvision, diffusers): reports keep such frames when they
run inside a module call. It lives below both sides so that neither imports the other.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import sysconfig
from pathlib import Path
from typing import Literal

__all__ = ["FileKind", "file_kind", "is_dlpt_file", "is_library_file", "is_module_call_file"]

FileKind = Literal["user", "package", "framework"]

# Framework packages: torch and the compilers and code generators that run under it, and the
# machinery of IPython and Jupyter that runs a notebook's cells. Their frames are never model code,
# wherever they run.
_FRAMEWORK_PACKAGES = (
    "torch",
    "torchgen",
    "functorch",
    "triton",
    "IPython",
    "ipykernel",
    "jupyter_client",
    "jupyter_core",
    "traitlets",
    "tornado",
    "zmq",
)
_PACKAGES_DIR = r"[\\/](?:site-packages|dist-packages)[\\/]"
# Patterns for sessions recorded elsewhere (--load on another machine), where the local
# sysconfig/torch paths do not apply. Generated code is the framework's: Inductor's cache
# (torchinductor_<user>/), AOTAutograd's codegen'd functions ("...py:codegen(...)"); so are the
# dlpt files whose frames a profile can hold (the CLI's launcher, the scope, step_on and
# decorator wrappers) when that dlpt ran from another checkout.
_FOREIGN_FRAMEWORK = re.compile(
    _PACKAGES_DIR + "(?:" + "|".join(_FRAMEWORK_PACKAGES) + r")[\\/]"
    r"|[\\/]torchinductor_[^\\/]*[\\/]|:codegen\("
    r"|[\\/]dlpt[\\/](?:__main__|api|cli|launch|profiler|scope|step_on)\.py$"
    r"|[\\/]dlpt[\\/](?:cli|capture|notebook)[\\/]\w+\.py$"
    # IPython's and Jupyter's launchers (bin/ipython, ipykernel_launcher.py): a notebook's frames
    # above its cells.
    r"|[\\/](?:bin|Scripts)[\\/](?:ipython3?|jupyter[\w-]*)(?:\.exe)?$|[\\/]ipykernel_launcher\.py$"
)
_FOREIGN_PACKAGE = re.compile(_PACKAGES_DIR)
_FOREIGN_STDLIB = re.compile(r"[\\/]lib[\\/]python\d+(\.\d+)?t?[\\/]")
# torch.nn.Module's call machinery (_wrapped_call_impl, _call_impl): what runs below it is a
# module's forward.
_MODULE_CALL = re.compile(r"[\\/]torch[\\/]nn[\\/]modules[\\/]module\.py$")


def _prefixes(paths: set[str]) -> tuple[str, ...]:
    out: set[str] = set()
    for r in paths:
        for p in (r, os.path.realpath(r)):
            out.add(os.path.normcase(p).rstrip("\\/") + os.sep)
    return tuple(sorted(out))


@functools.cache
def _roots() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(framework package dirs, package dirs, stdlib dirs) of this interpreter."""
    paths = sysconfig.get_paths()
    framework = {str(Path(__file__).resolve().parent.parent)}  # dlpt's own frames (CLI, runpy glue)
    for name in _FRAMEWORK_PACKAGES:
        try:
            # find_spec on a top-level name locates the package without importing it (torch's
            # import takes seconds; rendering a loaded session must not pay for it).
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.submodule_search_locations:
            framework.update(spec.submodule_search_locations)
    packages = {paths[k] for k in ("purelib", "platlib") if paths.get(k)}
    stdlib = {paths[k] for k in ("stdlib", "platstdlib") if paths.get(k)}
    return _prefixes(framework), _prefixes(packages), _prefixes(stdlib)


@functools.lru_cache(maxsize=8192)
def file_kind(path: str) -> FileKind:
    """ "framework" for torch (and triton, functorch, torchgen), the stdlib, ``<frozen ...>``,
    FX's and Inductor's generated code and dlpt itself; "package" for other installed packages
    (site-/dist-packages); "user" for everything else."""
    if path.startswith(("<frozen ", "<eval_with_key>")):  # stdlib; FX-generated forward()
        return "framework"
    p = os.path.normcase(path)
    framework, packages, stdlib = _roots()
    if _FOREIGN_FRAMEWORK.search(path) or p.startswith(framework):
        return "framework"
    if _FOREIGN_PACKAGE.search(path) or p.startswith(packages):
        return "package"
    if _FOREIGN_STDLIB.search(path) or p.startswith(stdlib):
        return "framework"
    # dlpt's own frames, also those of a dlpt installed elsewhere that recorded the session
    return "framework" if is_dlpt_file(path) else "user"


def is_library_file(path: str) -> bool:
    """True for files the user did not write: torch, site-/dist-packages, the Python stdlib,
    ``<frozen ...>`` modules, generated code and dlpt itself."""
    return file_kind(path) != "user"


_DLPT_PACKAGE = Path(__file__).resolve().parent.parent
_DLPT_DIRS = _prefixes({str(_DLPT_PACKAGE)})


@functools.lru_cache(maxsize=4096)
def is_dlpt_file(path: str) -> bool:
    """True for dlpt's own files (the profiler's frames: its launcher, hooks, start and stop),
    which are never the user's time (issue 33): this dlpt's, and those of a dlpt installed
    elsewhere that recorded the session (a checkout on another machine, another venv), known by
    their path inside a ``dlpt`` package that this dlpt has too."""
    if not path:
        return False
    if os.path.normcase(os.path.abspath(path)).startswith(_DLPT_DIRS):
        return True
    parts = Path(path).parts
    if "dlpt" not in parts[:-1]:
        return False
    at = len(parts) - 1 - parts[::-1].index("dlpt")  # the last "dlpt" folder on the path
    return _DLPT_PACKAGE.joinpath(*parts[at + 1 :]).is_file()


def is_module_call_file(path: str) -> bool:
    """True for the file of ``torch.nn.Module.__call__`` (frames below it run a module)."""
    return _MODULE_CALL.search(path) is not None
