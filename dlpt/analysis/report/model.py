"""The report model's dataclasses (see :mod:`dlpt.analysis.report`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from dlpt.analysis.finding import Finding
from dlpt.analysis.inputs import Analysis
from dlpt.model.tree import Node

__all__ = ["Level", "Fact", "Located", "CompileSummary", "Suggestion", "Report"]

#: How much a fact matters: ``info`` plain, ``dim`` background (versions, dlpt's own cost),
#: ``note`` worth a look (FLOPs not counted), ``bad`` a measurement that limits the program (a
#: mostly idle GPU, a launch-bound step), ``warn`` something that limits trust in the numbers or
#: says what is missing, ``error`` data was lost.
Level = Literal["info", "dim", "note", "bad", "warn", "error"]

#: Levels that are warnings: the HTML page lists these facts in its warnings box.
WARNING_LEVELS: frozenset[str] = frozenset({"warn", "error"})


@dataclass(frozen=True)
class Fact:
    """One statement of a report.

    ``kind`` says what it is about (``run``, ``steps``, ``step_wall``, ``totals``, ``capture``,
    ``ops``, ``device``, ``measure``, ``communication``, ``graphs``, ``records``, ``compile``,
    ``threads``, ``cost``, ``versions``); ``text`` is the sentence both reports print; ``label``
    and ``value`` split it for a key/value layout where it has one (``label`` "" otherwise);
    ``share`` is a 0..1 proportion worth drawing (a GPU's busy share)."""

    kind: str
    text: str
    level: Level = "info"
    label: str = ""
    value: str = ""
    share: float | None = None

    @property
    def warning(self) -> bool:
        return self.level in WARNING_LEVELS


@dataclass(frozen=True)
class Located:
    """A torch.compile event at a source line: where, and its reason (or failed guard)."""

    file: str
    line: int
    function: str
    reason: str


@dataclass(frozen=True)
class CompileSummary:
    """The session's torch.compile events: ``text`` is the one-line summary both reports print."""

    text: str
    breaks: tuple[Located, ...]
    recompiles: tuple[Located, ...]


@dataclass(frozen=True)
class Suggestion:
    """A finding with its wording: ``gain`` (``-1.20ms/step``, ``-9.10s once``) and ``where``
    (``train.py:40 train_step``, or ``the whole step``)."""

    finding: Finding
    gain: str
    where: str


@dataclass(frozen=True)
class Report:
    """What a report says (see :mod:`dlpt.analysis.report`). ``header`` is in the terminal's
    order; ``totals`` are the per-step (or per-run) totals as label/value facts, which the
    ``totals`` fact of ``header`` says in one line; ``steps`` is what per-step values are divided
    by (0: values per run); ``analysis`` is what the facts were computed from, for the views that
    show more of it (work tables); ``outside`` the folded tree of the work outside counted steps
    (None: there was none); ``headlines`` the short line of each flag that asked for something
    (``--flops``, ``--memory``, ``--pc-sampling``: :mod:`.headlines`), which the compact header and
    the HTML page lead with."""

    title: str
    rank: str
    steps: int
    header: tuple[Fact, ...]
    totals_label: str
    totals: tuple[Fact, ...]
    compile: CompileSummary | None
    suggestions: tuple[Suggestion, ...]
    analysis: Analysis
    outside: Node | None = None
    headlines: tuple[Fact, ...] = ()

    def facts(self, *kinds: str) -> list[Fact]:
        """The header's facts of these kinds, in order."""
        return [f for f in self.header if f.kind in kinds]

    @property
    def warnings(self) -> list[Fact]:
        return [f for f in self.header if f.warning]


def joined(parts: Iterable[str], sep: str) -> str:
    return sep.join(p for p in parts if p)
