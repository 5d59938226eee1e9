"""Number formatting, styles and node labels shared by all console renderers.

Values are scaled per profiled step here (one place), so every view agrees on what it shows.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rich import box
from rich.text import Text

from dlpt.compile.resume import display_name
from dlpt.processors import Metric
from dlpt.renderers.safe_text import escape_control
from dlpt.renderers.units import BYTES, COUNT_DECIMALS, COUNT_GROUP, TIME
from dlpt.tree import Node

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
class Fmt:
    """How to print: ``steps`` > 0 divides totals by the number of profiled steps; ``ascii``
    avoids non-ASCII characters (``us`` instead of ``µs``); ``sources`` is the session's saved
    source text (``meta.sources``: file -> line number as a string -> text), the only place
    source text comes from (a report never opens the files a session names)."""

    steps: int = 0
    ascii: bool = False
    sources: Mapping[str, Mapping[str, str]] = field(default_factory=dict, compare=False)

    def scale(self, v: float) -> float:
        return v / self.steps if self.steps > 0 else v

    def time(self, ns: float, per_step: bool = True) -> str:
        """Nanoseconds as ``1.23s``, ``12.35ms``, ``123.4µs`` or ``850ns``."""
        return TIME.format(self.scale(ns) if per_step else ns, self.ascii)

    def count(self, n: float, per_step: bool = True) -> str:
        """An event count; per step it may be fractional (one decimal)."""
        v = self.scale(n) if per_step else n
        if v == int(v):
            return f"{int(v):{COUNT_GROUP}}"
        return f"{v:{COUNT_GROUP}.{COUNT_DECIMALS}f}"

    def bytes(self, b: float, per_step: bool = True) -> str:
        """Bytes in binary units: ``512 B``, ``12.0 KiB``, ``3.50 GiB``."""
        return BYTES.format(self.scale(b) if per_step else b)

    def value(self, metric: Metric, v: float) -> str:
        """``v`` formatted in ``metric``'s unit."""
        if metric.unit == "ns":
            return self.time(v)
        if metric.unit == "bytes":
            return self.bytes(v)
        return self.count(v)

    @staticmethod
    def pct(part: float, total: float) -> str:
        return f"{100.0 * part / total:.1f}%" if total > 0 else "-"

    def clean(self, s: str) -> str:
        """Make ``s``, a string from the session, safe to print: control characters escaped
        (:mod:`.safe_text`), and only ASCII on an ASCII console."""
        s = escape_control(s)
        return s.encode("ascii", "replace").decode("ascii") if self.ascii else s

    def source(self, file: str, line: int) -> str:
        """The saved text of ``file:line``, stripped and printable, or "" when the session has
        none (``--no-source``, a version 1 session, a library file)."""
        text = self.sources.get(file, {}).get(str(line), "")
        # Tabs would change the printed width after fitting; other controls are escaped.
        return self.clean(text.strip().replace("\t", " ")) if text else ""


def _dims(v: object) -> str:
    """``[128, 4, 1]`` -> ``128x4``: trailing 1s say nothing."""
    if not isinstance(v, (list, tuple)):
        return str(v)
    dims = [str(d) for d in v]
    while len(dims) > 1 and dims[-1] == "1":
        dims.pop()
    return "x".join(dims)


def kernel_config(x: Mapping[str, Any]) -> str:
    """Compact launch configuration in CUDA's own notation: ``<<<(66,2),384>>> regs 168 smem
    227K`` (grid, block; trailing 1s dropped)."""
    parts = []
    if "grid" in x or "block" in x:
        g, b = _dims(x.get("grid", "?")), _dims(x.get("block", "?"))
        g = f"({g.replace('x', ',')})" if "x" in g else g
        b = f"({b.replace('x', ',')})" if "x" in b else b
        parts.append(f"<<<{g},{b}>>>")
    if x.get("regs"):
        parts.append(f"regs {x['regs']}")
    smem = sum(v for v in (x.get("smem_static"), x.get("smem_dynamic")) if isinstance(v, int) and v > 0)
    if smem:
        parts.append(f"smem {smem / 1024:.0f}K" if smem >= 1024 else f"smem {smem}B")
    return " ".join(parts)


def collective_detail(x: Mapping[str, Any], m: Mapping[str, int], fmt: Fmt) -> str:
    """What a collective op moved (docs/session-format.md, collective extras): ``allreduce
    BFloat16 25.0 MiB/call group default_pg``; bytes per call from its inclusive metrics."""
    parts = [str(x.get(k)) for k in ("collective", "dtype") if isinstance(x.get(k), str) and x.get(k)]
    calls = m.get("comm_calls", 0)
    size = max(m.get("comm_in_bytes", 0), m.get("comm_out_bytes", 0))
    if calls and size:
        parts.append(f"{fmt.bytes(size / calls, per_step=False)}/call")
    group = x.get("pg_desc") or x.get("pg_name")
    if isinstance(group, str) and group:
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
        marker = node.extras.get("marker")
        if marker:  # torch.compile events at this line (graph break, recompilations)
            main.append(f" {'!!' if fmt.ascii else '⚠'} {marker}", "bold red")
        return main, fmt.source(node.file, node.line)
    if kind == "root":
        return Text("total", style), ""
    if kind == "scope":
        return Text(f'scope "{fmt.clean(node.name)}"', style), ""
    if kind == "kernel":
        # Inductor's fused kernels: the ATen ops they were made from, before the launch config.
        fuses = node.extras.get("fuses")
        detail = kernel_config(node.extras)
        if isinstance(fuses, list) and fuses:
            detail = f"fuses {'+'.join(str(f) for f in fuses)}  {detail}".rstrip()
        return Text(fmt.clean(node.name), style), fmt.clean(detail)
    if kind == "memcpy":
        detail = " ".join(
            p
            for p in (
                str(node.extras.get("host_mem") or ""),
                fmt.bytes(m.get("copy_bytes", 0)) if m.get("copy_bytes") else "",
            )
            if p
        )
        return Text(fmt.clean(node.name), style), fmt.clean(detail)
    if kind == "op" and isinstance(node.extras.get("collective"), str):
        return Text(fmt.clean(node.name), style), fmt.clean(collective_detail(node.extras, m, fmt))
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


def fit_label(prefix: str, main: Text, detail: str, width: int, keep_detail: bool, ascii: bool) -> Text:
    """Assemble ``prefix + main + "  " + detail`` within ``width`` cells, never wrapping.

    With ``keep_detail`` (kernels: the launch config matters more than the name's tail) the
    main text is shortened first; otherwise the detail goes first, then the main text is cut.
    """
    out = Text(prefix, DETAIL_STYLE)
    room = width - len(prefix)
    if detail and keep_detail:
        short = room - 2 - len(detail)
        if main.cell_len > short >= 20:
            main = truncate(main, short, ascii)
    out.append_text(main)
    if detail:
        out.append("  ")
        out.append(detail, DETAIL_STYLE)
    return truncate(out, max(width, 1), ascii)
