"""The header panel: the report model's facts (:mod:`dlpt.analysis.report`) in a rounded box,
one per line (wall time and steps share the first), styled by how much each matters. What limits
trust in the numbers (GPU capture off, dropped or unattributed records, torch.compile
attribution that failed) is among them, never hidden."""

from __future__ import annotations

from collections.abc import Iterable

from rich import box
from rich.console import RenderableType
from rich.panel import Panel
from rich.text import Text

from dlpt.analysis.report import Fact, Level, Report
from dlpt.analysis.report.build import separator
from dlpt.renderers.terminal.base import View
from dlpt.renderers.terminal.format import Fmt

__all__ = ["Header", "LEVEL_STYLES"]

#: How each level of a fact is shown.
LEVEL_STYLES: dict[Level, str] = {
    "info": "",
    "dim": "dim",
    "note": "yellow",
    "bad": "bold red",
    "warn": "bold yellow",
    "error": "bold red",
}

#: Facts printed together on the line after the title.
_FIRST_LINE = ("run", "steps")


class Header(View):
    """Header panel of a report; ``notes`` are the terminal's own lines after the facts (what the
    values are, what is hidden)."""

    gap_before = False

    def __init__(self, report: Report, fmt: Fmt, notes: Iterable[str] = ()) -> None:
        super().__init__(fmt)
        self.report, self.notes = report, list(notes)

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        r = self.report
        title = Text("dlpt  ", "bold")
        title.append(fmt.clean(r.title), "bold cyan")
        if r.rank:
            title.append(f"  [{fmt.clean(r.rank)}]", "bold magenta")
        lines = [title]
        first = [f for f in r.header if f.kind in _FIRST_LINE]
        lines.append(Text(fmt.clean(separator(fmt.ascii).join(f.text for f in first))))
        lines.extend(self.line(f, fmt) for f in r.header if f.kind not in _FIRST_LINE)
        lines.extend(Text(n, "dim") for n in self.notes)
        yield Panel(Text("\n").join(lines), box=box.ASCII if fmt.ascii else box.ROUNDED, expand=True)

    @staticmethod
    def line(fact: Fact, fmt: Fmt) -> Text:
        return Text(fmt.clean(fact.text), LEVEL_STYLES[fact.level])
