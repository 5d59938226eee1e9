"""The one ending of a profiled run, for every front door: ``dlpt.profile`` (:mod:`dlpt.api`), the
command line (:mod:`dlpt.cli.main`) and the notebook magic (:mod:`dlpt.notebook.magic`).

- :func:`stop_viewed`: stop capture and complete the session: IPython cells named ``In [N]``,
  the session viewed once (folded and analysed: :mod:`dlpt.views.run`), the suggestions
  derived from that analysis and the pinned-copy measurement saved with it
  (:func:`finish_session`), the files joined profiles asked for. ``dlpt.profile.stop()`` ends
  here; :func:`stop` is the same for a caller that wants the session alone.
- :class:`Ending`: what a front door asks for once capture stops (the session file, the HTML
  report and exports, the text report) and :meth:`Ending.run`, the one sequence that does it:
  :func:`stop_viewed`, save, every output file (:func:`write_all`), the text report
  (:meth:`Ending.render_report`, the one place the report is rendered), all from the one view.
  The command line plugs its signals and ranks into it (:class:`dlpt.cli.ending.CliEnding`), the
  notebook the frames above the magic (``tidy``); neither assembles the ending by hand.

Nothing here raises to the user's program: a file that cannot be written, a report that cannot
be rendered is said (``say``) and the others still come; :meth:`Ending.run` returns whether all
worked. Thread contract: as the capture's, with the GIL held, normally on the program's main
thread (the command line may end the run from its signal thread while the main thread is stuck
in the program: :mod:`dlpt.cli.signals`).
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from dlpt.capture.cells import name_cells
from dlpt.capture.pinned_probe import pinned_htod
from dlpt.capture.profiler import Profile
from dlpt.errors import DlptError
from dlpt.model.session import Session
from dlpt.renderers.exports import write_export
from dlpt.views.run import RunView, ViewOptions, build_view

__all__ = [
    "Ending",
    "Output",
    "ReportDestination",
    "finish_session",
    "stop",
    "stop_viewed",
    "write_all",
    "write_one",
]

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
                session.meta["host_link_probe"] = measured
        session.meta["suggestions"] = view.suggestions_to_save()
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


# -- the files ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Output:
    """One requested file besides the session: ``kind`` is "html" or an export format."""

    kind: str
    path: str
    abspath: str  # resolved at parse time: the program may chdir before it is written

    @property
    def flag(self) -> str:
        return "--html" if self.kind == "html" else f"--export {self.kind}"

    @property
    def what(self) -> str:
        return "HTML report" if self.kind == "html" else f"{self.kind} export"


def write_all(
    session: Session | RunView,
    outputs: Sequence[Output],
    metric: str | None,
    show_all: bool,
    say: Callable[[str], None],
    peak_tflops: float | None = None,
    force: bool = False,
) -> bool:
    """Write every output of a session, or of the run's view of it (folded and analysed once for
    all of them: :mod:`dlpt.views.run`); ``say`` reports each file written or failed. True if
    all worked.
    ``peak_tflops`` is the report option the HTML report's MFU uses, as the terminal's;
    ``force``: replace files dlpt did not write (``--force``)."""
    ok = True
    for o in outputs:
        if o.kind == "html":
            from dlpt.renderers.html import write_html  # only when asked for: it reads its assets

            def write(o: Output = o) -> None:
                write_html(
                    session, o.abspath, metric=metric, show_all=show_all, peak_tflops=peak_tflops, force=force
                )
        else:

            def write(o: Output = o) -> None:
                write_export(session, o.kind, o.abspath, metric=metric, show_all=show_all, force=force)

        ok = write_one(o.what, o.path, write, say) and ok
    return ok


def write_one(what: str, path: str, write: Callable[[], None], say: Callable[[str], None]) -> bool:
    """Runs ``write`` and says what became of the file; a failure, even a bug, is said and
    returns False (one output must not lose the others)."""
    try:
        write()
    except (OSError, DlptError) as e:
        say(f"could not write the {what} to {path}: {e}")
        return False
    except Exception as e:  # noqa: BLE001 - a bug in one output must not lose the others
        say(f"could not write the {what} to {path}: {type(e).__name__}: {e}")
        return False
    say(f"wrote {what} to {path}")
    return True


# -- the ending -----------------------------------------------------------------------------------


class ReportDestination(Protocol):
    """Where the text report goes (:class:`dlpt.cli.report_target.ReportTarget`): ``path`` (None:
    stdout) and ``open()``, the keyword arguments of ``print_report`` for it."""

    @property
    def path(self) -> str | None: ...

    def open(self) -> contextlib.AbstractContextManager[dict[str, Any]]: ...


def _to_stderr(msg: str) -> None:
    print(f"dlpt: {msg}", file=sys.stderr, flush=True)


@dataclass
class Ending:
    """What a front door asks for once capture stops, and :meth:`run`, which does it.

    ``session_file``/``session_abspath``: ``-o`` as given and where it is written (resolved
    before the program could chdir); ``files``: the HTML report and exports; ``report``: where
    the text report goes (None: no report) and ``render`` its options (``print_report``'s
    keywords: view, metric, threshold, ...); ``force``/``protected``: as for every file dlpt
    writes (:mod:`dlpt.files.safe_files`). ``say`` tells what went wrong, ``inform`` what was done
    (quiet: nothing). ``tidy`` and ``prefer``: as :func:`stop`'s.

    A front door with more to do (the command line's signals and ranks) overrides the hooks
    below; the sequence stays :meth:`run`'s."""

    session_file: str | None = None
    session_abspath: str | None = None
    files: Sequence[Output] = ()
    report: ReportDestination | None = None
    render: Mapping[str, Any] = field(default_factory=dict)
    force: bool = False
    protected: Mapping[str, str] | None = None
    say: Callable[[str], None] = _to_stderr
    inform: Callable[[str], None] = _to_stderr
    tidy: Callable[[Session], None] | None = None
    prefer: Sequence[str] = ()
    session: Session | None = None  # once stopped: the finished session
    view: RunView | None = None  # once stopped: the session folded and analysed once
    saved: str = ""  # where the session was saved, once it was

    def run(self, prof: Profile) -> bool:
        """Stop ``prof`` and finish its run: save the session, write every file, print the text
        report. Whether everything worked; what failed was said."""
        ok = True
        with self.held():
            try:
                view = stop_viewed(prof, self.tidy, self.prefer, self.view_options())
            except Exception as e:  # noqa: BLE001 - said; the program's own outcome still follows
                self.say(f"failed to stop the profiler: {e}")
                return False
            finally:
                self.stopped()
            self.step_done()
            if view is None:  # joined a running profile: that one's ending writes and reports
                return True
            self.view, self.session = view, view.session
            session = view.session
            self.placed(session)
            if self.session_file is not None:
                ok = self.save(session) and ok
                self.step_done()
            r = self.render
            for o in self.files:
                if not self.writes_later(o):
                    mine = [self.own(o)]
                    metric, show_all, peak = r.get("metric"), bool(r.get("show_all")), r.get("peak_tflops")
                    ok = write_all(view, mine, metric, show_all, self.file_say, peak, self.force) and ok
                self.step_done()
        return self.finish_report(session) and ok

    # -- the steps a front door may refine -----------------------------------------------------

    def view_options(self) -> ViewOptions:
        """What the run's view is made with: the report's ``show_all`` and ``peak_tflops``."""
        r = self.render
        return ViewOptions(show_all=bool(r.get("show_all")), peak_tflops=r.get("peak_tflops"))

    def viewed(self, session: Session) -> Session | RunView:
        """``session``'s view when it is this run's (every output formats the one view)."""
        return self.view if self.view is not None and self.view.session is session else session

    def held(self) -> contextlib.AbstractContextManager[object]:
        """Around stopping, saving and the files (the command line holds signals there)."""
        return contextlib.nullcontext()

    def stopped(self) -> None:
        """After the stop, worked or not (a status line is put away)."""

    def step_done(self) -> None:
        """One step of the ending is done: the stop, the session saved, one file written."""

    def placed(self, session: Session) -> None:
        """The session exists: a front door learns where it stands (the command line: which rank)."""

    def path_of(self, path: str) -> str:
        """The file this process writes for ``path`` (one of several ranks: its own)."""
        return path

    def own(self, o: Output) -> Output:
        return Output(o.kind, self.path_of(o.path), self.path_of(o.abspath))

    def writes_later(self, o: Output) -> bool:
        """Whether ``o`` is written by :meth:`finish_report` instead (a page across ranks)."""
        return False

    def file_say(self, msg: str) -> None:
        """What became of an output file: failures always, the rest unless quiet."""
        (self.say if msg.startswith("could not") else self.inform)(msg)

    def save(self, session: Session) -> bool:
        """Save the session to ``session_file``; whether it worked (a failure is said)."""
        assert self.session_file is not None
        shown = self.path_of(self.session_file)
        where = self.path_of(self.session_abspath or self.session_file)
        try:
            session.save(where, force=self.force, protected=self.protected)
        except (OSError, DlptError) as e:
            self.say(f"could not save the profile to {shown}: {e}")
            return False
        self.saved = where
        self.inform(f"saved profile to {shown}")
        return True

    def finish_report(self, session: Session) -> bool:
        """The text report to ``report``, if one is asked for; whether it worked."""
        if self.report is None:
            return True
        try:
            with self.report.open() as where:
                self.render_report(session, where)
        except (OSError, DlptError) as e:
            self.say(f"could not write the text report to {self.report.path}: {e}")
            return False
        if self.report.path is not None:
            self.inform(f"wrote the text report to {self.report.path}")
        return True

    def render_report(self, session: Session, where: Mapping[str, Any]) -> None:
        """Render and print the text report of ``session`` (``where``: the destination's file,
        width and colour): the one place a run's report is rendered."""
        from dlpt.renderers.terminal.report import print_report

        print_report(self.viewed(session), **self.render, **where)
