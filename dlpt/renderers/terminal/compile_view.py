"""The torch.compile section: compile time, graph breaks at their lines, recompilations."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from rich.console import RenderableType
from rich.text import Text

from dlpt.renderers.terminal.base import View
from dlpt.renderers.terminal.format import Fmt
from dlpt.renderers.terminal.tables import Row, add_rows, make_table
from dlpt.views.run import CompileSummary, Located


def _where(r: Located) -> str:
    return f"{os.path.basename(r.file)}:{r.line} {r.function}"


class CompileView(View):
    """Shown when the session holds compile events: the report model's summary line, then the
    graph breaks and the recompilations at their lines."""

    def __init__(self, summary: CompileSummary, fmt: Fmt) -> None:
        super().__init__(fmt)
        self.summary = summary

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        s = self.summary
        yield Text.assemble(("torch.compile", "bold"), (f"  {fmt.clean(s.text)}", "dim"))
        if s.breaks:
            yield self._located("Graph breaks", "reason", s.breaks, fmt, width)
        if s.recompiles:
            yield self._located("Recompilations (the guard that failed)", "guard", s.recompiles, fmt, width)

    @staticmethod
    def _located(title: str, what: str, rows: Sequence[Located], fmt: Fmt, width: int) -> RenderableType:
        """A table of events at source locations: where, and the reason/guard text."""
        t = make_table(title, fmt)
        t.add_column("where", no_wrap=True)
        t.add_column(what, no_wrap=True, overflow="ellipsis")
        add_rows(t, [Row((Text(fmt.clean(_where(r))),), fmt.clean(r.reason)) for r in rows], width, fmt.ascii)
        return t
