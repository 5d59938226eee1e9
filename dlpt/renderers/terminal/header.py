"""The header panel: the report model's facts (:mod:`dlpt.analysis.report`) in a rounded box.

Two forms. :class:`Header` (``--verbose``) has every fact, one per line (wall time and steps share
the first), styled by how much each matters. :class:`CompactHeader` (the default) is what a
reader needs first, at most :data:`COMPACT_LINES` lines in all at any width, each cut to one row:
the run and its steps, the step time, the totals, the headline of each flag that asked for
something (``--flops``, ``--memory``, ``--pc-sampling``: a line each, beyond that budget), each
used GPU's busy and idle share, the top finding, and what limits trust in the numbers (warnings,
never hidden: counted in a last line when they do not fit). Everything else (sampler
diagnostics, unused GPUs, versions, dlpt's own cost) is behind ``--verbose``."""

from __future__ import annotations

from collections.abc import Iterable

from rich import box
from rich.console import RenderableType
from rich.panel import Panel
from rich.text import Text

from dlpt.model.units import separator
from dlpt.renderers.terminal.base import View
from dlpt.renderers.terminal.format import Fmt, truncate
from dlpt.views.run import Fact, Level, Report

__all__ = ["Header", "CompactHeader", "LEVEL_STYLES", "COMPACT_LINES", "step_time_line"]

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

#: The compact header's height, its box included.
COMPACT_LINES = 10
#: Used GPUs given a line of their own in the compact header (the others: one line, counted).
_COMPACT_GPUS = 2


def step_time_line(report: Report) -> Fact | None:
    """The step-time line of the headers: the one place that chooses it (the step wall time, as
    :mod:`dlpt.analysis.report.run` words it), so that a figure added to it (its spread) shows in
    both headers."""
    found = report.facts("step_wall")
    return found[0] if found else None


def _title(report: Report, fmt: Fmt) -> Text:
    title = Text("dlpt  ", "bold")
    title.append(fmt.clean(report.title), "bold cyan")
    if report.rank:
        title.append(f"  [{fmt.clean(report.rank)}]", "bold magenta")
    return title


def _first_line(report: Report, fmt: Fmt) -> Text:
    first = [f for f in report.header if f.kind in _FIRST_LINE]
    return Text(fmt.clean(separator(fmt.ascii).join(f.text for f in first)))


def _panel(lines: list[Text], fmt: Fmt) -> Panel:
    return Panel(Text("\n").join(lines), box=box.ASCII if fmt.ascii else box.ROUNDED, expand=True)


class Header(View):
    """The whole header panel (``--verbose``); ``notes`` are the terminal's own lines after the
    facts (what the values are, what is hidden)."""

    gap_before = False

    def __init__(self, report: Report, fmt: Fmt, notes: Iterable[str] = ()) -> None:
        super().__init__(fmt)
        self.report, self.notes = report, list(notes)

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        r = self.report
        lines = [_title(r, fmt), _first_line(r, fmt)]
        lines.extend(self.line(f, fmt) for f in r.header if f.kind not in _FIRST_LINE)
        lines.extend(Text(n, "dim") for n in self.notes)
        yield _panel(lines, fmt)

    @staticmethod
    def line(fact: Fact, fmt: Fmt) -> Text:
        return Text(fmt.clean(fact.text), LEVEL_STYLES[fact.level])


def _gpu_lines(report: Report, fmt: Fmt) -> list[Text]:
    """Each used GPU's busy and idle share, shortest first ("GPU 0: busy 77.5%, idle 22.5% ·
    NVIDIA H100 ..."); GPUs the program never used are left to ``--verbose``."""
    used = [f for f in report.facts("device") if f.share is not None]
    out = []
    for f in used[:_COMPACT_GPUS]:
        words = f.label.split(" ", 2)
        name = " ".join(words[:2])
        share = max(0.0, min(1.0, f.share or 0.0))
        text = f"{name}: busy {100 * share:.1f}%, idle {100 * (1 - share):.1f}%"
        if len(words) > 2:
            text += separator(fmt.ascii) + words[2]
        out.append(Text(fmt.clean(text), LEVEL_STYLES[f.level]))
    if len(used) > _COMPACT_GPUS:
        out.append(Text(f"{len(used) - _COMPACT_GPUS} more GPUs: --verbose", "dim"))
    return out


def _top_finding(report: Report, fmt: Fmt) -> Text | None:
    if not report.suggestions:
        return None
    s = report.suggestions[0]
    text = Text("top finding: ", "bold")
    text.append(fmt.clean(s.gain), "bold green")
    text.append(f" {fmt.clean(s.where)}: {fmt.clean(s.finding.title)}")
    return text


class CompactHeader(View):
    """The default header: at most :data:`COMPACT_LINES` lines at any width, and a line more for
    each flag's headline (see the module)."""

    gap_before = False

    def __init__(self, report: Report, fmt: Fmt) -> None:
        super().__init__(fmt)
        self.report = report

    def lines(self, fmt: Fmt) -> list[Text]:
        """The panel's lines, before they are cut to its width: data lost (an allocation
        failure, dropped records) right after the run's line, then the figures, then what else
        limits trust in them, as many as fit."""
        r = self.report
        errors = [f for f in r.header if f.level == "error"]
        warnings = [f for f in r.header if f.level == "warn"]
        head = [_title(r, fmt), _first_line(r, fmt), *(Header.line(f, fmt) for f in errors[:2])]
        step = step_time_line(r)
        if step is not None:
            head.append(Header.line(step, fmt))
        head.extend(Header.line(f, fmt) for f in r.facts("totals"))
        # What a flag asked for (--flops, --memory, --pc-sampling): a line each, on top of the
        # budget, so that asking for an answer never pushes out a warning.
        head.extend(Header.line(f, fmt) for f in r.headlines)
        height = COMPACT_LINES + len(r.headlines)
        head.extend(_gpu_lines(r, fmt))
        top = _top_finding(r, fmt)
        if top is not None:
            head.append(top)
        room = height - 2 - len(head) - 1  # the box, and the last line (--verbose)
        # What limits trust in the numbers first, then measurements that limit the program.
        bad = [f for f in r.header if f.level == "bad" and f.kind != "device"]
        shown = [*warnings, *bad][: max(0, room)]
        head.extend(Header.line(f, fmt) for f in shown)
        rest = len(errors[2:]) + len(warnings) + len(bad) - len(shown)
        more = f"{rest} more line{'s' if rest != 1 else ''} and the details: " if rest else "details: "
        head.append(Text(more + "--verbose", "dim"))
        if len(head) > height - 2:  # many GPUs and errors: the last line stays
            head = [*head[: height - 3], head[-1]]
        return head

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        inner = max(1, width - 4)  # the box's borders and padding
        yield _panel([truncate(t, inner, fmt.ascii) for t in self.lines(fmt)], fmt)
