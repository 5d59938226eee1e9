"""How long the step's thread waited for a CPU: its *run delay*, the time it was ready to run
while other threads held every core (the kernel's per-thread ``schedstat``, second field, in
ns). A program does not add it; a busy host does. On this project's 2-core VM with two
processes spinning beside ``examples/mlp_train.py``, steps took 7.6-8.5 ms of which 4.0 ms were
such waits (3.0-3.2 ms alone), and stalls of 40-100 ms were half waits. The step schedule sums
it over the counted steps, and the report says when they waited (docs/numbers.md, "A busy
host"). The warm-up does not use it (docs/numbers.md, "The warm-up": tried, no gain).

Linux only (``/proc/thread-self``, kernel 3.17, with CONFIG_SCHED_INFO as every mainstream
distribution builds it); elsewhere, or where the file cannot be read, the waits are unknown and
the session does not say them.

Thread contract: one :class:`ThreadWaits` belongs to the profile's step schedule and is called
with the GIL held at its step boundaries. The file is opened per thread (``/proc/thread-self``
names the thread that opens it), so a boundary on a thread other than the last one's reopens
it and reports no wait for that step.
"""

from __future__ import annotations

import os
import threading

__all__ = ["ThreadWaits", "SCHEDSTAT"]

SCHEDSTAT = "/proc/thread-self/schedstat"


class ThreadWaits:
    """The calling thread's run delay since the last :meth:`mark` on that thread."""

    def __init__(self, path: str = SCHEDSTAT) -> None:
        self._path = path
        self._fd: int | None = None
        self._tid: int | None = None
        self._at: tuple[int, int] | None = None  # the last mark: (thread, run delay in ns)
        self.available = self._read() is not None
        self.close()

    def mark(self) -> None:
        """A step (or the time before one) begins on the calling thread."""
        now = self._read() if self.available else None
        self._at = None if now is None else (threading.get_native_id(), now)

    def since_mark(self) -> int:
        """The ns the calling thread waited for a CPU since its last mark (0 where unknown: no
        mark, another thread's, or an unreadable file)."""
        at, self._at = self._at, None
        if at is None or at[0] != threading.get_native_id():
            return 0
        now = self._read()
        return 0 if now is None else max(0, now - at[1])

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
        self._fd = self._tid = None

    def _read(self) -> int | None:
        """The calling thread's run delay so far (ns), or None."""
        tid = threading.get_native_id()
        try:
            if self._tid != tid:
                self.close()
                self._fd, self._tid = os.open(self._path, os.O_RDONLY | os.O_CLOEXEC), tid
            fields = os.pread(self._fd, 128, 0).split()  # type: ignore[arg-type]  # opened above
            return int(fields[1])
        except (OSError, ValueError, IndexError):
            self.close()
            return None
