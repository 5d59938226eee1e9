"""Titled summary tables (rich ``Table``) whose numbers never get squeezed: the value columns keep
their content width and only the last (name) column is cut, with an ellipsis, to what is left.

Used by the summary tables (kernels, CUDA API calls, syncs) and the torch.compile section.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from rich import box
from rich.table import Table
from rich.text import Text

from dlpt.renderers.terminal.format import ASCII_SIMPLE_HEAD, Fmt, fit_label, truncate

__all__ = ["Label", "Row", "make_table", "add_rows"]

Label = str | Text | tuple[Text, str]
"""The name column: text, or (main, detail) where the detail is dropped first when space runs out."""


class Row(NamedTuple):
    """One table row: the value cells, then the name column."""

    cells: Sequence[str | Text]  # a str cell is plain text, never rich markup
    label: Label
    source: bool = False  # the label's detail is source text (shortened from the middle)


def make_table(title: str, fmt: Fmt, note: str = "") -> Table:
    """An empty table with a bold left-aligned title (``note`` dimmed after it) and a header rule
    only (ASCII on an ASCII console)."""
    return Table(
        title=Text(title, "bold") + Text(note, "dim"),
        title_justify="left",
        box=ASCII_SIMPLE_HEAD if fmt.ascii else box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        header_style="bold",
    )


def add_rows(t: Table, rows: Sequence[Row], width: int, ascii: bool) -> None:
    """Add ``rows`` with the value columns pinned to their content width and the last (name)
    column cut to what is left, so a long name is ellipsised instead of rich squeezing or
    dropping numbers (and with ``...`` on an ASCII console)."""
    used = 0
    for i, col in enumerate(t.columns[:-1]):
        col.min_width = max(
            [
                len(str(col.header)),
                *((Text(c) if isinstance(c, str) else c).cell_len for c in (r.cells[i] for r in rows)),
            ]
        )
        used += col.min_width + 3  # a cell's padding on both sides plus the column divider
    last = max(width - used, 8)
    t.columns[-1].max_width = last
    for r in rows:
        # rich parses a str cell as markup ("[/x]" would raise): cells go in as Text.
        cells = [Text(c) if isinstance(c, str) else c for c in r.cells]
        name = r.label
        if isinstance(name, tuple):  # (main, detail): the name matters more here
            t.add_row(*cells, fit_label("", name[0], name[1], last, False, ascii, r.source))
            continue
        name = name if isinstance(name, Text) else Text(str(name))
        t.add_row(*cells, truncate(name, last, ascii))
