"""Each source line's own cost on every rank, held as a matrix (lines x ranks, per metric key).

A line is matched across ranks as ``dlpt diff`` matches lines: file name (not directory: ranks
may run from different checkouts), function, line number. Its cost is its own: what it caused
itself, deeper lines at their own rows (:func:`dlpt.trees.processors.flatten_by_line` over the
rank's report tree). Values are per profiled step of each rank.

The matrix is what makes a report across a thousand ranks affordable: a rank sends its lines
already flattened (:mod:`dlpt.analysis.ranks.summary`), rank 0 places each rank's column with one
indexing operation (ranks running the same code send the same list of lines, which is matched
once), and the spread of every line (min, median, max, slowest rank) is computed for all lines
at once.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import torch

from dlpt.analysis.diff import function_key
from dlpt.model.metrics import Metric
from dlpt.model.session import Session
from dlpt.model.tree import Node
from dlpt.trees.processors import flatten_by_line
from dlpt.trees.spread import SpreadTable, has_moments

__all__ = [
    "LINE_KEYS",
    "LineKey",
    "RankLines",
    "LineTable",
    "rank_lines",
    "line_variances",
    "line_table",
    "one_thread",
    "row_median",
]

#: The metric keys a line carries across ranks: every metric of the cross-rank report is a sum
#: of these (dlpt.model.metrics.METRICS).
LINE_KEYS = (
    "gpu_ns",
    "copy_ns",
    "memset_ns",
    "comm_ns",
    "comm_wait_ns",
    "cpu_ns",
    "sync_ns",
    "api_ns",
    "host_ns",
    "host_cpu_ns",
    "host_gil_ns",
    "kernels",
    "calls",
    "copy_bytes",
    "mem_peak_bytes",
    "mem_alloc_bytes",
    "mem_allocs",
    "cpu_ns_var",
    "cpu_floor_ns",  # the CPU ops' floor: a busy host's stretch from a rank's own work
)

#: A metric key whose per-step variance a line carries beside its cost, and the key it travels
#: under: the line's per-step variance times its rank's steps (the sum over its nodes of
#: :mod:`dlpt.trees.spread`'s, divided by the steps once), so that the table's division by the
#: steps leaves the per-step variance. No Metric reads it: it is the noise a line's excess must
#: stand out of (:mod:`dlpt.analysis.ranks.stragglers`). CPU op time only: on a GPU job a line's
#: GPU time also holds its collectives' spinning, whose spread is the waiting, not noise.
VARIANCE_KEYS = {"cpu_ns": "cpu_ns_var"}

LineKey = tuple[str, str, int]  # (file name, function, line)
_INT64_MAX = torch.iinfo(torch.int64).max


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """torch's own ops on one thread while dlpt computes with them. The tables are small (a
    10,000 x 17 conversion takes 0.06 ms on one thread) and dlpt often runs beside a busy
    program, where torch's pool of threads waits on cores others hold: the same conversion
    took 20 ms with two threads on a loaded 2-core machine. torch's setting is the process's:
    restored at once after."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def row_median(v: torch.Tensor) -> torch.Tensor:
    """Each row's median, as :func:`statistics.median` takes it (the mean of the two middle
    values of an even count), by selection: linear in the row, where sorting is not."""
    n = v.shape[1]
    if n == 0:
        return torch.zeros(v.shape[0])
    low = v.kthvalue((n + 1) // 2, dim=1).values
    return low if n % 2 else (low + v.kthvalue(n // 2 + 1, dim=1).values) / 2


def _key(node: Node) -> LineKey:
    return (os.path.basename(node.file), function_key(node.name), node.line)


@dataclass
class RankLines:
    """One rank's lines: their labels and their own metrics (run totals), one row of
    ``LINE_KEYS`` per label. ``token``: equal for equal label lists (matched once)."""

    labels: list[Node]
    values: torch.Tensor  # [lines, len(columns)], int64
    token: object = None
    columns: torch.Tensor | None = None  # which LINE_KEYS values holds (None: all, in order)

    def column_indices(self) -> torch.Tensor:
        return self.columns if self.columns is not None else torch.arange(len(LINE_KEYS))


def _full_key(node: Node) -> tuple[str, str, int]:
    return (node.file, node.name, node.line)


def line_variances(session: Session, show_all: bool = False) -> dict[tuple[str, str, int], dict[str, int]]:
    """Each line's per-step variances of ``session`` (the keys of :data:`VARIANCE_KEYS`, times
    the steps), by its file, function and line; empty when the session saved no second moments."""
    if not has_moments(session):
        return {}
    steps = session.typed_meta.profiled_steps
    out: dict[tuple[str, str, int], dict[str, int]] = {}
    for row in flatten_by_line(SpreadTable(session, show_all).tree()):
        line = out.setdefault(_full_key(row.node), {})
        for key, var_key in VARIANCE_KEYS.items():
            if row.self.get(key):
                line[var_key] = line.get(var_key, 0) + row.self[key] // steps
    return out


def rank_lines(
    tree: Node, variances: Mapping[tuple[str, str, int], Mapping[str, int]] | None = None
) -> RankLines:
    """The lines of one rank's report tree; ``variances``: its lines' per-step variances
    (:func:`line_variances`; none: the lines carry none, their costs are taken as exact)."""
    rows = flatten_by_line(tree)
    labels = [r.node for r in rows]
    var = variances or {}
    # A line's values add up its nodes', each below 2**63 (dlpt.model.shape): a sum may pass
    # what an int64 holds, and saturates there (a variance that large reads as too noisy).
    data = []
    for r in rows:
        more = var.get(_full_key(r.node))
        own = {**r.self, **more} if more else r.self
        data.append([min(own.get(k, 0), _INT64_MAX) for k in LINE_KEYS])
    values = (
        torch.tensor(data, dtype=torch.int64) if data else torch.zeros((0, len(LINE_KEYS)), dtype=torch.int64)
    )
    return RankLines(labels, values)


class LineTable:
    """Every line of any rank (rows) on every rank (columns, in ``order``), per step."""

    def __init__(
        self,
        labels: list[Node],
        order: list[int],
        keys: Sequence[str],
        data: torch.Tensor,
        steps: torch.Tensor | None = None,
    ) -> None:
        self.labels, self.order, self.keys = labels, order, list(keys)
        self.column = {r: i for i, r in enumerate(order)}
        # [ranks, lines, len(keys)], float32, per step: each rank's block contiguous, as it is
        # filled; ``keys``: the LINE_KEYS some line has on some rank (the others are all 0).
        self.data = data
        # [ranks]: the steps each rank's figures are the mean of (None: not known).
        self.steps = steps
        self._key_used: dict[str, int] | None = None  # has(): 1 for each key some line has

    def __len__(self) -> int:
        return len(self.labels)

    def values(self, metric: Metric) -> torch.Tensor:
        """[lines, ranks]: ``metric`` of each line on each rank, per step."""
        shape = (self.data.shape[1], self.data.shape[0])
        cols = {k: self.data[:, :, i].T for i, k in enumerate(self.keys)}
        out: object = metric.fn(_Columns(cols))  # type: ignore[arg-type]  # every metric is a sum of keys
        if not isinstance(out, torch.Tensor) or out.dim() == 0:
            return torch.zeros(shape)
        return out.contiguous()

    def mean_variance(self, key: str) -> torch.Tensor:
        """[lines, ranks]: the variance of each line's per-step mean of metric key ``key`` (one of
        :data:`VARIANCE_KEYS`), from its per-step spread over the rank's steps; 0 where none was
        recorded (the figure is then taken as exact)."""
        shape = (self.data.shape[1], self.data.shape[0])
        var_key = VARIANCE_KEYS[key]
        if var_key not in self.keys or self.steps is None:
            return torch.zeros(shape, dtype=torch.float64)
        per_step = self.data[:, :, self.keys.index(var_key)].T.to(torch.float64)
        return per_step / self.steps.clamp(min=1).to(torch.float64)

    def has(self, metric: Metric) -> bool:
        """Whether any line has any of ``metric`` on any rank: the metric of 1 for each key some
        line has (every value is >= 0 and a metric adds keys up, so it is > 0 exactly when some
        line's is), without computing it line by line."""
        if not len(self):
            return False
        if self._key_used is None:
            used = (self.data > 0).flatten(0, 1).any(dim=0).tolist()
            self._key_used = {k: int(u) for k, u in zip(self.keys, used, strict=True)}
        return bool(metric.fn(self._key_used) > 0)

    def row(self, i: int, metric: Metric, values: torch.Tensor | None = None) -> dict[int, float]:
        """Line ``i``'s value on each rank."""
        v = (values if values is not None else self.values(metric))[i].tolist()
        return dict(zip(self.order, v, strict=True))


class _Columns(Mapping[str, torch.Tensor]):
    """The table's columns by metric key, for a Metric's ``m.get(key, 0)``: a key no line has
    is a 0 that broadcasts (no lines x ranks of zeros made for it)."""

    _ZERO = torch.zeros(())

    def __init__(self, cols: dict[str, torch.Tensor]) -> None:
        self.cols = cols

    def __getitem__(self, k: str) -> torch.Tensor:
        return self.cols[k]

    def get(self, k: str, default: object = None) -> torch.Tensor:
        return self.cols.get(k, self._ZERO)

    def __iter__(self) -> Iterator[str]:
        return iter(self.cols)

    def __len__(self) -> int:
        return len(self.cols)


def line_table(per_rank: Mapping[int, RankLines], steps: Mapping[int, int]) -> LineTable:
    """The ranks' lines in one table (``steps``: each rank's profiled steps, to divide by)."""
    order = sorted(per_rank)
    index: dict[LineKey, int] = {}
    labels: list[Node] = []
    placed: dict[object, torch.Tensor] = {}  # a list of lines -> its rows in the table
    rows_of: dict[int, torch.Tensor] = {}
    for r in order:
        rl = per_rank[r]
        token = rl.token if rl.token is not None else id(rl.labels)
        if token not in placed:
            idx = []
            for n in rl.labels:
                k = _key(n)
                i = index.get(k)
                if i is None:
                    i = index[k] = len(labels)
                    labels.append(n)
                idx.append(i)
            placed[token] = torch.tensor(idx, dtype=torch.int64)
        rows_of[r] = placed[token]
    used = torch.zeros(len(LINE_KEYS), dtype=torch.bool)
    for r in order:
        if len(per_rank[r].values):
            cols = per_rank[r].column_indices()
            used[cols] = used[cols] | (per_rank[r].values != 0).any(dim=0)
    keep = torch.nonzero(used).flatten()
    keys = [LINE_KEYS[i] for i in keep.tolist()]
    data = torch.zeros((len(order), len(labels), len(keys)), dtype=torch.float32)
    picks: dict[tuple[int, ...], tuple[torch.Tensor, bool]] = {}  # a rank's columns -> which to take
    for col, r in enumerate(order):
        v = per_rank[r].values
        if len(v) and keys:
            cols = per_rank[r].column_indices()
            signature = tuple(cols.tolist())
            if signature not in picks:
                # This rank's column of each kept key (-1: it has none of that key): once per
                # distinct set of columns (ranks of one job mostly share one).
                at = torch.full((len(LINE_KEYS),), -1, dtype=torch.int64)
                at[cols] = torch.arange(len(cols))
                sel = at[keep]
                picks[signature] = (sel, bool((sel >= 0).all()))
            sel, whole = picks[signature]
            if whole:
                rows = v[:, sel].to(torch.float32)
            else:
                rows = torch.zeros((len(v), len(keys)), dtype=torch.float32)
                has = sel >= 0
                rows[:, has] = v[:, sel[has]].to(torch.float32)
            # index_add: a line that occurs twice in one rank's list (two functions of one
            # name) adds up, as flatten_by_line's rows would.
            data[col].index_add_(0, rows_of[r], rows, alpha=1.0 / max(1, steps.get(r, 1)))
    counted = torch.tensor([steps.get(r, 1) for r in order], dtype=torch.float64)
    return LineTable(labels, order, keys, data, counted)
