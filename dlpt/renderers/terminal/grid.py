"""A fixed-layout grid: right-aligned value columns, then one label column that takes the rest
of the width, with optional tree guides.

The tree and flat views use this rather than rich.table.Table: the label is fitted to the exact
width left (so long names are ellipsised on one line instead of wrapped), tree guides of very
deep nodes are capped, and thousands of rows render fast.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.text import Text

from dlpt.renderers.terminal.format import DETAIL_STYLE, fit_label, truncate

# A node's position in the tree for drawing guides: (is last child, parent's chain, depth).
# A linked list, so a row costs O(visible levels) however deep the node is.
Chain = tuple[bool, "Chain | None", int]

_GUIDES = {False: ("\u2502  ", "   ", "\u251c\u2500 ", "\u2514\u2500 "), True: ("|  ", "   ", "|- ", "`- ")}


@dataclass
class GridRow:
    """One row: value cells (already formatted), label main text and dimmed detail."""

    cells: Sequence[str]
    main: Text
    detail: str = ""
    keep_detail: bool = False
    chain: Chain | None = None
    source: bool = False  # the detail is source text (shortened from the middle: fit_label)
    cell_styles: Sequence[str] | None = None


def guide_prefix(chain: Chain | None, cap: int, ascii: bool) -> str:
    """Tree guides for a row; at most ``cap`` levels are drawn, the ones above them are counted in
    a ``[+N levels]`` mark (bracketed and named: beside the value columns a bare ``+N`` read as
    one more number)."""
    if chain is None:
        return ""
    pipe, blank, tee, corner = _GUIDES[ascii]
    depth = chain[2]
    # The mark takes the room of some levels' guides: the prefix stays within cap levels' width.
    keep = cap if depth <= cap else max(1, cap - (len(f"[+{depth} levels] ") + 2) // 3)
    flags: list[bool] = []
    c: Chain | None = chain
    while c is not None and len(flags) < keep:
        flags.append(c[0])
        c = c[1]
    flags.reverse()
    hidden = depth - len(flags)
    parts = [f"[+{hidden} level{'s' if hidden != 1 else ''}] "] if c is not None else []
    parts.extend(blank if last else pipe for last in flags[:-1])
    parts.append(corner if flags[-1] else tee)
    return "".join(parts)


def render_grid(
    headers: Sequence[str], label_header: str, rows: Sequence[GridRow], width: int, ascii: bool
) -> Group:
    """Lay the rows out in ``width`` cells: a header, a rule, then one Text line per row (one
    Text per line keeps rich's line splitting linear in the number of rows)."""
    return Group(*grid_lines(headers, label_header, lambda _labels: rows, width, ascii))


class LazyGrid:
    """A grid of many rows that never holds them all: ``rows(labels)`` gives a fresh iterator of
    the rows each time; one pass over their cells sizes the columns (``labels`` False: the rows
    may leave their labels empty), a second one prints. Printed by rich as one renderable, or
    by :meth:`chunks` a thousand rows at a time (what ``print_report`` does, so that a million
    rows never sit in rich's buffer at once)."""

    def __init__(
        self,
        headers: Sequence[str],
        label_header: str,
        rows: Callable[[bool], Iterable[GridRow]],
        width: int,
        ascii: bool,
    ) -> None:
        self.headers, self.label_header, self.rows = headers, label_header, rows
        self.width, self.ascii = width, ascii

    def chunks(self, size: int = 1000) -> Iterator[Lines]:
        """The grid as renderables of at most ``size`` rows each."""
        layout = _Layout(self.headers, self.label_header, self.rows(False), self.width, self.ascii)
        yield Lines(layout, [], head=True)
        batch: list[GridRow] = []
        for row in self.rows(True):
            batch.append(row)
            if len(batch) == size:
                yield Lines(layout, batch)
                batch = []
        if batch:
            yield Lines(layout, batch)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment | Text | _Rule]:
        for part in self.chunks():
            yield from part.__rich_console__(console, options)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        w = grid_width(self.headers, self.label_header, self.rows, self.width, self.ascii)
        return Measurement(w, w)


