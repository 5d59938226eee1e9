"""The run's one ending on the command line (:class:`CliEnding`, a
:class:`dlpt.frontend.ending.Ending`): the profile stopped, saved and shown whatever way the
program ended, with signals held while it saves, and, on several ranks, each rank's own files and
voice, its summary to rank 0 and, on rank 0, the report and page across ranks
(:mod:`dlpt.cli.rank_finish`).

Runs on the main thread after the program, or on dlpt's signal thread while the main thread is
stuck in the program (SIGTERM, SIGHUP: :mod:`dlpt.cli.signals`); then no rank waits for the
others.
"""

from __future__ import annotations

import contextlib
import os

from dlpt.api import profile
from dlpt.cli import rank_store, voice
from dlpt.cli.rank_finish import Role, cross_rank_report, gather_ranks, publish, role_of
from dlpt.cli.signals import Interrupted, Signals
from dlpt.cli.stdout_guard import program_output_flushed, report_output
from dlpt.errors import DlptError
from dlpt.frontend import outputs
from dlpt.frontend.ending import Ending
from dlpt.frontend.open_report import open_report
from dlpt.frontend.options import Output, RunOptions
from dlpt.frontend.report_target import Where
from dlpt.model.render_limit import check_sessions
from dlpt.model.session import Session
from dlpt.views.ranks import ranks_view

__all__ = ["CliEnding", "finish_run", "open_html"]


def finish_run(prof: profile, opts: RunOptions, signals: Signals) -> bool:
    """Stop, save and show the profile through the run's one ending (:class:`CliEnding`);
    report dlpt's own failures without hiding the program's outcome. Returns whether everything
    worked.

    Signals are held while stopping and saving (at most the grace: dlpt.cli.signals); they cut
    the report short. This may run on dlpt's signal thread while the main thread is stuck in
    the program (SIGTERM, SIGHUP): then no rank waits for the others."""
    signals.remaining = opts.steps
    ending = CliEnding(opts, signals)
    ok = ending.run(prof)
    role = ending.role
    if role is not None and opts.outputs.open and role.chatty:
        open_html([ending.own(o) for o in opts.outputs.files])
    return ok


class _NothingPrinted(Exception):
    """Nothing was rendered into the report file: it is left as it was (no empty file)."""


