"""The end of capture for every front door: ``dlpt.profile`` (:mod:`dlpt.api`), the command line
and the notebook magic (their one ending, :class:`dlpt.frontend.ending.Ending`, starts here).

:func:`stop_viewed`: stop capture and complete the session: IPython cells named ``In [N]``, the
session viewed once (folded and analysed: :mod:`dlpt.views.run`), the suggestions derived from
that view and the pinned-copy measurement saved with it (:func:`finish_session`), the files
joined profiles asked for. ``dlpt.profile.stop()`` ends here; :func:`stop` is the same for a
caller that wants the session alone.

Nothing here raises to the user's program: a suggestion that cannot be derived, a measurement
that cannot be made is logged and left out. Thread contract: as the capture's, with the GIL
held, normally on the program's main thread (the command line may end the run from its signal
thread while the main thread is stuck in the program: :mod:`dlpt.cli.signals`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from dlpt.capture.cells import name_cells
from dlpt.capture.pinned_probe import pinned_htod
from dlpt.capture.profiler import Profile
from dlpt.model.session import Session
from dlpt.views.run import RunView, ViewOptions, build_view

__all__ = ["finish_session", "stop", "stop_viewed"]

_log = logging.getLogger(__name__)


# -- the session: stop and complete ---------------------------------------------------------------


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


def finish_session(source: Session | RunView, probe: bool = True) -> None:
    """What dlpt adds to a session once capture stopped: ``meta.host_link_probe`` (a pinned
    host-to-device copy measured on the GPU, when the run copied from pageable memory and
    ``probe`` allows a measurement) and ``meta.suggestions``, so that a saved session shows what
    was found when it was recorded. ``source``: the run's view of it (analysed once for every
    output: :mod:`dlpt.views.run`), or the session alone (viewed here). Never raises: a failure
    is logged and leaves the keys out (reports then derive the suggestions themselves)."""
    session = source.session if isinstance(source, RunView) else source
    try:
        view = source if isinstance(source, RunView) else build_view(session)
        enabled = probe and session.typed_meta.gpu_enabled is True
        target = _pageable_htod(session) if enabled else None
        if target is not None:
            measured = pinned_htod(target[1], target[0])
            if measured is not None:
                session.set_meta("host_link_probe", measured)
        session.set_meta("suggestions", view.suggestions_to_save())
    except Exception:  # noqa: BLE001 - suggestions must never cost the profile; logged
        _log.debug("could not derive suggestions at stop", exc_info=True)


def stop_viewed(
    prof: Profile,
    tidy: Callable[[Session], None] | None = None,
    prefer: Sequence[str] = (),
    options: ViewOptions | None = None,
) -> RunView | None:
    """Stop ``prof``'s capture and complete its session, viewed once (folded and analysed with
    ``options``: :mod:`dlpt.views.run`) for its suggestions and every output of the run;
    None for a profile that joined a running one (it only leaves it). ``tidy`` changes the
    session first, before anything reads it (the notebook marks the frames above the magic as
    library code); ``prefer``: the files whose text wins where several files are one IPython
    cell."""
    session = Profile.stop(prof)  # the capture's own stop (dlpt.profile.stop ends here)
    if session is None:
        return None
    if tidy is not None:
        tidy(session)
    name_cells(session, prefer=prefer)  # in IPython or Jupyter: cells as In [N]
    view = build_view(session, options or ViewOptions())
    finish_session(view, probe=prof.gpu_usable)
    prof.save_for_joined()
    return view


def stop(
    prof: Profile,
    tidy: Callable[[Session], None] | None = None,
    prefer: Sequence[str] = (),
    options: ViewOptions | None = None,
) -> Session | None:
    """:func:`stop_viewed`'s session."""
    view = stop_viewed(prof, tidy, prefer, options)
    return view.session if view is not None else None
