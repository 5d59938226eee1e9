"""A live status line on stderr while ``python -m dlpt`` profiles a program on a terminal:
``dlpt 12.4s · tracing · 20 steps seen, 17 profiled``.

When it draws: only when stderr is a terminal (not ``TERM=dumb``), never with ``--quiet``, never
in one of several ranks (their lines would fight over one terminal row), and only where the
system tells how many bytes the process has written (Linux's ``/proc/self/io``): that is how it
knows whether the program wrote something since the line was drawn.

How it keeps out of the program's way: the line is redrawn in place (carriage return, the text,
erase to the end of the row) only while nothing else in the process has written anything since
the last draw. Once the program writes (to the terminal or anywhere: the count cannot tell), the
row is no longer the status line's: it stays untouched until the program has been quiet for
``QUIET_S`` seconds, or twice its last interval between writes, whichever is longer, so a
program that logs every step is never drawn over; the line comes back during long silences
(start-up, compilation, a slow step). The text is dim (plain with ``NO_COLOR``).

The program's first line after a silence must not land on the status line's row (issue 33:
``dlpt 6.4s · warm-up · no step yetlongrun: started``): while the line draws, ``sys.stdout``
and ``sys.stderr`` are wrapped (:class:`_ClearsFirst`) so that a write through them erases the
line first. Writes that bypass Python's streams (C code writing to the file descriptor,
``sys.stdout.buffer``) cannot be seen before they happen; for those the cursor stays after the
text, so such a line follows it on that row, whole, instead of mixing into it.
dlpt clears the line (:meth:`StatusLine.clear`) before each line it prints itself and stops it
(:meth:`StatusLine.stop`) before the report.

Threads and locks: one daemon thread reads :meth:`dlpt.capture.profiler.Profile.status` (plain
attribute reads, no lock) a few times a second and writes with ``os.write(2, ...)``: no Python
stream, so no lock the program could hold (``sys.stderr``'s, the logging module's). Its own lock
is held only around one small write, shared with :meth:`StatusLine.clear` on the main thread.
A forked child inherits the object but not the thread: every method is a no-op there.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from dlpt.capture.host import own_thread_target
from dlpt.capture.status import ProfileStatus

__all__ = ["StatusLine", "format_status", "process_writes"]

TICK_S = 0.25  # redraws a few times a second
QUIET_S = 1.0  # the program's silence before the line is drawn again after it wrote
MAX_QUIET_S = 10.0
_IO = "/proc/self/io"
_CLEAR = b"\r\x1b[K"
_DIM, _PLAIN = "\x1b[2m", "\x1b[0m"


def process_writes() -> int | None:
    """Bytes this process has passed to write() so far (``wchar``), or None where the system
    does not say."""
    try:
        with open(_IO, "rb") as f:
            for line in f:
                if line.startswith(b"wchar:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _elapsed(s: float) -> str:
    if s < 60:
        return f"{s:.1f}s"
    m, sec = divmod(int(s), 60)
    return f"{m}m{sec:02d}s" if m < 60 else f"{m // 60}h{m % 60:02d}m"


def format_status(st: ProfileStatus, ascii: bool = False) -> str:
    """The status line's text; any phase string is shown as it is."""
    sep = " - " if ascii else " \u00b7 "
    if st.steps_seen == 0:
        steps = "no step yet"
    else:
        steps = f"{st.steps_seen} step{'s' if st.steps_seen != 1 else ''} seen, {st.steps_profiled} profiled"
    return sep.join(("dlpt " + _elapsed(st.elapsed_s), str(st.phase), steps))


class _ClearsFirst:
    """A text stream that erases the status line before each write, then writes to the stream it
    wraps; every other attribute is the wrapped stream's. [MT] ``write`` may run on any thread:
    the status line's own lock orders it with the drawing thread."""

    def __init__(self, stream: Any, line: StatusLine) -> None:
        self._dlpt_stream = stream
        self._dlpt_line = line

    def write(self, s: str) -> Any:
        if s:
            self._dlpt_line.clear()
        return self._dlpt_stream.write(s)  # as the stream returns it (some return None)

    def writelines(self, lines: Any) -> None:
        self._dlpt_line.clear()
        self._dlpt_stream.writelines(lines)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._dlpt_stream, name)


