"""Which op mode a profile asks the native core for (csrc/options.h, ``OpMode``).

Exactness is owed to GPU work, not to every op (docs/overhead.md, issue 50). In the *lean* mode an
outermost op's start walks no Python stack: the op's line is found at its first launch (every
kernel, copy, memset and sync keeps its exact line, context and aten op), or at its end when it
made an autograd node (its backward is grafted under that line); an op that does neither (a view
in inference, a shape check, a scalar op) gets no node, and its CPU time reaches its line only
through the host sampler. The *exact* mode walks at every op start: every op's CPU time and calls
on its line. ``auto`` (the default) is lean when GPU capture is on, exact on CPU runs, where CPU
op time is the main metric; the core decides once CUPTI attached or not.

``dlpt.profile(exact_ops=...)`` / ``--exact-ops`` choose; when they do not, ``DLPT_OPS`` (``exact``,
``lean`` or ``auto``) sets the default, so that a whole test suite can run in either mode.
"""

from __future__ import annotations

import os

from dlpt.errors import UsageError

__all__ = ["ENV", "MODES", "requested_op_mode"]

ENV = "DLPT_OPS"
MODES = ("auto", "exact", "lean")


def requested_op_mode(exact_ops: bool | None) -> str:
    """The mode asked for: "exact" or "lean" when ``exact_ops`` is given, else ``$DLPT_OPS`` or "auto"."""
    if exact_ops is not None:
        return "exact" if exact_ops else "lean"
    env = os.environ.get(ENV, "").strip().lower() or "auto"
    if env not in MODES:
        raise UsageError(f"{ENV} must be one of {', '.join(MODES)}, not {env!r}")
    return env
