"""``dlpt.scope("name")``: a user-named node in the profile, as a context manager or decorator.

The scope's node is placed in the calling-context path just above the frame that entered it, so
the lines inside the block keep their own nodes beneath it. Outside a running profile it costs a
function call and does nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


class scope:
    """Group everything run inside under ``name``.

    >>> with dlpt.scope("data"):
    ...     batch = next(loader)
    >>> @dlpt.scope("loss")
    ... def compute_loss(out, y): ...
    """

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError("dlpt.scope needs a non-empty name (str)")
        self.name = name

    def __enter__(self) -> scope:
        from dlpt.capture.native import core

        # skip_frames=1: the innermost Python frame is this __enter__; the user's frame is next.
        core().scope_push(self.name, 1)
        return self

    def __exit__(self, *exc: object) -> None:
        from dlpt.capture.native import core

        core().scope_pop()

    def __call__(self, fn: Callable[P, R]) -> Callable[P, R]:
        name = self.name

        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            from dlpt.capture.native import core

            # skip_frames=0: this wrapper's frame enters the scope; fn's frames go beneath it.
            core().scope_push(name, 0)
            try:
                return fn(*args, **kwargs)
            finally:
                core().scope_pop()

        return wrapper
