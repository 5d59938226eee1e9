"""A run's files besides the session and the text report: ``--html FILE`` and ``--export FMT
FILE`` (repeatable), for a profiled run and for ``load``; the text report is still printed unless
``--no-report``.

The parser collects them (:func:`dlpt.frontend.parser.collect_outputs`), every path is checked
before the program runs (:func:`check_writable`, the same check as ``-o``'s), and they are
written once the session exists (:func:`write_all`, in the run's one ending:
:class:`dlpt.frontend.ending.Ending`). Every file is written by :mod:`dlpt.files.safe_files`'
rules, as sessions are: atomically, through a symlink to its target, never over a device, a FIFO
or a directory; a failure is reported without stopping the other outputs.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from dlpt.errors import DlptError, UnsafeFileError, UsageError
from dlpt.files.rank_paths import RANK_FIELD
from dlpt.files.safe_files import check_output_path
from dlpt.files.write_target import Target
from dlpt.frontend.options import Output
from dlpt.model.session import Session
from dlpt.renderers.exports import FORMATS as EXPORT_FORMATS
from dlpt.renderers.exports import write_export
from dlpt.views.run import RunView, ViewOptions

if TYPE_CHECKING:  # the ranks' view imports torch: not for --help or a bad option
    from dlpt.views.ranks import RanksView

__all__ = [
    "Output",
    "add_arguments",
    "add_force",
    "check_writable",
    "what_is_written",
    "write_all",
    "write_rank_pages",
    "rank_page",
]


def check_writable(
    path: str, flag: str, force: bool = False, protected: Mapping[str, str] | None = None
) -> Target:
    """Where ``path`` (given with ``flag``) would be written, or UsageError saying why it cannot
    be: checked before a possibly hour-long run rather than losing its output at the end
    (dlpt.files.safe_files; ``force`` and ``protected`` as there)."""
    try:
        return check_output_path(path, what_is_written(flag), force=force, protected=protected)
    except UnsafeFileError as e:
        raise UsageError(f"{flag} {path}: {e}") from None


def what_is_written(flag: str) -> str:
    """What a flag writes (dlpt.files.own_files: it replaces only that kind): "sessions", "HTML
    reports" or "FMT exports" for ``--export FMT``."""
    if flag == "-o":
        return "sessions"
    if flag.endswith("--html"):
        return "HTML reports"
    fmt = flag.split()[-1] if flag.startswith("--export ") else ""
    return f"{fmt} exports" if fmt in EXPORT_FORMATS else "exports"


def add_force(parser: argparse.ArgumentParser) -> None:
    """``--force``: replace an existing file dlpt did not write."""
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace an existing output file even if dlpt did not write it (by default only "
        "new files, empty ones and dlpt's own files of the same kind are replaced: a session by "
        "-o, an HTML report by --html, ...)",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--html`` and ``--export`` to the CLI's parser."""
    parser.add_argument(
        "--html",
        metavar="FILE",
        help="also write a self-contained HTML report (flame graph, tables, source view)",
    )
    parser.add_argument(
        "--export",
        nargs=2,
        action="append",
        metavar=("FMT", "FILE"),
        help="also export the profile: FMT is speedscope (speedscope.app JSON), folded "
        "(flamegraph.pl / inferno) or perfetto (the --timeline window as a Chrome trace for "
        "ui.perfetto.dev); repeatable",
    )


def rank_page(o: Output, distributed: bool) -> bool:
    """Whether ``o`` is the one page across ranks that rank 0 writes (an HTML report of a job
    whose path does not ask for a page per rank with ``{rank}``)."""
    return distributed and o.kind == "html" and RANK_FIELD not in o.path


def write_rank_pages(
    report: RanksView, pages: list[Output], say: Callable[[str], None], force: bool = False
) -> bool:
    """Write the page across ranks to each of ``pages``; True if all worked."""
    from dlpt.renderers.html.ranks_page import write_ranks_html  # reads its assets

    ok = True
    for o in pages:
        write = functools.partial(write_ranks_html, report, o.abspath, force=force)
        ok = write_one("HTML report across ranks", o.path, write, say) and ok
    return ok


def write_all(
    source: Session | RunView,
    files: Sequence[Output],
    metric: str | None,
    options: ViewOptions,
    say: Callable[[str], None],
    force: bool = False,
) -> bool:
    """Write every file of a session, or of the run's view of it (folded and analysed once for
    all of them: :mod:`dlpt.views.run`) made with ``options`` (the HTML report's MFU uses their
    peak, as the terminal's); ``metric``: the one shown first; ``say`` reports each file written
    or failed; ``force``: replace files dlpt did not write (``--force``). True if all worked."""
    ok = True
    show_all, peak = options.show_all, options.peak_tflops
    for o in files:
        if o.kind == "html":
            from dlpt.renderers.html import write_html  # only when asked for: it reads its assets

            def write(o: Output = o) -> None:
                write_html(source, o.abspath, metric=metric, show_all=show_all, peak_tflops=peak, force=force)
        else:

            def write(o: Output = o) -> None:
                write_export(source, o.kind, o.abspath, metric=metric, show_all=show_all, force=force)

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
