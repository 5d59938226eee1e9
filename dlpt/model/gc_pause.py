"""Pause Python's cyclic garbage collector while building many small objects.

Loading or rendering a large session creates millions of dicts, lists and tree nodes. Each
allocation burst triggers collections that traverse everything alive, torch's objects included:
measured about 2x render time with torch imported, and 25% of a million-node load. None of these
objects form cycles that need collecting early, so the collector waits until the block ends.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["gc_paused"]


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The collector is off inside the block (if it was on) and back on after it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
