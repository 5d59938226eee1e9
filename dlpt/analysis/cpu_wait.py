"""Whether the host was busy while the steps ran: the share of the counted steps' wall time
that the step's thread spent ready to run, waiting for a CPU that other threads held
(``meta.step_time.waited_ns``, :mod:`dlpt.capture.cpu_wait`). A program alone on its cores
waits little: ``examples/mlp_train.py`` waited 0-4.5% of its steps on this project's 2-core VM
(dlpt's own sampler thread shares its cores), and 50-54% with two processes spinning beside it
(docs/numbers.md, "A busy host")."""

from __future__ import annotations

from dataclasses import dataclass

from dlpt.model.meta import Meta

__all__ = ["CpuWait", "cpu_wait", "BUSY_SHARE"]

#: A host is called busy when the step's thread waited at least this share of the counted
#: steps' wall time: as much as a per-line time may then be stretched by, the smallest change
#: dlpt diff flags (dlpt.analysis.diff_test.MIN_EFFECT). Measured (docs/numbers.md, "A busy
#: host, said"): quiet runs waited 0-4.5% (dlpt's own sampler thread shares a 2-core VM's
#: cores), busy ones 12-54%.
BUSY_SHARE = 0.10


@dataclass(frozen=True)
class CpuWait:
    """The counted steps' wait for a CPU (``waited_ns``) of their wall time (``counted_ns``)."""

    waited_ns: int
    counted_ns: int
    steps: int

    @property
    def share(self) -> float:
        return self.waited_ns / self.counted_ns if self.counted_ns > 0 else 0.0

    @property
    def busy(self) -> bool:
        return self.share >= BUSY_SHARE


def cpu_wait(meta: Meta) -> CpuWait | None:
    """The counted steps' wait for a CPU; None where it was not measured (a session from before
    dlpt measured it, a system without per-thread schedstat, or no counted step)."""
    st = meta.step_time
    steps = meta.profiled_steps
    if st is None or st.waited_ns is None or not st.counted_ns or not steps:
        return None
    return CpuWait(st.waited_ns, st.counted_ns, steps)