class StatusLine:
    """The status line of one profile: :meth:`start` it (it decides whether to draw at all),
    :meth:`clear` it before printing a line, :meth:`stop` it before the report."""

    def __init__(self, status: Callable[[], ProfileStatus], fd: int = 2) -> None:
        self._status = status
        self._fd = fd
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._shown = False  # our text is on the row, the cursor after it, nothing written since
        self._ours = 0  # bytes we wrote since the last count
        self._writes: int | None = None  # the process's bytes written at the last count
        self._last_foreign: float | None = None
        self._interval = 0.0  # between the program's last two writes
        enc = (getattr(sys.stderr, "encoding", None) or "").lower()
        self._ascii = not enc.startswith("utf")
        self._dim = not os.environ.get("NO_COLOR")  # dim, to tell it from the program's lines

    @staticmethod
    def wanted(quiet: bool, fd: int = 2) -> bool:
        """Whether a status line may draw: a terminal that understands cursor controls (not
        ``TERM=dumb``), not ``--quiet``, not one of several ranks, and a system that counts the
        process's writes."""
        if quiet or os.environ.get("TERM") == "dumb":
            return False
        try:
            if not os.isatty(fd):
                return False
        except OSError:
            return False
        from dlpt.capture.ranks.env import from_env

        env = from_env()
        if env is not None and env.world_size > 1:
            return False
        return process_writes() is not None

    def start(self) -> StatusLine:
        """Start drawing (in a daemon thread); the program's writes through ``sys.stdout`` and
        ``sys.stderr`` erase the line first."""
        self._wrap_streams()
        self._writes = process_writes()
        # dlpt's thread: not sampled as the program's (only threading's bootstrap, a few µs, is not marked)
        target = own_thread_target(self._run)
        self._thread = threading.Thread(target=target, name="dlpt-status-line", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            while not self._stop.wait(TICK_S):
                self._tick()
        except Exception:  # noqa: BLE001 - a status line must never hurt the program; it stops
            return

    def _tick(self) -> None:
        with self._lock:
            if self._stop.is_set() or os.getpid() != self._pid:
                return
            now = time.monotonic()
            count = process_writes()
            if count is None:
                return
            foreign = count - (self._writes or 0) - self._ours
            self._writes, self._ours = count, 0
            if foreign > 0:  # the program wrote: the row may be its own now
                self._shown = False
                if self._last_foreign is not None:
                    self._interval = now - self._last_foreign
                self._last_foreign = now
            if not self._shown and self._last_foreign is not None:
                quiet = min(MAX_QUIET_S, max(QUIET_S, 2 * self._interval))
                if now - self._last_foreign < quiet:
                    return
            self._draw(format_status(self._status(), self._ascii))

    def _draw(self, text: str) -> None:
        try:
            width = os.get_terminal_size(self._fd).columns or 80  # 0: a terminal that does not say
        except OSError:
            width = 80
        if len(text) >= width:  # a wrapped line could not be redrawn in place
            text = text[: max(width - 2, 1)]
        line = f"{_DIM}{text}{_PLAIN}" if self._dim else text
        self._write(_CLEAR + line.encode("utf-8", "replace"))
        self._shown = True

    def _write(self, data: bytes) -> None:
        try:
            self._ours += os.write(self._fd, data)
        except OSError:  # stderr closed or gone: draw no more
            self._stop.set()
            self._shown = False

    def _wrap_streams(self) -> None:
        self._wrapped: list[tuple[str, Any, _ClearsFirst]] = []
        for name in ("stdout", "stderr"):
            stream = getattr(sys, name)
            if stream is not None and not isinstance(stream, _ClearsFirst):
                wrapper = _ClearsFirst(stream, self)
                setattr(sys, name, wrapper)
                self._wrapped.append((name, stream, wrapper))

    def _unwrap_streams(self) -> None:
        """The streams as they were, unless the program has replaced them since."""
        for name, stream, wrapper in getattr(self, "_wrapped", []):
            if getattr(sys, name) is wrapper:
                setattr(sys, name, stream)
        self._wrapped = []

    def clear(self) -> None:
        """Erase the line if it is showing (before dlpt prints a line of its own, and before the
        program writes through ``sys.stdout`` or ``sys.stderr``); it is drawn again at the next
        tick once the program is quiet."""
        if os.getpid() != self._pid or not self._shown:
            return
        with self._lock:
            if self._shown:
                self._write(_CLEAR)
                self._shown = False

    def stop(self) -> None:
        """Stop drawing and erase the line (before the report)."""
        if os.getpid() != self._pid:
            return
        self._stop.set()
        self.clear()
        self._unwrap_streams()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=1.0)
