"""The summary tables' rows: GPU kernels by name, copies by direction and host memory kind (and
memsets), CUDA API functions. Computed once per run by :mod:`dlpt.views.run`; the terminal's
tables (:mod:`dlpt.renderers.terminal.summary`) only format them.

They read the session's recorded nodes rather than the tree: merging in the tree keeps the
extras of the first node only, while copies must be told apart by host memory kind and kernels
need their true min/max.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from dlpt.model.kernel_names import kernel_config
from dlpt.model.meta import Extras, Meta

__all__ = ["Aggregate", "KernelRow", "CopyRow", "ApiRow", "kernel_rows", "copy_rows", "api_rows"]


@dataclass
class Aggregate:
    """Calls summed: their count, total time and bytes, shortest and longest call."""

    count: int = 0
    total: int = 0
    bytes: int = 0
    min: int | None = None
    max: int = 0

    def add(self, count: int, total: int, nbytes: int, mn: int | None, mx: int) -> None:
        self.count += count
        self.total += total
        self.bytes += nbytes
        if mn is not None and count:
            self.min = mn if self.min is None else min(self.min, mn)
        self.max = max(self.max, mx)


@dataclass
class KernelRow(Aggregate):
    """One kernel name; ``config`` is the launch configuration of the first launch seen."""

    name: str = ""
    config: str = ""


@dataclass
class CopyRow(Aggregate):
    """One copy direction and host memory kind (``direction`` "memset": the memsets)."""

    direction: str = ""
    host_mem: str = ""


@dataclass(frozen=True)
class ApiRow:
    """One CUDA API function of ``meta.api`` (host time)."""

    name: str
    calls: int
    total: int
    min: int
    max: int


def kernel_rows(
    kernels: Iterable[Mapping[str, Any]], held: Callable[[int], Extras | None] | None = None
) -> list[KernelRow]:
    """Kernels by name, the most GPU time first (ties by name). ``held``: a node's extras typed
    by its id, None where not at hand (a loaded session's, :meth:`Session.held_extras`)."""
    rows: dict[str, KernelRow] = {}
    for n in kernels:
        if n["kind"] != "kernel":
            continue
        m = n["m"]
        row = rows.get(n["name"])
        if row is None:  # the first launch config seen stands for the name
            x = held(n["id"]) if held is not None else None
            x = Extras.of(n.get("x", {})) if x is None else x
            row = rows[n["name"]] = KernelRow(name=n["name"], config=kernel_config(x))
        row.add(m.get("kernels", 0), m.get("gpu_ns", 0), 0, m.get("min_ns"), m.get("max_ns", 0))
    return sorted(rows.values(), key=lambda r: (-r.total, r.name))


def copy_rows(copies: Iterable[Mapping[str, Any]]) -> list[CopyRow]:
    """Copies by (direction, host memory kind) and memsets as one row, the most time first."""
    rows: dict[tuple[str, str], CopyRow] = {}
    for n in copies:
        m, x = n["m"], n.get("x", {})
        if n["kind"] == "memcpy":
            key = (str(x.get("direction") or n["name"]), str(x.get("host_mem") or ""))
            row = rows.setdefault(key, CopyRow(direction=key[0], host_mem=key[1]))
            row.add(m.get("copies", 0), m.get("copy_ns", 0), m.get("copy_bytes", 0), None, 0)
        elif n["kind"] == "memset":
            row = rows.setdefault(("memset", ""), CopyRow(direction="memset"))
            row.add(m.get("memsets", 0), m.get("memset_ns", 0), 0, None, 0)
    return sorted(rows.values(), key=lambda r: -r.total)


def api_rows(meta: Meta) -> list[ApiRow]:
    """``meta.api``'s functions, the most host time first (ties by name)."""
    ranked = sorted(meta.api or [], key=lambda a: (-(a.total_ns or 0), str(a.name)))
    return [
        ApiRow(
            a.name if a.name is not None else "?",
            a.calls or 0,
            a.total_ns or 0,
            a.min_ns or 0,
            a.max_ns or 0,
        )
        for a in ranked
    ]
