"""What every insight starts from: the session, its report tree (library frames folded, so that
work lands on the user's lines), the number of profiled steps, the mean step wall time and the
GPU's datasheet peaks. Built once per report and shared by the MFU line, the work tables and
every suggestion rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dlpt.insights.peaks import DevicePeaks, lookup
from dlpt.processors import METRICS, collapse_library
from dlpt.session import Session
from dlpt.tree import Node, build_tree

__all__ = ["Analysis", "analyze", "user_line", "in_backward", "int_of"]


def int_of(v: object) -> int:
    """``v`` if it is an int (not a bool), else 0: meta values of old or hand-edited sessions."""
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def user_line(node: Node | None) -> Node | None:
    """The nearest frame at or above ``node``: the user's line once library frames are folded."""
    while node is not None and node.kind != "frame":
        node = node.parent
    return node


def in_backward(node: Node) -> bool:
    """Whether ``node`` ran in a backward pass (beneath a ``<backward>`` phase)."""
    p: Node | None = node
    while p is not None:
        if p.kind == "phase" and p.name == "<backward>":
            return True
        p = p.parent
    return False


@dataclass
class Analysis:
    """The inputs shared by MFU, work tables and rules (see module docstring).

    ``steps`` is 0 when no steps were detected: values are then per run (``per`` is 1).
    ``peak_override`` is ``--peak-tflops``: it replaces the table's peak for every dtype.
    """

    session: Session
    root: Node
    steps: int
    device: DevicePeaks | None
    device_name: str
    device_index: str | None
    peak_override: float | None = None

    @property
    def meta(self) -> dict[str, Any]:
        return self.session.meta

    @property
    def per(self) -> int:
        return self.steps if self.steps > 0 else 1

    @property
    def gpu(self) -> bool:
        """Whether the run recorded GPU activity at all."""
        return METRICS["gpu"](self.root.inclusive) > 0

    @property
    def step_wall_ns(self) -> float:
        """Mean wall time of a profiled step (of the whole run without steps)."""
        walls = [int_of(w) for w in self.meta.get("step_wall_ns") or [] if int_of(w) > 0]
        if walls and self.steps > 0:
            return sum(walls) / len(walls)
        return float(int_of(self.meta.get("wall_ns"))) / self.per

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


def _device(meta: dict[str, Any]) -> tuple[str, str | None]:
    """(name, index) of the busiest GPU of the run: the one the numbers are about."""
    devices = [d for d in meta.get("devices") or [] if isinstance(d, dict)]
    raw = meta.get("gpu_busy_ns")
    busy: dict[str, Any] = raw if isinstance(raw, dict) else {}
    if not devices:
        return "", None
    best = max(devices, key=lambda d: int_of(busy.get(str(d.get("index")))))
    return str(best.get("name", "")), str(best.get("index"))


def analyze(session: Session, root: Node | None = None, peak_tflops: float | None = None) -> Analysis:
    """The analysis of ``session``; ``root`` is its report tree when the caller has one (library
    frames folded), else it is built here."""
    if root is None:
        root = collapse_library(build_tree(session))
    steps_meta = session.meta.get("steps")
    steps = int_of(steps_meta.get("profiled")) if isinstance(steps_meta, dict) else 0
    name, index = _device(session.meta)
    return Analysis(session, root, steps, lookup(name) if name else None, name, index, peak_tflops)
