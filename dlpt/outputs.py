"""Render outputs of the command line besides the terminal report: ``--html FILE`` and
``--export FMT FILE`` (repeatable). They work with a profiled run and with ``--load``, and the
terminal report is still printed unless ``--no-report``.

The CLI collects them while parsing (:func:`collect`), checks that every path can be written
before the program runs, and writes them once the session exists (:func:`write_all`); each
file is written atomically, and a failure is reported without stopping the other outputs.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import dataclass

from dlpt.errors import DlptError, UsageError
from dlpt.exports import FORMATS as EXPORT_FORMATS
from dlpt.exports import write_export
from dlpt.session import Session

__all__ = ["Output", "add_arguments", "collect", "path_problem", "write_all"]


@dataclass(frozen=True)
class Output:
    """One requested file: ``kind`` is "html" or an export format."""

    kind: str
    path: str
    abspath: str  # resolved at parse time: the program may chdir before it is written

    @property
    def flag(self) -> str:
        return "--html" if self.kind == "html" else f"--export {self.kind}"

    @property
    def what(self) -> str:
        return "HTML report" if self.kind == "html" else f"{self.kind} export"


def path_problem(path: str) -> str | None:
    """Why ``path`` cannot be written, or None (checked before a run, not after it)."""
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        return "is a directory"
    if not os.path.isdir(parent):
        return f"directory {parent} does not exist"
    if not os.access(parent, os.W_OK):
        return f"directory {parent} is not writable"
    return None


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
        help="also export the profile: FMT is speedscope (speedscope.app JSON) or folded "
        "(flamegraph.pl / inferno); repeatable",
    )


def collect(opts: argparse.Namespace) -> list[Output]:
    """The outputs ``opts`` asks for; UsageError on an unknown format or a path given twice."""
    out = []
    if getattr(opts, "html", None) is not None:
        out.append(Output("html", opts.html, os.path.abspath(opts.html)))
    for fmt, path in getattr(opts, "export", None) or []:
        if fmt not in EXPORT_FORMATS:
            raise UsageError(f"--export: unknown format {fmt!r}; choose one of: {', '.join(EXPORT_FORMATS)}")
        out.append(Output(fmt, path, os.path.abspath(path)))
    seen: dict[str, Output] = {}
    for o in out:
        if o.abspath in seen:
            raise UsageError(f"{o.flag} {o.path}: the same file as {seen[o.abspath].flag}")
        seen[o.abspath] = o
    return out


def write_all(
    session: Session, outputs: list[Output], metric: str | None, show_all: bool, say: Callable[[str], None]
) -> bool:
    """Write every output; ``say`` reports each file written or failed. True if all worked."""
    ok = True
    for o in outputs:
        try:
            if o.kind == "html":
                from dlpt.html import write_html  # only when asked for: it reads its assets

                write_html(session, o.abspath, metric=metric, show_all=show_all)
            else:
                write_export(session, o.kind, o.abspath, metric=metric, show_all=show_all)
            say(f"wrote {o.what} to {o.path}")
        except (OSError, DlptError) as e:
            say(f"could not write the {o.what} to {o.path}: {e}")
            ok = False
        except Exception as e:  # noqa: BLE001 - a bug in one output must not lose the others
            say(f"could not write the {o.what} to {o.path}: {type(e).__name__}: {e}")
            ok = False
    return ok
