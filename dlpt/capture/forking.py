"""A forked child inherits no running profile: the native core stops capturing in the child, and
the child neither stops nor reports its parent's profile. It may start one of its own, which then
makes no measurement of its own on the GPU at stop (CUDA may be unusable in a child: see
:mod:`dlpt.api`).

After ``fork()``, in the child, the parent's profile (if reachable) drops its hooks, so the
child's optimizer steps and ``step_on`` calls cost nothing, and takes a new step lock (another
thread may have held it at ``fork()``): :meth:`dlpt.capture.profiler.Profile.forget_after_fork`.
"""

from __future__ import annotations

import os

from dlpt.capture import running as running_profile

__all__ = ["in_forked_child", "started_elsewhere"]

_in_forked_child = False  # this process was fork()ed from the one that imported dlpt


def in_forked_child() -> bool:
    """Whether this process was forked from the one that imported dlpt."""
    return _in_forked_child


def started_elsewhere(pid: int) -> bool:
    """Whether a profile started by process ``pid`` (0: never started) belongs to another
    process, the one this one was forked from."""
    return bool(pid) and pid != os.getpid()


def _forget_in_child() -> None:
    global _in_forked_child
    parent = running_profile.forget()
    _in_forked_child = True
    if parent is not None:
        parent.forget_after_fork()


os.register_at_fork(after_in_child=_forget_in_child)
