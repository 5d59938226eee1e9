"""The run's one ending on the command line (:class:`CliEnding`, a :class:`dlpt.finish.Ending`):
the profile stopped, saved and shown whatever way the program ended, with signals held while it
saves, and, on several ranks, each rank's own files and voice, its summary to rank 0 and, on
rank 0, the report and page across ranks (:mod:`dlpt.cli.rank_finish`).

Runs on the main thread after the program, or on dlpt's signal thread while the main thread is
stuck in the program (SIGTERM, SIGHUP: :mod:`dlpt.cli.signals`); then no rank waits for the
others.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from typing import Any

from dlpt.api import profile
from dlpt.cli import outputs, rank_store, voice
from dlpt.cli.open_report import open_report
from dlpt.cli.rank_finish import (
    Role,
    cross_rank_report,
    gather_ranks,
    publish,
    role_of,
)
from dlpt.cli.report_target import render_kwargs
from dlpt.cli.signals import Interrupted, Signals
from dlpt.cli.stdout_guard import program_output_flushed, report_output
from dlpt.errors import DlptError
from dlpt.finish import Ending
from dlpt.model.render_limit import check_sessions
from dlpt.model.session import Session
from dlpt.views.ranks import ranks_view

__all__ = ["CliEnding", "finish_run", "open_html", "steps_of"]


def finish_run(prof: profile, opts: argparse.Namespace, signals: Signals) -> bool:
    """Stop, save and show the profile through the run's one ending (:class:`CliEnding`);
    report dlpt's own failures without hiding the program's outcome. Returns whether everything
    worked.

    Signals are held while stopping and saving (at most the grace: dlpt.cli.signals); they cut
    the report short. This may run on dlpt's signal thread while the main thread is stuck in
    the program (SIGTERM, SIGHUP): then no rank waits for the others."""
    signals.remaining = steps_of(opts)
    ending = CliEnding(opts, signals)
    ok = ending.run(prof)
    role = ending.role
    if role is not None and opts.open and role.chatty:
        open_html([ending.own(o) for o in opts.outputs])
    return ok


def steps_of(opts: argparse.Namespace) -> list[str]:
    """What finishing the run does, in order: named when a signal's grace runs out first."""
    return [
        "stopping the profile",
        *([f"the session ({opts.output})"] if opts.output is not None else []),
        *(f"the {o.what} ({o.path})" for o in opts.outputs),
        *([] if opts.no_report else ["the report"]),
    ]


class _NothingPrinted(Exception):
    """Nothing was rendered into the report file: it is left as it was (no empty file)."""


