"""``python -m dlpt.cli.step_bound N [dlpt options] PROGRAM...``: ``python -m dlpt``, with the
program stopped once N steps were counted (``--active N`` among the options: the profile is then
done). What :mod:`dlpt.cli.bounded_run` starts for the MCP server's ``profile`` tool: an agent
asks for a profile of N steps, not for the whole training run.

The stop is dlpt's own SIGTERM path (:mod:`dlpt.cli.signals`): the profile stops and is saved,
then the process dies of the signal, as it would under ``kill``. A watcher thread polls the
running profile's status (plain attribute reads: :mod:`dlpt.capture.status`) ten times a second.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

from dlpt.capture import running
from dlpt.cli.process_end import end_process
from dlpt.cli.stdout_guard import say_line

__all__ = ["main", "STOP_LINE"]

#: What the watcher says on stderr when it stops the program (the runner looks for it).
STOP_LINE = "steps counted: stopping the program (its step bound)"


def _watch(steps: int) -> None:
    while True:
        time.sleep(0.1)
        prof = running.current()
        if prof is None:
            continue
        status = prof.status()
        if status.phase == "done" and status.steps_profiled >= steps:
            say_line("dlpt", f"{status.steps_profiled} {STOP_LINE}")
            os.kill(os.getpid(), signal.SIGTERM)
            return


def main(argv: list[str]) -> int:
    from dlpt.cli.main import run

    steps = int(argv[0]) if argv and argv[0].isdigit() else 0
    if steps > 0:
        threading.Thread(target=_watch, args=(steps,), name="dlpt-step-bound", daemon=True).start()
    return end_process(run(argv[1:]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
