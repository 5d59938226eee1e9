"""PC samples in the tree views (``--pc-sampling``): rows under a kernel node with its sampled
source lines and top stall reasons (``x.pc``), and under a model line the sampled share of each
fused kernel split onto it (``x.pc_fused``; :mod:`dlpt.capture.pc_annotate`). The rows carry no
values: they are notes on the node above them, drawn as its first children."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping

from rich.text import Text

from dlpt.model.tree import Node
from dlpt.renderers.terminal.format import LOCATION_STYLE, Fmt
from dlpt.renderers.terminal.grid import Chain, GridRow

__all__ = ["pc_notes", "pc_rows", "stall_text"]

SAMPLED_STYLE = "magenta"


def stall_text(stalls: Mapping[str, int], samples: int) -> str:
    """ "long_scoreboard 41%, math_pipe_throttle 20%" (the most frequent first)."""
    ranked = sorted(stalls.items(), key=lambda kv: -kv[1])
    return ", ".join(f"{k} {100 * v / max(1, samples):.0f}%" for k, v in ranked if v)


def pc_notes(node: Node, fmt: Fmt) -> list[tuple[Text, str]]:
    """(main text, detail) of each note row of ``node``; none without PC samples."""
    x = node.typed_extras
    out: list[tuple[Text, str]] = []
    pc = x.pc if node.kind == "kernel" else None
    if pc is not None and pc.samples:
        total = pc.samples
        head = Text(f"PC samples {fmt.count(total, per_step=False)}", SAMPLED_STYLE)
        detail = stall_text(pc.stalls or {}, total)
        lines = [row for row in pc.lines or [] if row[0]]
        if not lines:  # a library kernel: its totals and stalls are all there is
            detail += "; no line info"
        if pc.unassigned:
            detail += f"; {fmt.count(pc.unassigned, per_step=False)} on lines of no model line (unassigned)"
        out.append((head, fmt.clean(detail)))
        for file, line, n, stalls in lines:
            main = Text()
            main.append(fmt.clean(f"{os.path.basename(file)}:{line}"), LOCATION_STYLE)
            main.append(f" {100 * n / max(1, total):.0f}%", SAMPLED_STYLE)
            code = fmt.source(file, line)
            detail = stall_text(stalls or {}, n) + (f"  {code}" if code else "")
            out.append((main, fmt.clean(detail)))
    fused = x.pc_fused if node.kind == "frame" else None
    if fused is not None:
        for f in fused:
            main = Text(f"≈{100 * float(f.share or 0):.0f}% of {fmt.clean(f.kernel)}", SAMPLED_STYLE)
            n, of, left = f.samples, f.of or 0, f.unassigned or 0
            detail = (
                f"sampled estimate: {fmt.count(n, per_step=False)} of {fmt.count(of, per_step=False)} "
                f"samples on its model lines; {fmt.count(left, per_step=False)} unassigned"
            )
            out.append((main, detail))
    return out


def pc_rows(node: Node, fmt: Fmt, chain: Chain | None, ncells: int, labels: bool = True) -> Iterator[GridRow]:
    """The note rows under ``node`` (drawn as its first children: the last is the last child
    only when the node has no children of its own)."""
    notes = pc_notes(node, fmt)
    if not notes:
        return
    depth = 1 if chain is None else chain[2] + 1
    blank = [""] * ncells
    for i, (main, detail) in enumerate(notes):
        last = i == len(notes) - 1 and not node.children
        yield GridRow(blank, main if labels else Text(), detail if labels else "", chain=(last, chain, depth))
