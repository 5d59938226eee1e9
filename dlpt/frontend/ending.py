"""The one ending of a run, for every front end once capture stops: the command line
(:class:`dlpt.cli.ending.CliEnding`) and the notebook magic (``CellEnding``,
:mod:`dlpt.notebook.magic`).

:class:`Ending` holds what the run's options ask for (:class:`~dlpt.frontend.options.RunOptions`:
the session file, the HTML report and exports, the text report) and :meth:`Ending.run`, the one
sequence that does it: :func:`dlpt.finish.stop_viewed` (the session viewed once), save, every
output file (:func:`dlpt.frontend.outputs.write_all`), the text report
(:meth:`Ending.render_report`, the one place a run's report is rendered), all from the one view.
The command line plugs its signals and ranks into it, the notebook the frames above the magic
(``tidy``); neither assembles the ending by hand.

Nothing here raises to the user's program: a file that cannot be written, a report that cannot
be rendered is said (``say``) and the others still come; :meth:`Ending.run` returns whether all
worked. Thread contract: as the capture's (:mod:`dlpt.finish`).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dlpt import finish
from dlpt.capture.profiler import Profile
from dlpt.errors import DlptError
from dlpt.frontend.options import Output, RunOptions
from dlpt.frontend.outputs import write_all
from dlpt.frontend.report_target import ReportTarget, Where
from dlpt.model.session import Session
from dlpt.views.run import RunView

__all__ = ["Ending"]


def _to_stderr(msg: str) -> None:
    print(f"dlpt: {msg}", file=sys.stderr, flush=True)


@dataclass
class Ending:
    """What a front end asks for once capture stops (``options``), and :meth:`run`, which does it.

    ``say`` tells what went wrong, ``inform`` what was done (quiet: nothing). ``tidy`` changes
    the session before anything reads it; ``prefer``: the files whose text wins where several
    files are one IPython cell (:func:`dlpt.finish.stop_viewed`'s).

    A front end with more to do (the command line's signals and ranks) overrides the hooks
    below; the sequence stays :meth:`run`'s."""

    options: RunOptions
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
        ok, out = True, self.options.outputs
        with self.held():
            try:
                view = finish.stop_viewed(prof, self.tidy, self.prefer, self.options.view)
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
            if out.session is not None:
                ok = self.save(session) and ok
                self.step_done()
            for o in out.files:
                if not self.writes_later(o):
                    metric = self.options.report.metric
                    ok = (
                        write_all(view, [self.own(o)], metric, self.options.view, self.file_say, out.force)
                        and ok
                    )
                self.step_done()
        return self.finish_report(session) and ok

    # -- the steps a front end may refine ------------------------------------------------------

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
        """The session exists: a front end learns where it stands (the command line: which rank)."""

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
        """Save the session to the ``-o`` file; whether it worked (a failure is said)."""
        out = self.options.outputs
        assert out.session is not None
        shown = self.path_of(out.session)
        where = self.path_of(out.session_abspath or out.session)
        try:
            session.save(where, force=out.force, protected=out.protected_paths or None)
        except (OSError, DlptError) as e:
            self.say(f"could not save the profile to {shown}: {e}")
            return False
        self.saved = where
        self.inform(f"saved profile to {shown}")
        return True

    def finish_report(self, session: Session) -> bool:
        """The text report to its target, if one is asked for; whether it worked."""
        if not self.options.report.shown:
            return True
        target: ReportTarget = self.options.report.target
        try:
            with target.open() as where:
                self.render_report(session, where)
        except (OSError, DlptError) as e:
            self.say(f"could not write the text report to {target.path}: {e}")
            return False
        if target.path is not None:
            self.inform(f"wrote the text report to {target.path}")
        return True

    def render_report(self, session: Session, where: Where) -> None:
        """Render and print the text report of ``session`` to ``where`` (the destination's file,
        width and colour): the one place a run's report is rendered."""
        from dlpt.renderers.terminal.report import print_report

        r, v = self.options.report, self.options.view
        print_report(
            self.viewed(session),
            view=r.view,
            metric=r.metric,
            threshold=r.threshold,
            depth=r.depth,
            show_all=v.show_all,
            ascii=r.ascii,
            peak_tflops=v.peak_tflops,
            verbose=r.verbose,
            file=where.file,
            width=where.width,
            color=where.color,
        )
