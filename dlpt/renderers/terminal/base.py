"""Base class of the console views: format at print time, when width and encoding are known."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator

from rich.console import Console, ConsoleOptions, RenderableType
from rich.measure import Measurement, measure_renderables
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

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        """The width the view's content takes when laid out in ``options.max_width`` (what a
        report printed to a file is sized by: :mod:`dlpt.renderers.terminal.output`)."""
        fmt = dataclasses.replace(self.fmt, ascii=self.fmt.ascii or options.ascii_only)
        quick = self.content_width(fmt, options.max_width)
        if quick is not None:
            return Measurement(quick, quick)
        return measure_renderables(console, options, list(self.build(fmt, options.max_width)))

    def content_width(self, fmt: Fmt, width: int) -> int | None:
        """The view's content width within ``width``, where a view can tell it without laying
        itself out (large tables); None: measure what :meth:`build` yields."""
        return None

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        """Yield the renderables of this view."""
        raise NotImplementedError
