"""``dlpt.profile``: the public API of a profile, as a context manager, a decorator or by hand.

Capture itself is :class:`dlpt.capture.profiler.Profile`; its stop is the one ending every front
door shares (:func:`dlpt.finish.stop_viewed`: cells named, the session viewed once, the
suggestions saved with it and the pinned-copy measurement they may need, the files joined
profiles asked for); this keeps the view (``profile.view``) and adds the report
(:meth:`profile.print`, from that view) and the decorator that prints it after each call. Thread
contract: as the capture's (start and stop with the GIL held, normally on the program's main
thread).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from dlpt import finish
from dlpt.capture.options import CaptureOptions
from dlpt.capture.profiler import Profile
from dlpt.model.session import Session
from dlpt.views.run import RunView, ViewOptions

__all__ = ["profile"]

P = ParamSpec("P")
R = TypeVar("R")


class profile(Profile):
    __doc__ = """Profile the code inside: ``with dlpt.profile() as prof: ...`` or ``@dlpt.profile()``.

    After the block, ``prof.session`` holds the result (with its suggestions); ``prof.print()``
    shows it and ``prof.save(path)`` writes it for ``python -m dlpt --load``.

    """ + (CaptureOptions.__doc__ or "").split("Its arguments:", 1)[-1].rstrip()
    __doc__ += "\n\n    After the block," + (Profile.__doc__ or "").split("After the block,", 1)[-1]

    #: What the run's view is made with (the command line sets its ``--show-all`` and ``--peak-tflops``).
    view_options: ViewOptions = ViewOptions()
    #: The session folded and analysed once, for its suggestions and every report (after stop).
    view: RunView | None = None

    def stop(self) -> Session | None:
        """Stop capture, flush all GPU activity and build the session, with its suggestions.

        A profile that joined a running one only leaves it and returns None."""
        self.view = finish.stop_viewed(self, options=self.view_options)
        return self.view.session if self.view is not None else None

    def __call__(self, fn: Callable[P, R]) -> Callable[P, R]:
        """``@dlpt.profile(...)``: profile each call of ``fn`` and print the report after it."""

        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            self.start()
            try:
                return fn(*args, **kwargs)
            finally:
                if self.joined:
                    self.stop()  # the running profile reports at its own end
                elif not self.forked:
                    self.stop()
                    self.print()

        return wrapper

    def print(self, view: str = "tree", **options: Any) -> None:
        """Print the report (see :func:`dlpt.renderers.terminal.report.print_report` for
        ``options``)."""
        from dlpt.renderers.terminal.report import print_report

        if self.waiting_for_host:
            print(
                "dlpt: this profile joined the running one; its report comes when that one stops",
                file=sys.stderr,
                flush=True,
            )
            return
        source = self.view if self.view is not None and self.view.session is self.session else self.session
        print_report(source, view=view, **options)
