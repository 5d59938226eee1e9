"""The Suggestions section of the terminal report: findings ranked by estimated gain, each with
the line, the evidence, what to do and the basis of the estimate (worded by
:mod:`dlpt.analysis.report.suggestions`).

Everything here that comes from the session (a saved suggestion's text and file: any string, in a
loaded file) is made printable by :meth:`Fmt.clean` (control characters escaped,
:mod:`dlpt.model.safe_text`) and reaches rich only inside a ``Text``, never as markup.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.console import RenderableType
from rich.padding import Padding
from rich.text import Text

from dlpt.renderers.terminal.base import View
from dlpt.renderers.terminal.format import LOCATION_STYLE, Fmt
from dlpt.views.run import Suggestion

__all__ = ["SuggestionsView"]


def _plain(fmt: Fmt, text: str) -> str:
    """Saved finding text on this console: its units in ASCII when the console is (``us``), as
    the rest of the report prints them."""
    return fmt.clean(text.replace("µs", "us") if fmt.ascii else text)


class SuggestionsView(View):
    """The Suggestions section. ``limit`` shows the first ones only and says how many more
    ``--view suggestions`` lists."""

    def __init__(self, suggestions: Sequence[Suggestion], fmt: Fmt, limit: int | None = None) -> None:
        super().__init__(fmt)
        self.suggestions, self.limit = list(suggestions), limit

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        if not self.suggestions:
            return
        shown = self.suggestions[: self.limit] if self.limit else self.suggestions
        yield Text.assemble(
            ("Suggestions", "bold"),
            ("  ranked by estimated gain, each from this run's measurements (basis given)", "dim"),
        )
        arrow = "->" if fmt.ascii else "→"
        for i, s in enumerate(shown, 1):
            f = s.finding
            head = Text(f"{i:>2}. ")
            head.append(fmt.clean(s.gain), "bold green")
            head.append("  ")
            head.append(_plain(fmt, s.where), LOCATION_STYLE)
            yield head
            body = Text(_plain(fmt, f.title), "bold")
            body.append(f"\n{_plain(fmt, f.evidence)}")
            body.append(f"\n{arrow} {_plain(fmt, f.action)}", "green")
            body.append(f"\nbasis: {_plain(fmt, f.basis)}", "dim")
            yield Padding(body, (0, 0, 0, 8))
        rest = len(self.suggestions) - len(shown)
        if rest > 0:
            yield Text(f"    ... {rest} more (--view suggestions lists them all)", "dim")
