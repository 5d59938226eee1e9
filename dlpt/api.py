"""``dlpt.profile``: the public API of a profile, as a context manager, a decorator or by hand.

Capture itself is :class:`dlpt.capture.profiler.Profile`; this adds what comes after it: the
suggestions saved with the session and the pinned-copy measurement they may need
(:func:`finish_session`), the files joined profiles asked for, the report (:meth:`profile.print`)
and the decorator that prints it after each call. Thread contract: as the capture's (start and
stop with the GIL held, normally on the program's main thread).
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from dlpt.analysis.inputs import Analysis, analyze
from dlpt.analysis.suggest import derive, to_meta
from dlpt.analysis.view import SessionView, ViewOptions, build_view
from dlpt.capture.cells import name_cells
from dlpt.capture.pinned_probe import pinned_htod
from dlpt.capture.profiler import Profile
from dlpt.model.session import Session

__all__ = ["profile", "finish_session"]

P = ParamSpec("P")
R = TypeVar("R")

_log = logging.getLogger(__name__)


def _pageable_htod(session: Session) -> tuple[int, int] | None:
    """(device, average bytes per copy) of the run's largest pageable HtoD copies, if any."""
    best: tuple[int, int, int] | None = None  # (total bytes, device, average)
    for n in session.nodes:
        x = n.get("x") or {}
        if n["kind"] == "memcpy" and x.get("direction") == "HtoD" and x.get("host_mem") == "pageable":
            copies, nbytes = n["m"].get("copies", 0), n["m"].get("copy_bytes", 0)
            dev = x.get("device", 0)
            if copies and isinstance(dev, int) and (best is None or nbytes > best[0]):
                best = (nbytes, dev, nbytes // copies)
    return (best[1], best[2]) if best is not None else None


def finish_session(session: Session, probe: bool = True, analysis: Analysis | None = None) -> None:
    """What dlpt adds to a session once capture stopped: ``meta.host_link_probe`` (a pinned
    host-to-device copy measured on the GPU, when the run copied from pageable memory and
    ``probe`` allows a measurement) and ``meta.suggestions``, so that a saved session shows what
    was found when it was recorded. ``analysis`` is the run's (its view's, analysed once for
    every output: :mod:`dlpt.analysis.view`); None: the session is analysed here. Never raises:
    a failure is logged and leaves the keys out (reports then derive the suggestions
    themselves)."""
    try:
        gpu = session.meta.get("gpu")
        enabled = probe and isinstance(gpu, dict) and gpu.get("enabled") is True
        target = _pageable_htod(session) if enabled else None
        if target is not None:
            measured = pinned_htod(target[1], target[0])
            if measured is not None:
                session.meta["host_link_probe"] = measured
        session.meta["suggestions"] = to_meta(derive(analysis if analysis is not None else analyze(session)))
    except Exception:  # noqa: BLE001 - suggestions must never cost the profile; logged
        _log.debug("could not derive suggestions at stop", exc_info=True)


class profile(Profile):
    __doc__ = """Profile the code inside: ``with dlpt.profile() as prof: ...`` or ``@dlpt.profile()``.

    After the block, ``prof.session`` holds the result (with its suggestions); ``prof.print()``
    shows it and ``prof.save(path)`` writes it for ``python -m dlpt --load``.

    """ + (Profile.__doc__ or "").split("Its arguments:", 1)[-1]

    #: What the run's view is made with (the command line sets its ``--show-all`` and ``--peak-tflops``).
    view_options: ViewOptions = ViewOptions()
    #: The session folded and analysed once, for its suggestions and every report (after stop).
    view: SessionView | None = None

    def stop(self) -> Session | None:
        """Stop capture, flush all GPU activity and build the session, with its suggestions.

        A profile that joined a running one only leaves it and returns None."""
        session = super().stop()
        if session is not None:
            name_cells(session)  # in IPython or Jupyter: cells as In [N]
            self.view = build_view(session, self.view_options)
            finish_session(session, probe=self.gpu_usable, analysis=self.view.analysis)
            self._save_for_joined()
        return session

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
