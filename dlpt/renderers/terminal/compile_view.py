"""The torch.compile section: compile time, graph breaks at their lines, recompilations."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from rich.console import RenderableType
from rich.text import Text

from dlpt.model.compile_events import graph_breaks, recompilations
from dlpt.renderers.terminal.base import View
from dlpt.renderers.terminal.format import Fmt
from dlpt.renderers.terminal.tables import Row, add_rows, make_table


def _where(file: str, line: int, function: str) -> str:
    return f"{os.path.basename(file)}:{line} {function}"


class CompileView(View):
    """Shown when the session holds compile events (``meta.compile``)."""

    def __init__(self, events: list[dict[str, Any]], fmt: Fmt) -> None:
        super().__init__(fmt)
        self.events = events

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        if not self.events:
            return
        total = sum(ev.get("compile_s", 0.0) for ev in self.events)
        inductor = sum(ev.get("inductor_s", 0.0) for ev in self.events)
        breaks, recompiles = graph_breaks(self.events), recompilations(self.events)
        yield Text.assemble(
            ("torch.compile", "bold"),
            (
                f"  {len(self.events)} compilations, {total:.2f} s compiling (Inductor {inductor:.2f} s), "
                f"{len(breaks)} graph breaks, {len(recompiles)} recompilations",
                "dim",
            ),
        )
        if breaks:
            yield self._located("Graph breaks", "reason", breaks, fmt, width)
        if recompiles:
            yield self._located("Recompilations (the guard that failed)", "guard", recompiles, fmt, width)

    @staticmethod
    def _located(title: str, what: str, rows: list[dict[str, Any]], fmt: Fmt, width: int) -> RenderableType:
        """A table of events at source locations: where, and the reason/guard text."""
        t = make_table(title, fmt)
        t.add_column("where", no_wrap=True)
        t.add_column(what, no_wrap=True, overflow="ellipsis")
        add_rows(
            t,
            [
                Row((Text(fmt.clean(_where(r["file"], r["line"], r["function"]))),), fmt.clean(r["reason"]))
                for r in rows
            ],
            width,
            fmt.ascii,
        )
        return t
