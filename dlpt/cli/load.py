"""The ``load`` command: ``dlpt load FILE [FILE ...] [options]`` (also ``dlpt --load FILE ...``):
saved sessions shown again, running nothing. One session: its report in any view, its HTML
report and exports, or the PC-sampled lines of some kernels (``--kernel-lines``); several (or a
quoted glob): the ranks of one job, the report and page across them
(:mod:`dlpt.renderers.terminal.ranks`).

Each is viewed once for the report and every file (:mod:`dlpt.views`), and printed to stdout or
``--report-file`` as a run's report is.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from dlpt.cli import voice
from dlpt.cli.ending import open_html
from dlpt.cli.loads import check_one_job
from dlpt.cli.stdout_guard import Printed, report_output
from dlpt.errors import DlptError
from dlpt.frontend import outputs
from dlpt.frontend.options import LoadOptions
from dlpt.frontend.report_target import Where
from dlpt.model.render_limit import check_sessions
from dlpt.model.session import Session
from dlpt.views.run import RunView, build_view

__all__ = ["load_command"]

EXIT_USAGE = 2


def load_command(opts: LoadOptions) -> int:
    """Show the sessions ``opts`` names; the exit status (2: a session or an output failed)."""
    if len(opts.sessions) > 1:
        return _ranks(opts)
    try:
        session = Session.load(opts.sessions[0])
    except DlptError as e:
        voice.say(str(e))
        return EXIT_USAGE
    if opts.kernel_lines is not None:
        return _kernel_lines(session, opts.kernel_lines)
    shown = opts.report.shown
    try:  # before the view, which is as large: dlpt.model.render_limit
        check_sessions("the text report" if shown else "a report", session)
    except DlptError as e:
        voice.say(f"not printing the report: {e}" if shown else f"not writing the files: {e}")
        return EXIT_USAGE
    # Folded and analysed once for the report and every file (dlpt.views.run).
    view = build_view(session, opts.view)
    if shown and not _print(opts, lambda where: _print_report(view, opts, where)):
        return EXIT_USAGE
    say = voice.say_failures if opts.quiet else voice.say
    ok = outputs.write_all(view, opts.outputs.files, opts.report.metric, opts.view, say, opts.outputs.force)
    if opts.outputs.open:
        open_html(list(opts.outputs.files))
    return 0 if ok else EXIT_USAGE


def _kernel_lines(session: Session, name: str) -> int:
    from dlpt.renderers.terminal.kernel_lines import render_kernel_lines

    try:
        print(render_kernel_lines(session.typed_meta, name))
    except DlptError as e:
        voice.say(str(e))
        return EXIT_USAGE
    return 0


def _print_report(view: RunView, opts: LoadOptions, where: Where) -> None:
    from dlpt.renderers.terminal.report import print_report

    r = opts.report
    print_report(
        view,
        view=r.view,
        metric=r.metric,
        threshold=r.threshold,
        depth=r.depth,
        show_all=opts.view.show_all,
        ascii=r.ascii,
        peak_tflops=opts.view.peak_tflops,
        verbose=r.verbose,
        file=where.file,
        width=where.width,
        color=where.color,
    )


def _ranks(opts: LoadOptions) -> int:
    """Several sessions: the report across ranks (dlpt.renderers.terminal.ranks)."""
    from dlpt.renderers.terminal.ranks import print_ranks
    from dlpt.views.ranks import rank_set, ranks_view

    try:
        loaded = [(path, Session.load(path)) for path in opts.sessions]
        check_one_job(loaded)
        rs = rank_set(loaded)
    except DlptError as e:
        voice.say(str(e))
        return EXIT_USAGE
    r = opts.report
    view = ranks_view(rs, r.metric, opts.view.show_all)

    def report(where: Where) -> None:
        print_ranks(
            view,
            threshold=r.threshold,
            depth=r.depth,
            ascii=r.ascii,
            file=where.file,
            width=where.width,
            color=where.color,
        )

    ok = not r.shown or _print(opts, report)
    say = voice.say_failures if opts.quiet else voice.say
    ok = outputs.write_rank_pages(view, list(opts.outputs.files), say, opts.outputs.force) and ok
    if opts.outputs.open:
        open_html(list(opts.outputs.files))
    return 0 if ok else EXIT_USAGE


def _print(opts: LoadOptions, printer: Callable[[Where], None]) -> bool:
    """Print a loaded session's report to ``opts``' target (stdout or ``--report-file``);
    whether it worked."""
    target = opts.report.target
    # stdout may be a pipe whose reader left: one line, never a traceback (a file is ours).
    guard = report_output(voice.say) if target.path is None else contextlib.nullcontext(Printed())
    try:
        with guard as printed, target.open() as where:
            printer(where)
        if printed.failed:  # said; stdout could not take it (a full disk): dlpt's own failure
            return False
    except (OSError, DlptError) as e:
        voice.say(f"could not write the text report to {target.path}: {e}" if target.path else str(e))
        return False
    if target.path is not None:
        voice.inform(f"wrote the text report to {target.path}")
    return True