class CliEnding(Ending):
    """The command line's part in the run's one ending (:class:`dlpt.frontend.ending.Ending`):
    signals held while stopping and saving, the status line put away, and one of several ranks'
    own files, voice, summary to rank 0 and, on rank 0, the report and page across ranks
    (:mod:`dlpt.cli.rank_finish`)."""

    def __init__(self, opts: RunOptions, signals: Signals) -> None:
        super().__init__(opts, say=voice.say, inform=voice.inform)
        self.signals = signals
        self.role: Role | None = None
        self.store: rank_store.RankStore | None = None
        self.printed = False  # a report was rendered (into the report file, if one is asked for)

    def held(self) -> contextlib.AbstractContextManager[object]:
        return self.signals.deferred()

    def stopped(self) -> None:
        voice.stop_status_line()

    def step_done(self) -> None:
        self.signals.step_done()

    def placed(self, session: Session) -> None:
        # One of several ranks: its own files, its own voice (dlpt.cli.rank_finish), and its
        # summary to rank 0 through torchrun's store when there is one.
        role = self.role = role_of(session, self.options.report_ranks)
        voice.PREFIX[0] = role.prefix
        if not role.chatty:
            self.inform = voice.say_failures  # a quiet rank says only what went wrong
        self.store = rank_store.connect() if role.distributed and role.report_ranks != "none" else None
        if self.store is not None and role.rank:
            publish(self.store, role, session, voice.say_failures)

    def path_of(self, path: str) -> str:
        return self.role.path(path) if self.role is not None else path

    def writes_later(self, o: Output) -> bool:
        # One page for the job, from rank 0 once it has the others (finish_report).
        return self.role is not None and outputs.rank_page(o, self.role.distributed)

    def _pages(self) -> list[Output]:
        """The pages across ranks this process writes (rank 0's)."""
        role = self.role
        assert role is not None
        return [o for o in self.options.outputs.files if self.writes_later(o)] if role.rank == 0 else []

    @property
    def _across(self) -> bool:
        """Whether this rank waits for the others and prints the report across ranks."""
        assert self.role is not None
        return self.role.gathers(bool(self.saved), self.store is not None)

    def finish_report(self, session: Session) -> bool:
        role, shown = self.role, self.options.report.shown
        assert role is not None
        if not ((shown and role.prints_own) or self._across or self._pages()):
            return True  # nothing to write
        target = self.options.report.target.for_path(role.path)
        self.printed = False
        try:
            with target.open() as where:
                ok = self._report(session, where)
                if target.path is not None and not self.printed:
                    raise _NothingPrinted  # the file stays as it was (safe_files: atomic)
            if target.path is not None:
                self.inform(f"wrote the text report to {target.path}")
        except _NothingPrinted:
            pass
        except (OSError, DlptError) as e:
            voice.say(f"could not write the text report to {target.path}: {e}")
            ok = False
        return ok

    def _report(self, session: Session, where: Where) -> bool:
        """Print what this rank prints (to ``where``: the report file or stdout, and the width):
        its own report, and on rank 0 of a job whose ranks send or save their sessions the
        report across ranks."""
        role, across = self.role, self._across
        assert role is not None
        if role.distributed and role.rank == 0 and not across and role.report_ranks == "0":
            voice.inform(
                "this is rank 0's report only: torchrun's store cannot be reached, and -o FILE saves "
                f"each of the {role.world_size} ranks' sessions for a report across ranks"
            )
        if (role.prints_own or across) and not program_output_flushed():
            # The program's own output cannot be written: python reports that at exit (status
            # 120, as without dlpt); dlpt's report would only be lost on top of it.
            voice.say("not printing the report: stdout cannot take the program's own output")
            return True
        ok = self._own_page(session, across)
        if not self.options.report.shown and not across:
            return ok
        if role.prints_own and self.options.report.shown and not (across and role.report_ranks == "0"):
            try:
                check_sessions("the text report", session)  # dlpt.model.render_limit
            except DlptError as e:
                voice.say(f"not printing the report: {e}")
                return False
            ok = self._own_report(session, where) and ok
        if across:
            ok = self._report_across(session, where) and ok
        return ok

    def _own_page(self, session: Session, across: bool) -> bool:
        """No other rank to be had: rank 0's own page where the job's was asked for."""
        pages = self._pages()
        if not pages or across:
            return True
        say = voice.say if not self.options.quiet else voice.say_failures
        out = self.options.outputs
        return outputs.write_all(
            self.viewed(session), pages, self.options.report.metric, self.options.view, say, out.force
        )

    def _own_report(self, session: Session, where: Where) -> bool:
        """This rank's own report; whether it could be rendered (cut short by a signal: said)."""
        try:
            # stdout may be a pipe whose reader left: one line, never a traceback (a file is ours).
            guard = report_output(voice.say) if where.file is None else contextlib.nullcontext()
            with self.signals.interruptible(), guard:
                self.render_report(session, where)
            self.printed = True
        except Interrupted as e:
            out = self.options.outputs
            saved = out.session or out.files
            voice.say(
                f"report interrupted ({e}); the profile was saved" if saved else f"report interrupted ({e})"
            )
        except Exception as e:  # noqa: BLE001
            voice.say(f"could not render the report: {type(e).__name__}: {e}")
            return False
        return True

    def _report_across(self, session: Session, where: Where) -> bool:
        """Rank 0: the others' sessions gathered, the report and the page across ranks."""
        role, signals, opts = self.role, self.signals, self.options
        assert role is not None
        try:
            # A signal, before or during the wait, ends it: what is there is reported.
            with signals.deferred():
                rs = gather_ranks(
                    opts.outputs.session_abspath if self.saved else None,
                    role,
                    self.saved,
                    session,
                    0.0 if signals.ending else opts.rank_timeout,
                    voice.inform,
                    self.store,
                    stop=lambda: signals.ending,
                )
            with signals.interruptible(), report_output(voice.say, "the report across ranks"):
                view = ranks_view(rs, opts.report.metric, opts.view.show_all)
                if opts.report.shown:
                    cross_rank_report(view, opts.report, where)
                    self.printed = True
            say = voice.say if not opts.quiet else voice.say_failures
            return outputs.write_rank_pages(view, self._pages(), say, opts.outputs.force)
        except Interrupted as e:
            voice.say(f"report across ranks interrupted ({e}); the profile was saved")
        except Exception as e:  # noqa: BLE001 - this rank's session is saved: say it, keep the status
            voice.say(f"could not render the report across ranks: {type(e).__name__}: {e}")
            return False
        return True


def open_html(written: list[Output]) -> None:
    """--open: the HTML report in a browser, if it was written (never a failure)."""
    for o in written:
        if o.kind == "html" and os.path.isfile(o.abspath):
            open_report(o.abspath, voice.say)