class CliEnding(Ending):
    """The command line's part in the run's one ending (:class:`dlpt.finish.Ending`): signals
    held while stopping and saving, the status line put away, and one of several ranks' own
    files, voice, summary to rank 0 and, on rank 0, the report and page across ranks
    (:mod:`dlpt.cli.rank_finish`)."""

    def __init__(self, opts: argparse.Namespace, signals: Signals) -> None:
        super().__init__(
            session_file=opts.output,
            session_abspath=getattr(opts, "output_abs", None),
            files=opts.outputs,
            report=opts.report,
            render=render_kwargs(opts),
            force=opts.force,
            protected=opts.protected,
            say=voice.say,
            inform=voice.inform,
        )
        self.opts, self.signals = opts, signals
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
        role = self.role = role_of(session, self.opts.report_ranks)
        voice.PREFIX[0] = role.prefix
        if not role.chatty:
            self.inform = voice.say_failures  # a quiet rank says only what went wrong
        self.store = rank_store.connect() if role.distributed and role.report_ranks != "none" else None
        if self.store is not None and role.rank:
            publish(self.store, role, session, voice.say_failures)

    def path_of(self, path: str) -> str:
        return self.role.path(path) if self.role is not None else path

    def writes_later(self, o: outputs.Output) -> bool:
        # One page for the job, from rank 0 once it has the others (finish_report).
        return self.role is not None and outputs.rank_page(o, self.role.distributed)

    def _pages(self) -> list[outputs.Output]:
        """The pages across ranks this process writes (rank 0's)."""
        role = self.role
        assert role is not None
        return [o for o in self.opts.outputs if self.writes_later(o)] if role.rank == 0 else []

    def finish_report(self, session: Session) -> bool:
        role, opts = self.role, self.opts
        assert role is not None
        across = role.gathers(bool(self.saved), self.store is not None)
        if not ((not opts.no_report and role.prints_own) or across or self._pages()):
            return True  # nothing to write
        target = opts.report.for_path(role.path)
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

    def _report(self, session: Session, where: dict[str, Any]) -> bool:
        """Print what this rank prints (to ``where``: the report file or stdout, and the width):
        its own report, and on rank 0 of a job whose ranks send or save their sessions the
        report across ranks."""
        role, opts, signals, store = self.role, self.opts, self.signals, self.store
        assert role is not None
        ok = True
        across = role.gathers(bool(self.saved), store is not None)
        if role.distributed and role.rank == 0 and not across and role.report_ranks == "0":
            voice.inform(
                "this is rank 0's report only: torchrun's store cannot be reached, and -o FILE saves "
                f"each of the {role.world_size} ranks' sessions for a report across ranks"
            )
        if (role.prints_own or across) and not program_output_flushed():
            # The program's own output cannot be written: python reports that at exit (status
            # 120, as without dlpt); dlpt's report would only be lost on top of it.
            voice.say("not printing the report: stdout cannot take the program's own output")
            return ok
        pages = self._pages()
        if pages and not across:  # no other rank to be had: rank 0's own page where the job's was asked
            say = voice.say if not opts.quiet else voice.say_failures
            ok = (
                outputs.write_all(
                    self.viewed(session), pages, opts.metric, opts.show_all, say, opts.peak_tflops, opts.force
                )
                and ok
            )
        if opts.no_report and not across:
            return ok
        if role.prints_own and not opts.no_report and not (across and role.report_ranks == "0"):
            try:
                check_sessions("the text report", session)  # dlpt.model.render_limit
            except DlptError as e:
                voice.say(f"not printing the report: {e}")
                return False
            try:
                # stdout may be a pipe whose reader left: one line, never a traceback (a file is ours).
                guard = report_output(voice.say) if where.get("file") is None else contextlib.nullcontext()
                with signals.interruptible(), guard:
                    self.render_report(session, where)
                self.printed = True
            except Interrupted as e:
                voice.say(
                    f"report interrupted ({e}); the profile was saved"
                    if opts.output or opts.outputs
                    else f"report interrupted ({e})"
                )
            except Exception as e:  # noqa: BLE001
                voice.say(f"could not render the report: {type(e).__name__}: {e}")
                ok = False
        if across:
            try:
                # A signal, before or during the wait, ends it: what is there is reported.
                with signals.deferred():
                    rs = gather_ranks(
                        opts.output_abs if self.saved else None,
                        role,
                        self.saved,
                        session,
                        0.0 if signals.ending else opts.rank_timeout,
                        voice.inform,
                        store,
                        stop=lambda: signals.ending,
                    )
                with signals.interruptible(), report_output(voice.say, "the report across ranks"):
                    rep = ranks_view(rs, opts.metric, opts.show_all)
                    if not opts.no_report:
                        cross_rank_report(rep, render_kwargs(opts), where)
                        self.printed = True
                ok = (
                    outputs.write_rank_pages(
                        rep, pages, voice.say if not opts.quiet else voice.say_failures, opts.force
                    )
                    and ok
                )
            except Interrupted as e:
                voice.say(f"report across ranks interrupted ({e}); the profile was saved")
            except Exception as e:  # noqa: BLE001 - this rank's session is saved: say it, keep the status
                voice.say(f"could not render the report across ranks: {type(e).__name__}: {e}")
                ok = False
        return ok


def open_html(written: list[outputs.Output]) -> None:
    """--open: the HTML report in a browser, if it was written (never a failure)."""
    for o in written:
        if o.kind == "html" and os.path.isfile(o.abspath):
            open_report(o.abspath, voice.say)
