"""The ``run`` command: ``dlpt [run] [options] (script.py | -m module | -c code) [args...]``.

This is the orchestration of a run, its options parsed and checked before the program starts
(:mod:`dlpt.cli.options`: bad values and unwritable output paths fail at once, not after an
hour-long run): start the profile, run the program as plain ``python`` would
(:mod:`dlpt.cli.launch`), then stop, save and show (:mod:`dlpt.cli.ending`), speaking on stderr
through :mod:`dlpt.cli.voice`.

Whatever way the program ends (normal end, ``sys.exit``, exception, Ctrl-C, SIGTERM), the profile
is first stopped, saved (``-o``, ``--html``, ``--export``) and shown; only then does the
program's traceback / exit status follow (:mod:`dlpt.cli.signals` says how signals are handled). A
forked child that returns from the program exits with the program's status and reports nothing:
the profile is its parent's.
"""

from __future__ import annotations

import os
import signal
import threading

from dlpt.api import profile
from dlpt.cli import voice
from dlpt.cli.ending import finish_run
from dlpt.cli.launch import LaunchError, exit_status, install, resolve, run_program
from dlpt.cli.own_imports import preload
from dlpt.cli.signals import Signals
from dlpt.errors import DlptError, UsageError
from dlpt.frontend.options import RunOptions
from dlpt.frontend.status_line import StatusLine

__all__ = ["EXIT_USAGE", "run_command"]

EXIT_USAGE = 2  # bad options, missing program, unreadable session: like python's own exit 2


def run_command(opts: RunOptions) -> int:
    """Profile ``opts.program``; the program's own exit status (or the signal to die of)."""
    try:
        prog = resolve(list(opts.program), opts.capture.step_on)
    except LaunchError as e:  # what python says in one line, with python's status
        voice.say(str(e))
        return e.status
    except UsageError as e:
        voice.say(str(e))
        return EXIT_USAGE
    except BaseException as e:  # noqa: BLE001 - the program's package failed to import, or a SyntaxError
        return exit_status(e)
    # Before the program's sys.path[0] and modules take over (a local html.py): dlpt.cli.own_imports.
    preload(html=opts.outputs.html)
    install(prog)
    # joinable: a dlpt.profile() the program starts (@dlpt.profile() on its main) joins this one.
    prof = profile.of(opts.capture)
    if StatusLine.wanted(opts.quiet):
        voice.STATUS_LINE[0] = StatusLine(prof.status).start()
    status = _start(prof)
    if status is not None:
        return status
    signals = Signals(voice.say, opts.signal_grace, prefix=lambda: voice.PREFIX[0])
    signals.remaining = opts.steps  # what the grace names if it runs out before any of it
    signals.terminate_with(lambda: finish_run(prof, opts, signals))
    pid = os.getpid()
    # Ctrl-C is held once the program ends, unless it is ignored (a background job) or cannot be
    # handled here (dlpt.cli.main called from a thread other than the main one).
    holds = threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) not in (
        signal.SIG_IGN,
        None,
    )
    outcome = run_program(prog, signals.note if holds else None)
    if os.getpid() != pid:  # a forked child returned: the profile and the report are the parent's
        return exit_status(outcome)
    sigint_at_end = prog.sigint_at_end if holds else signal.getsignal(signal.SIGINT)
    signals.program_ended(sigint_at_end)  # this thread finishes (or waits for the one that does)
    finish_run(prof, opts, signals)  # what failed there was said; the status stays the program's
    status = exit_status(outcome)
    # The interpreter's shutdown (joining the program's non-daemon threads) sees the handlers
    # plain python would: Ctrl-C ends the wait, SIGTERM kills.
    signals.restore(sigint_at_end)
    if signals.status is not None:  # a signal arrived while dlpt finished: die of it (end_process)
        return signals.status
    late = signals.deliver_to_program()  # what the program's own handlers were held for meanwhile
    return exit_status(late) if late is not None else status


def _start(prof: profile) -> int | None:
    """Start ``prof``; the exit status when it cannot start (said), None when it runs."""
    try:
        prof.start()
    except UsageError as e:  # an environment switch's value (DLPT_FLOOR, DLPT_SUSPEND)
        voice.stop_status_line()
        voice.say(f"error: {e}")
        return EXIT_USAGE
    except DlptError as e:
        voice.stop_status_line()
        voice.say(f"cannot start profiling: {e}")
        return EXIT_USAGE
    except BaseException:
        voice.stop_status_line()
        raise
    return None
