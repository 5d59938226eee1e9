"""The busy-host warning: the step's thread waited for a CPU (dlpt.analysis.cpu_wait), so the
per-line times of this run are stretched by other threads' work, unevenly."""

from __future__ import annotations

from dlpt.analysis.cpu_wait import cpu_wait
from dlpt.analysis.report.model import Fact
from dlpt.model.meta import Meta
from dlpt.model.units import Units

__all__ = ["busy_host_facts"]


def busy_host_facts(meta: Meta, units: Units) -> list[Fact]:
    """A warning when the counted steps waited for a CPU (at least BUSY_SHARE of their wall
    time); nothing on a quiet host or where it was not measured."""
    w = cpu_wait(meta)
    if w is None or not w.busy:
        return []
    per_step = units.time(w.waited_ns / w.steps, per_step=False)
    value = (
        f"the step's thread waited {w.share:.0%} of its steps for a CPU ({per_step}/step), held by "
        "other threads (other programs', or this one's workers): per-line times are stretched, "
        "unevenly; dlpt diff judges CPU lines on each op's fastest call"
    )
    return [Fact("busy_host", f"busy host: {value}", "warn", "busy host", value)]
