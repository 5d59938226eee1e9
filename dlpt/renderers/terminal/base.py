"""Base class of the console views: format at print time, when width and encoding are known."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator

from rich.console import Console, ConsoleOptions, RenderableType
from rich.text import Text

from dlpt.renderers.terminal.format import Fmt


class View:
    """A rich renderable built lazily: ``build`` receives a Fmt whose ``ascii`` is set when the
    console cannot encode UTF-8 (or ASCII was asked for) and the width it may use."""

    #: print a blank line before the view (when it prints anything at all)
    gap_before = True

    def __init__(self, fmt: Fmt) -> None:
        self.fmt = fmt

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[RenderableType]:
        yield from self.pieces(options)

    def pieces(self, options: ConsoleOptions) -> Iterator[RenderableType]:
        """What the view prints, piece by piece (``print_report`` prints them one at a time)."""
        fmt = dataclasses.replace(self.fmt, ascii=self.fmt.ascii or options.ascii_only)
        parts = list(self.build(fmt, options.max_width))
        if parts and self.gap_before:
            yield Text("")
        yield from parts

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        """Yield the renderables of this view."""
        raise NotImplementedError
