"""The command line: ``dlpt COMMAND ...`` (``python -m dlpt``), one command of its own each:

- ``run`` (:mod:`dlpt.cli.run`): ``dlpt [run] [options] (script.py | -m module | -c code)
  [args...]``, a program profiled (the word ``run`` may be left out);
- ``load`` (:mod:`dlpt.cli.load`): ``dlpt load FILE [FILE ...] [options]``, saved sessions shown
  again (also ``dlpt --load FILE ...``);
- ``diff`` (:mod:`dlpt.cli.diff`): ``dlpt diff A.json B.json``, two runs compared line by line.

A script named like a command runs as ``./NAME``. Each command's options are parsed and checked
before it does anything (:mod:`dlpt.cli.options`); this module dispatches and ends the process
as the command says.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from dlpt.cli import voice
from dlpt.cli.options import parse_command_line, parse_load
from dlpt.cli.process_end import Death, end_process
from dlpt.errors import UsageError
from dlpt.frontend.options import LoadOptions, RunOptions

__all__ = ["COMMANDS", "SUBCOMMANDS", "EXIT_USAGE", "NO_TORCH", "main", "run", "entry"]

EXIT_USAGE = 2  # bad options, missing program, unreadable session: like python's own exit 2
#: What dlpt says, on one line, where torch cannot be imported.
NO_TORCH = (
    "torch could not be imported ({why}): dlpt profiles PyTorch programs and needs torch in this "
    "Python ({python}); install it (README: Install)"
)

#: The commands: a program profiled, saved sessions shown again, two runs compared, and the
#: answers for scripts and agents (dlpt.cli.commands). Like diff, a script of such a name runs
#: as ./query.
COMMANDS = ("run", "load", "diff")
SUBCOMMANDS = ("query", "verify", "mcp")


def entry() -> NoReturn:
    """The ``dlpt`` command and ``python -m dlpt``: the command line, then end as it says (death
    by a signal where plain python would die of it: dlpt.cli.process_end.end_process)."""
    sys.exit(end_process(run()))


def main(argv: Sequence[str] | None = None) -> int:
    """The command line as a function: the exit status a shell would show (the program's own
    status when a program was run; 128 + N where the process would die of signal N)."""
    status = run(argv)
    return 128 + int(status) if isinstance(status, Death) else status


def run(argv: Sequence[str] | None = None) -> int:
    """The command line; returns the exit status (the program's own status when a program was
    run, as python's exit gives it: 0-255), or a :class:`~dlpt.cli.process_end.Death` where the
    process must die of a signal (:func:`dlpt.cli.process_end.end_process`)."""
    args = list(sys.argv[1:] if argv is None else argv)
    voice.QUIET[0], voice.STATUS_LINE[0] = False, None
    command = args[0] if args[:1] and args[0] in COMMANDS else None
    if command == "diff" or (args[:1] and args[0] in SUBCOMMANDS):
        return _imported(lambda: _own_command(args))
    try:
        opts = (
            parse_load(args[1:]) if command == "load" else parse_command_line(args[1:] if command else args)
        )
        if command == "run" and isinstance(opts, LoadOptions):
            raise UsageError("--load shows saved sessions and runs nothing: dlpt load FILE")
    except UsageError as e:
        voice.say(f"error: {e}")
        return EXIT_USAGE
    except SystemExit as e:  # --help and --version print and "exit"
        return e.code if isinstance(e.code, int) else 0
    voice.QUIET[0] = opts.quiet
    return _imported(lambda: _profile_or_load(opts))


def _own_command(args: list[str]) -> Callable[[], int]:
    """``dlpt diff`` and the commands for scripts and agents."""
    if args[0] == "diff":
        from dlpt.cli.diff import main as diff_main

        return lambda: _interruptible(lambda: diff_main(args[1:]))
    from dlpt.cli.commands import run_subcommand

    return lambda: _interruptible(lambda: run_subcommand(args[0], args[1:]))


def _profile_or_load(opts: RunOptions | LoadOptions) -> Callable[[], int]:
    """The run or load command for ``opts``."""
    if isinstance(opts, LoadOptions):
        from dlpt.cli.load import load_command

        return lambda: _interruptible(lambda: load_command(opts))
    from dlpt.cli.run import run_command

    return lambda: run_command(opts)


def _imported(command: Callable[[], Callable[[], int]]) -> int:
    """Import a command's modules (``command``), then run what it returns. They import torch,
    which --help, --version and a bad option never need; where torch cannot be imported (not
    installed, or broken) this says so in one line, status 2, instead of a traceback from deep
    in dlpt. Only dlpt's imports are guarded: the profiled program's own errors are its own."""
    try:
        chosen = command()
    except ImportError as e:
        if not _torch_failed(e):
            raise
        voice.say(f"error: {NO_TORCH.format(why=_first_line(e), python=sys.executable)}")
        return EXIT_USAGE
    return chosen()


def _torch_failed(e: ImportError) -> bool:
    """Whether ``e`` is torch's own import failing (a missing torch, or a broken one)."""
    name = e.name or ""
    return name == "torch" or name.startswith("torch.") or "torch" in str(e).split("\n", 1)[0]


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def _interruptible(command: Callable[[], int]) -> int:
    """One of dlpt's own commands (``load``, ``diff``): Ctrl-C ends it as it ends a plain
    command, by SIGINT, without a traceback of dlpt's frames."""
    try:
        return command()
    except KeyboardInterrupt:
        return Death(signal.SIGINT)
