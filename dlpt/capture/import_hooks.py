"""Run code right after a module is imported, without importing it ourselves.

dlpt must not pay for what the program does not use: importing ``torch._dynamo`` costs about two
seconds, and ``--step-on GPT2LMHeadModel.forward`` names a class whose module the program may
import much later (or never). So dlpt waits for the program to import them: a finder placed
first on ``sys.meta_path`` asks the other finders for the module's spec, exactly as the import
system would, and wraps that one module's ``exec_module`` so the callbacks run once it has
executed. The wrapper is an attribute of that module's own loader object and is removed again
at once: the module, its ``__loader__`` and its ``__spec__`` are what they would have been.
The finder leaves ``sys.meta_path`` when nothing is waiting any more.

Callbacks run on the importing thread, inside the import; they must be quick and must not
raise (what they raise is logged on the ``dlpt`` logger and dropped, never passed to the import).
"""

from __future__ import annotations

import contextlib
import importlib.abc
import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

__all__ = ["when_imported", "on_every_import"]

Callback = Callable[[ModuleType], None]

_log = logging.getLogger(__name__)
_lock = threading.RLock()
_by_name: dict[str, list[Callback]] = {}
_every: list[Callback] = []
_local = threading.local()  # names this thread is looking up through the other finders


def _new_lock_in_child() -> None:
    """After fork(): a thread that held the lock at fork() does not exist in the child."""
    global _lock
    _lock = threading.RLock()


os.register_at_fork(after_in_child=_new_lock_in_child)


def _loaded(name: str) -> ModuleType | None:
    """The module if it is imported and done executing (not one in the middle of its import)."""
    module = sys.modules.get(name)
    if module is None or getattr(getattr(module, "__spec__", None), "_initializing", False):
        return None
    return module


def when_imported(name: str, callback: Callback) -> Callable[[], None]:
    """Call ``callback(module)`` once module ``name`` is imported: now if it already is, else
    right after its import. Returns a function that cancels a callback not yet called."""
    module = _loaded(name)
    if module is not None:
        callback(module)
        return lambda: None
    with _lock:
        _by_name.setdefault(name, []).append(callback)
        _install()
    return lambda: _remove(_by_name.get(name, []), callback)


def on_every_import(callback: Callback) -> Callable[[], None]:
    """Call ``callback(module)`` after each module imported from now on (not for modules already
    imported). Returns a function that stops it."""
    with _lock:
        _every.append(callback)
        _install()
    return lambda: _remove(_every, callback)


def _remove(callbacks: list[Callback], callback: Callback) -> None:
    with _lock:
        if callback in callbacks:
            callbacks.remove(callback)
        _uninstall_if_idle()


def _install() -> None:
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


def _uninstall_if_idle() -> None:
    for name in [n for n, cbs in _by_name.items() if not cbs]:
        del _by_name[name]
    if not _by_name and not _every:
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _Finder)]


def _notify(module: ModuleType) -> None:
    with _lock:
        callbacks = [*_by_name.pop(module.__name__, []), *_every]
        _uninstall_if_idle()
    for cb in callbacks:
        try:
            cb(module)
        except Exception:  # noqa: BLE001 - never break the program's import; logged
            _log.debug("import hook for %s failed", module.__name__, exc_info=True)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: returns the spec the other finders give, its loader wrapped."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        with _lock:
            watched = bool(_every) or fullname in _by_name
        busy: set[str] = _local.__dict__.setdefault("busy", set())
        if not watched or fullname in busy:
            return None
        busy.add(fullname)
        try:
            spec = _spec_from_others(self, fullname, path, target)
        finally:
            busy.discard(fullname)
        if spec is not None:
            _wrap(spec)
        return spec


def _spec_from_others(
    me: _Finder, fullname: str, path: Sequence[str] | None, target: ModuleType | None
) -> ModuleSpec | None:
    for finder in list(sys.meta_path):
        if finder is me or isinstance(finder, _Finder):
            continue
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        spec: ModuleSpec | None = find(fullname, path, target)
        if spec is not None:
            return spec
    return None


def _wrap(spec: ModuleSpec) -> None:
    loader: Any = spec.loader
    # Built-in and frozen modules are loaded by classes shared by all of them: never patched.
    if loader is None or isinstance(loader, type) or not hasattr(loader, "exec_module"):
        return
    original = loader.exec_module

    def exec_module(module: ModuleType) -> None:
        try:
            original(module)
        finally:
            with contextlib.suppress(AttributeError):
                del loader.exec_module  # the loader's own method again
        _notify(module)

    try:
        loader.exec_module = exec_module
    except (AttributeError, TypeError):  # a loader with __slots__: no hook for this module
        return