class _Layout:
    """Column widths of a grid (from a pass over its rows' cells) and how a row is laid out."""

    def __init__(
        self, headers: Sequence[str], label_header: str, rows: Iterable[GridRow], width: int, ascii: bool
    ) -> None:
        ncol = len(headers)
        widths = [len(h) for h in headers]
        for r in rows:
            for i, cell in enumerate(r.cells):
                if len(cell) > widths[i]:
                    widths[i] = len(cell)
        used = sum(widths) + ncol * 1 + 1  # one space after each cell, one more before the label
        self.widths, self.ascii = widths, ascii
        self.label_w = max(width - used, 10)
        self.cap = max(4, self.label_w * 2 // 9)  # guides take at most 2/3 of the label column
        head = " ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True)) + "  " + label_header
        rule = ("-" if ascii else "\u2500") * min(width, used + max(len(label_header), self.label_w))
        self.label_header, self.used = label_header, used
        self.head: list[Text | _Rule] = [
            truncate(Text(head, "bold"), width, ascii),
            _Rule(Text(rule, DETAIL_STYLE)),
        ]

    def label(self, r: GridRow) -> Text:
        prefix = guide_prefix(r.chain, self.cap, self.ascii)
        return fit_label(prefix, r.main, r.detail, self.label_w, r.keep_detail, self.ascii, r.source)

    def line(self, r: GridRow) -> Text:
        line = Text(no_wrap=True, overflow="ignore")
        for i, (cell, w) in enumerate(zip(r.cells, self.widths, strict=True)):
            line.append(cell.rjust(w) + " ", r.cell_styles[i] if r.cell_styles else "")
        line.append(" ")
        line.append_text(self.label(r))
        return line

    def plain(self, r: GridRow) -> str:
        """``line(r).plain``, without building the styled line."""
        cells = "".join(cell.rjust(w) + " " for cell, w in zip(r.cells, self.widths, strict=True))
        return f"{cells} {self.label(r).plain}\n"


class _Rule:
    """The rule under the grid's header: it spans the width given, so it takes no part in the
    grid's own width (the header and the rows say how wide the content is)."""

    def __init__(self, text: Text) -> None:
        self.text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.text

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(0, 0)


def grid_width(
    headers: Sequence[str],
    label_header: str,
    rows: Callable[[bool], Iterable[GridRow]],
    width: int,
    ascii: bool,
) -> int:
    """The width a grid needs within ``width`` so that no label is cut (what a report printed
    to a pipe or a file is as wide as): the cells size the columns (``rows(False)``), then each
    label's natural length (``rows(True)``), without laying a row out."""
    layout = _Layout(headers, label_header, rows(False), width, ascii)
    longest = len(label_header)
    for r in rows(True):
        label = len(guide_prefix(r.chain, layout.cap, ascii)) + r.main.cell_len
        if r.detail:
            label += 2 + len(r.detail)
        if label > longest:
            longest = label
    return min(width, layout.used + longest)


class Lines:
    """Rows of a grid to print (``head``: its header and rule). To a console that writes no
    styles at all (``color_system`` None: a file or a pipe), each row is its plain text, which
    is what rich writes for it (a grid line never wraps and holds no tab or control character),
    at a fraction of rich's cost per line; to a terminal, rich renders each styled line."""

    def __init__(self, layout: _Layout, rows: list[GridRow], head: bool = False) -> None:
        self.layout, self.rows, self.head = layout, rows, head

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment | Text | _Rule]:
        if self.head:
            yield from self.layout.head
        if console.color_system is None:
            yield Segment("".join(map(self.layout.plain, self.rows)))
        else:
            yield from map(self.layout.line, self.rows)


def grid_lines(
    headers: Sequence[str],
    label_header: str,
    rows: Callable[[bool], Iterable[GridRow]],
    width: int,
    ascii: bool,
) -> Iterator[Text | _Rule]:
    """The lines of a grid whose rows ``rows(labels)`` yields (called twice: ``rows(False)``
    sizes the columns from the cells, ``rows(True)`` gives the rows with their labels)."""
    layout = _Layout(headers, label_header, rows(False), width, ascii)
    yield from layout.head
    yield from map(layout.line, rows(True))
