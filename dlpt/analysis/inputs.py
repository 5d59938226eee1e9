"""What every insight starts from: the session, its report tree (library frames folded, so that
work lands on the user's lines), the number of profiled steps, the mean step wall time and the
GPU's datasheet peaks. Built once per report and shared by the MFU line, the work tables and
every suggestion rule.

The tree is the one every other output shows: the report passes its own whole folded tree
(:func:`dlpt.trees.folding.report_tree`'s, from the same :class:`~dlpt.trees.folding.FoldedTable`), so a
line's work and time here are the line's in the tree, flat and HTML views. Without one, it is
folded here the same way. It is built only when something walks it: the header's GPU idle line
needs only the session's totals, and saved suggestions need no tree at all (a report of a
million-node session does not build the whole tree for them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from dlpt.analysis.peaks import DevicePeaks, lookup
from dlpt.model.calibration import calibrated_untraced
from dlpt.model.meta import Meta, StepTime, step_time, wall_ns
from dlpt.model.metrics import METRICS
from dlpt.model.session import Session
from dlpt.model.source_files import file_kind
from dlpt.model.tree import Node
from dlpt.trees.folding import FoldedTable, session_totals

__all__ = ["Analysis", "analyze", "user_line", "in_backward"]


def user_line(node: Node | None) -> Node | None:
    """The line a suggestion is placed on: the nearest frame at or above ``node`` in the user's
    own code (a script, a notebook cell), not an installed package's frame the report keeps as
    model code (``modeling_layers.py GradientCheckpointingLayer.__call__``: issue 33); the
    nearest frame of any file when no user frame is above it."""
    nearest: Node | None = None
    while node is not None:
        if node.kind == "frame":
            if file_kind(node.file) == "user":
                return node
            nearest = nearest or node
        node = node.parent
    return nearest


def in_backward(node: Node) -> bool:
    """Whether ``node`` ran in a backward pass (beneath a ``<backward>`` phase)."""
    p: Node | None = node
    while p is not None:
        if p.kind == "phase" and p.name == "<backward>":
            return True
        p = p.parent
    return False


class Analysis:
    """The inputs shared by MFU, work tables and rules (see module docstring).

    ``root`` is the whole folded tree, built by ``tree`` on first use; ``totals`` the session's
    summed metrics (its root's inclusive ones). ``steps`` is 0 when no steps were detected:
    values are then per run (``per`` is 1). ``peak_override`` is ``--peak-tflops``: it replaces
    the table's peak for every dtype.
    """

    def __init__(
        self,
        session: Session,
        tree: Callable[[], Node],
        totals: Mapping[str, int],
        steps: int,
        device: DevicePeaks | None,
        device_name: str,
        device_index: str | None,
        peak_override: float | None = None,
    ) -> None:
        self.session = session
        self._tree = tree
        self._root: Node | None = None
        self._lines: list[tuple[Node, Node | None]] | None = None
        self._recorded: dict[str, set[str]] | None = None
        self.totals = totals
        self.steps = steps
        self.device = device
        self.device_name = device_name
        self.device_index = device_index
        self.peak_override = peak_override

    @property
    def root(self) -> Node:
        """The whole folded tree (built on first use)."""
        if self._root is None:
            self._root = self._tree()
        return self._root

    @property
    def recorded(self) -> Mapping[str, set[str]]:
        """The names recorded per node kind (``{"op": {"aten::mm", ...}, "sync": {...}}``), from
        one pass over the node table on first use, without the tree: a rule whose subject was
        never recorded (no copy, no sync, no softmax) says so without building the tree. Folding
        merges and drops frames only, so every other node of the table is in the tree."""
        if self._recorded is None:
            out: dict[str, set[str]] = {}
            for n in self.session.nodes:
                kind = n["kind"]
                names = out.get(kind)
                if names is None:
                    names = out[kind] = set()
                names.add(n["name"])
            self._recorded = out
        return self._recorded

    @property
    def lines(self) -> list[tuple[Node, Node | None]]:
        """Every node of the tree in pre-order (as :func:`dlpt.model.tree.walk` visits them), each with
        its :func:`user_line`: listed in one pass on first use, so that the rules' walks over a
        million-node tree cost one walk, not one each."""
        if self._lines is None:
            out: list[tuple[Node, Node | None]] = []
            stack: list[tuple[Node, Node | None]] = [(self.root, None)]
            while stack:
                node, line = stack.pop()
                if node.kind == "frame":
                    line = node
                out.append((node, line))
                stack.extend((c, line) for c in reversed(node.children))
            self._lines = out
        return self._lines

    @property
    def meta(self) -> Meta:
        """The session's meta, typed (read when asked: what dlpt adds at stop is in it)."""
        return self.session.typed_meta

    @property
    def per(self) -> int:
        return self.steps if self.steps > 0 else 1

    @property
    def gpu(self) -> bool:
        """Whether the run recorded GPU activity at all."""
        return METRICS["gpu"](self.totals) > 0

    @property
    def traced_step(self) -> StepTime | None:
        """Wall times of the counted (traced) steps; None without steps."""
        return step_time(self.meta, "traced") if self.steps > 0 else None

    @property
    def untraced_step(self) -> StepTime | None:
        """Wall times of the steps run untraced in the same run (dlpt's cost not in them), when
        the calibration is measured well enough for derived figures to use them
        (dlpt.model.calibration); None otherwise: the figures are as traced."""
        return calibrated_untraced(self.meta) if self.steps > 0 else None

    @property
    def traced_step_ns(self) -> float:
        """A traced step's wall time (its median; the whole run's wall without steps)."""
        traced = self.traced_step
        if traced is not None:
            return traced.median_ns
        return float(wall_ns(self.meta)) / self.per

    @property
    def step_wall_ns(self) -> float:
        """The step's wall time every derived figure uses: the untraced steps' median when dlpt
        measured some (the program's own step time), else the traced one's."""
        untraced = self.untraced_step
        return untraced.median_ns if untraced is not None else self.traced_step_ns

    def peak_tflops(self, key: str | None) -> float | None:
        """Dense TFLOP/s for a dtype key: ``--peak-tflops`` when given, else the table's."""
        if self.peak_override:
            return self.peak_override
        return self.device.peak(key) if self.device is not None else None

    def peak_source(self, key: str | None) -> str:
        """Where :meth:`peak_tflops` came from, for the text beside the number."""
        if self.peak_override:
            return "--peak-tflops"
        if self.device is None:
            return "no datasheet peak"
        return f"{key} dense, {self.device.name} datasheet"


def _device(meta: Meta) -> tuple[str, str | None]:
    """(name, index) of the busiest GPU of the run: the one the numbers are about."""
    devices, busy = meta.devices or [], meta.gpu_busy_ns or {}
    if not devices:
        return "", None
    best = max(devices, key=lambda d: busy.get(str(d.index), 0))
    return best.name or "", str(best.index)


def analyze(
    session: Session,
    root: Node | Callable[[], Node] | None = None,
    peak_tflops: float | None = None,
    totals: Mapping[str, int] | None = None,
) -> Analysis:
    """The analysis of ``session``. ``root`` is the caller's whole report tree (library frames
    folded as the report folds them), or a function that builds it when first needed (then
    ``totals``, the session's summed metrics, spares building it for them); None: folded here
    by :class:`~dlpt.trees.folding.FoldedTable` with the report's default folding."""
    tree: Callable[[], Node]
    if root is None:
        # Folded only if a rule walks the tree (most sessions answer from their totals).
        tree, totals = (lambda: FoldedTable(session, show_all=False).tree()), session_totals(session)
    elif isinstance(root, Node):
        node = root
        tree, totals = (lambda: node), node.inclusive
    else:
        tree = root
    steps = session.typed_meta.profiled_steps
    name, index = _device(session.typed_meta)
    a = Analysis(session, tree, totals or {}, steps, lookup(name) if name else None, name, index, peak_tflops)
    if totals is None:  # a tree builder without totals: the tree's root holds them
        a.totals = a.root.inclusive
    return a
