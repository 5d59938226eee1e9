"""dlpt's own imports are done before the program runs, and never through the program's
``sys.path``.

Once the program runs, ``sys.path[0]`` is its directory and ``sys.modules`` holds its modules:
a project-local ``html.py`` next to the script would be what a later ``import html`` of dlpt's
gets (executed by dlpt, or breaking ``--html``). So everything dlpt's end of run imports is
imported first (:func:`preload`, before the program is installed), and both that and dlpt's
startup (``python -m dlpt``'s ``__main__``) import with the entry ``python -m`` put first (the
working directory) left out (:func:`without_path0`): dlpt's modules come from its package and
from site-packages / the standard library only. The program itself later imports what plain
``python`` would give it, its local ``html.py`` included: the modules other than dlpt's that the
preload brought in are taken out of ``sys.modules`` again (dlpt's modules keep their references
to them), so the program's first ``import html`` finds what it would find without dlpt.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator

__all__ = ["without_path0", "preload"]


@contextlib.contextmanager
def without_path0() -> Iterator[None]:
    """Inside: ``sys.path`` without the entry ``python -m`` prepended (the working directory;
    none under ``-P``/``-I``/``PYTHONSAFEPATH``). dlpt's own submodules are found through
    ``dlpt.__path__``, whatever ``sys.path`` says."""
    saved = list(sys.path)
    if sys.path and not sys.flags.safe_path:
        del sys.path[0]
    try:
        yield
    finally:
        sys.path[:] = saved


def preload(html: bool) -> None:
    """Import what dlpt's end of run imports lazily (``html``: the HTML report, which reads its
    assets, only when asked for) and fill the caches that look modules up on ``sys.path``."""
    before = set(sys.modules)
    with without_path0():
        if html:
            importlib.import_module("dlpt.renderers.html")
        from dlpt.model.source_files import is_library_file

        is_library_file(__file__)  # which directories are the stdlib's and libraries': cached now
    for name in set(sys.modules) - before:
        if name != "dlpt" and not name.startswith("dlpt."):
            del sys.modules[name]
