"""A fixed-layout grid: right-aligned value columns, then one label column that takes the rest
of the width, with optional tree guides.

The tree and flat views use this rather than rich.table.Table: the label is fitted to the exact
width left (so long names are ellipsised on one line instead of wrapped), tree guides of very
deep nodes are capped, and thousands of rows render fast.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.measure import Measurement
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


def _layout(headers: Sequence[str], rows: Sequence[GridRow], width: int) -> tuple[list[int], int, int, int]:
    """(value column widths, their total with separators, the label column's width, the levels of
    guides drawn at most) of a grid ``width`` cells wide."""
    widths = [len(h) for h in headers]
    for r in rows:
        for i, cell in enumerate(r.cells):
            widths[i] = max(widths[i], len(cell))
    used = sum(widths) + len(headers) * 1 + 1  # one space after each cell, one more before the label
    label_w = max(width - used, 10)
    cap = max(4, label_w * 2 // 9)  # guides take at most 2/3 of the label column
    return widths, used, label_w, cap


def grid_width(
    headers: Sequence[str], label_header: str, rows: Sequence[GridRow], width: int, ascii: bool
) -> int:
    """The width :func:`render_grid` needs within ``width`` so that no label is cut: computed from
    the rows, without laying them out."""
    _, used, _, cap = _layout(headers, rows, width)
    longest = len(label_header)
    for r in rows:
        label = len(guide_prefix(r.chain, cap, ascii)) + r.main.cell_len
        if r.detail:
            label += 2 + len(r.detail)
        longest = max(longest, label)
    return min(width, used + longest)


class _Rule:
    """The rule under the grid's header: it spans the width given, so it takes no part in the
    grid's own width (the header and the rows say how wide the content is)."""

    def __init__(self, text: Text) -> None:
        self.text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.text

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(0, 0)


def render_grid(
    headers: Sequence[str], label_header: str, rows: Sequence[GridRow], width: int, ascii: bool
) -> Group:
    """Lay the rows out in ``width`` cells: a header, a rule, then one Text line per row (one
    Text per line keeps rich's line splitting linear in the number of rows)."""
    widths, used, label_w, cap = _layout(headers, rows, width)
    head = " ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True)) + "  " + label_header
    rule = ("-" if ascii else "\u2500") * min(width, used + max(len(label_header), label_w))
    lines: list[Text | _Rule] = [truncate(Text(head, "bold"), width, ascii), _Rule(Text(rule, DETAIL_STYLE))]
    for r in rows:
        line = Text(no_wrap=True, overflow="ignore")
        for i, (cell, w) in enumerate(zip(r.cells, widths, strict=True)):
            line.append(cell.rjust(w) + " ", r.cell_styles[i] if r.cell_styles else "")
        line.append(" ")
        prefix = guide_prefix(r.chain, cap, ascii)
        line.append_text(fit_label(prefix, r.main, r.detail, label_w, r.keep_detail, ascii))
        lines.append(line)
    return Group(*lines)
