"""Render outputs of the command line besides the terminal report: ``--html FILE`` and
``--export FMT FILE`` (repeatable). They work with a profiled run and with ``--load``, and the
terminal report is still printed unless ``--no-report``.

The CLI collects them while parsing (:func:`collect`), checks that every path can be written
before the program runs (:func:`check_writable`, the same check as ``-o``'s), and writes them
once the session exists (:func:`dlpt.finish.write_all`, in the run's one ending). Every file is
written by :mod:`dlpt.files.safe_files`' rules, as sessions are: atomically, through a symlink
to its target, never over a device, a FIFO or a directory; a failure is reported without
stopping the other outputs.
"""

from __future__ import annotations

import argparse
import functools
import os
from collections.abc import Callable, Mapping

from dlpt.errors import UnsafeFileError, UsageError
from dlpt.files.rank_paths import RANK_FIELD
from dlpt.files.safe_files import check_output_path
from dlpt.files.write_target import Target, absolute
from dlpt.finish import Output, write_all, write_one
from dlpt.renderers.exports import FORMATS as EXPORT_FORMATS
from dlpt.views.ranks import RanksView

__all__ = [
    "Output",
    "add_arguments",
    "add_force",
    "collect",
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


def collect(opts: argparse.Namespace) -> list[Output]:
    """The outputs ``opts`` asks for; UsageError on an unknown format or a file given twice
    (``-o`` and ``--load``'s session included; a symlink and its target are the same file)."""
    out = []
    if getattr(opts, "html", None) is not None:
        out.append(Output("html", opts.html, absolute(opts.html)))
    for fmt, path in getattr(opts, "export", None) or []:
        if fmt not in EXPORT_FORMATS:
            raise UsageError(f"--export: unknown format {fmt!r}; choose one of: {', '.join(EXPORT_FORMATS)}")
        out.append(Output(fmt, path, absolute(path)))
    seen: dict[str, str] = {}
    loads = getattr(opts, "load", None) or []
    for flag, given in (
        *(("--load", p) for p in ([loads] if isinstance(loads, str) else loads)),
        ("-o", getattr(opts, "output", None)),
    ):
        if given:
            seen[os.path.realpath(given)] = flag
    for o in out:
        real = os.path.realpath(o.abspath)
        if real in seen:
            raise UsageError(f"{o.flag} {o.path}: the same file as {seen[real]}")
        seen[real] = o.flag
    return out


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
