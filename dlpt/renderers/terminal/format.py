"""Number formatting, styles and node labels shared by all console renderers.

Values are scaled per profiled step here (one place), so every view agrees on what it shows.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from rich import box
from rich.text import Text

from dlpt.model.kernel_names import kernel_config
from dlpt.model.meta import Extras
from dlpt.model.resume_names import display_name
from dlpt.model.safe_text import escape_control
from dlpt.model.tree import Node
from dlpt.model.units import Units
from dlpt.renderers.terminal.output import MAX_WIDTH

# A header rule only, like box.SIMPLE_HEAD, but made of ASCII so that it survives a console
# whose encoding is not UTF-8 (rich would otherwise substitute a fully bordered ASCII box).
ASCII_SIMPLE_HEAD = box.Box("    \n    \n -- \n    \n    \n    \n    \n    \n", ascii=True)

STYLES: dict[str, str] = {
    "root": "bold",
    "thread": "dim",
    "frame": "bold",
    "scope": "bold magenta",
    "op": "yellow",
    "phase": "italic magenta",
    "kernel": "green",
    "memcpy": "blue",
    "memset": "blue",
    "sync": "red",
}
LOCATION_STYLE = "cyan"
DETAIL_STYLE = "dim"

#: The most characters of one session string a row processes: twice the widest report
#: (MAX_WIDTH cells; a character takes at least one cell, zero-width ones aside), so the cut is
#: never seen except as the ellipsis it ends with.
MAX_SHOWN_CHARS = 2 * MAX_WIDTH

# The metric key counting a node's own events, shown in the "calls" column.
COUNT_KEY: dict[str, str] = {
    "op": "calls",
    "scope": "calls",
    "kernel": "kernels",
    "memcpy": "copies",
    "memset": "memsets",
    "sync": "syncs",
}


@dataclass(frozen=True)
class Fmt(Units):
    """How to print on a console: :class:`~dlpt.model.units.Units` (per step, ASCII) plus
    ``sources``, the session's saved source text (``meta.sources``: file -> line number as a
    string -> text), the only place source text comes from (a report never opens the files a
    session names)."""

    sources: Mapping[str, Mapping[str, str]] = field(default_factory=dict, compare=False)

    def clean(self, s: str) -> str:
        """Make ``s``, a string from the session, safe to print: cut to what a row can show
        (:data:`MAX_SHOWN_CHARS`, so that the cost of a row does not follow the length of a
        name: a 100 kB kernel name costs what a 2 kB one does), control characters escaped
        (:mod:`.safe_text`), and only ASCII on an ASCII console."""
        if len(s) > MAX_SHOWN_CHARS:
            s = s[:MAX_SHOWN_CHARS] + ("..." if self.ascii else "…")
        s = escape_control(s)
        return s.encode("ascii", "replace").decode("ascii") if self.ascii else s

    def source(self, file: str, line: int) -> str:
        """The saved text of ``file:line``, stripped and printable, or "" when the session has
        none (``--no-source``, a version 1 session, a library file)."""
        text = self.sources.get(file, {}).get(str(line), "")
        # Tabs would change the printed width after fitting; other controls are escaped.
        return self.clean(text.strip().replace("\t", " ")) if text else ""


def collective_detail(x: Extras, m: Mapping[str, int], fmt: Fmt) -> str:
    """What a collective op moved (docs/session-format.md, collective extras): ``allreduce
    BFloat16 25.0 MiB/call group default_pg``; bytes per call from its inclusive metrics."""
    parts = [v for v in (x.collective, x.dtype) if v]
    calls = m.get("comm_calls", 0)
    size = max(m.get("comm_in_bytes", 0), m.get("comm_out_bytes", 0))
    if calls and size:
        parts.append(f"{fmt.bytes(size / calls, per_step=False)}/call")
    group = x.pg_desc or x.pg_name
    if group:
        parts.append(f"group {group}")
    return " ".join(parts)


def label_parts(node: Node, fmt: Fmt, metrics: dict[str, int] | None = None) -> tuple[Text, str]:
    """(main text, detail) of a node's label. The detail (source text, launch config, bytes) is
    printed dimmed after the main text and is the first thing dropped when space runs out.
    ``metrics`` supplies byte counts for copies (defaults to the node's inclusive metrics)."""
    kind = node.kind
    style = STYLES.get(kind, "")
    m = node.inclusive if metrics is None else metrics
    if kind == "frame":
        main = Text(f"{fmt.clean(os.path.basename(node.file) or node.file)}:{node.line} ", LOCATION_STYLE)
        main.append(fmt.clean(display_name(node.name)), style)
        marker = node.marker
        if marker:  # torch.compile events at this line (graph break, recompilations)
            main.append(f" {'!!' if fmt.ascii else '⚠'} {marker}", "bold red")
        return main, fmt.source(node.file, node.line)
    if kind == "root":
        return Text("total", style), ""
    if kind == "scope":
        return Text(f'scope "{fmt.clean(node.name)}"', style), ""
    if kind == "kernel":
        # Inductor's fused kernels: the ATen ops they were made from, before the launch config.
        fuses = node.typed_extras.fuses
        detail = kernel_config(node.typed_extras)
        if fuses:
            detail = f"fuses {'+'.join(fuses)}  {detail}".rstrip()
        return Text(fmt.clean(node.name), style), fmt.clean(detail)
    if kind == "memcpy":
        detail = " ".join(
            p
            for p in (
                node.typed_extras.host_mem or "",
                fmt.bytes(m.get("copy_bytes", 0)) if m.get("copy_bytes") else "",
            )
            if p
        )
        return Text(fmt.clean(node.name), style), fmt.clean(detail)
    if kind == "op" and node.typed_extras.collective is not None:
        return Text(fmt.clean(node.name), style), fmt.clean(collective_detail(node.typed_extras, m, fmt))
    return Text(fmt.clean(node.name), style), ""


def truncate(text: Text, width: int, ascii: bool) -> Text:
    """Cut ``text`` to ``width`` cells, marking the cut with an ellipsis (``...`` in ASCII)."""
    if text.cell_len <= width:
        return text
    mark = "..." if ascii else "…"
    text = text.copy()
    text.truncate(max(width - len(mark), 0))
    text.append(mark[: max(width, 0)], DETAIL_STYLE)
    return text


#: The fewest cells a shortened source text keeps (fewer say nothing: it is left out instead).
MIN_DETAIL = 10


def shorten_middle(text: str, width: int, ascii: bool) -> str:
    """``text`` within ``width`` cells, shortened from the middle (``h = self.no…(h) + x``): a
    source line's start and end both say what it does, its cut-off end does not. "" when
    ``width`` is too small to say anything."""
    if Text(text).cell_len <= width:
        return text
    mark = "..." if ascii else "…"
    room = width - len(mark)
    if room < 2:
        return ""
    head = (room + 1) // 2
    tail = room - head
    short = text[:head] + mark + (text[-tail:] if tail else "")
    while Text(short).cell_len > width and head > 1:  # wide characters
        head -= 1
        short = text[:head] + mark + (text[-tail:] if tail else "")
    return short


def fit_label(
    prefix: str, main: Text, detail: str, width: int, keep_detail: bool, ascii: bool, source: bool = False
) -> Text:
    """Assemble ``prefix + main + "  " + detail`` within ``width`` cells, never wrapping.

    With ``keep_detail`` (kernels: the launch config matters more than the name's tail) the
    main text is shortened first; otherwise the detail goes first, then the main text is cut.
    A ``source`` detail (a frame's source text) is shortened from the middle, its start and end
    both saying what the line does, or left out when fewer than :data:`MIN_DETAIL` cells are
    left for it; other details are cut at their end.
    """
    out = Text(prefix, DETAIL_STYLE)
    room = width - len(prefix)
    if detail and keep_detail:
        short = room - 2 - len(detail)
        if main.cell_len > short >= 20:
            main = truncate(main, short, ascii)
    elif detail and source:
        left = room - main.cell_len - 2
        detail = shorten_middle(detail, left, ascii) if left >= MIN_DETAIL else ""
    out.append_text(main)
    if detail:
        out.append("  ")
        out.append(detail, DETAIL_STYLE)
    return truncate(out, max(width, 1), ascii)
