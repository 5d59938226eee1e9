"""The report model: everything a report says about a session, computed once.

:func:`assemble_report` turns a session's analysis (:mod:`dlpt.views.run` makes it once per
run; :func:`build_report` on its own for one session) and every option that changes what is said
(the peak for MFU, ASCII-only text) into a :class:`Report`: the header's facts in the order the
terminal prints them (each with its text, its short label and value for the HTML page, and how
much it matters),
the per-step totals, the torch.compile summary and the suggestions with their wording. The
terminal report, the HTML report and the cross-rank report format it; none of them computes a
fact of its own (``tests/unit/test_report_parity.py`` holds the terminal and the page to the same
facts).

Text here is plain: strings from the session (file, kernel, device names) are kept as recorded,
and each front-end makes them safe for its medium (the terminal escapes control characters, the
page sets text, never markup).

A new fact goes into one of the modules here, by subject: :mod:`.run` (what ran, steps, warnings
about them, threads, versions), :mod:`.gpu` (totals, GPU capture, devices, CUDA graphs, dlpt's own
cost, dropped and unattributed records), :mod:`.measures` (MFU, idle per step, FLOP coverage),
:mod:`.compile` (torch.compile), :mod:`.suggestions` (wording of findings), :mod:`.headlines` (the
short line of each flag that asked for something); communication facts are
:func:`dlpt.analysis.communication.comm_facts`.
"""

from dlpt.analysis.report.build import assemble_report, build_report
from dlpt.analysis.report.model import CompileSummary, Fact, Level, Located, Report, Suggestion

__all__ = [
    "build_report",
    "assemble_report",
    "Report",
    "Fact",
    "Level",
    "CompileSummary",
    "Located",
    "Suggestion",
]
