"""Running the profiled program exactly as ``python`` would run it (for :mod:`dlpt.cli.main`).

The profiled program must not be able to tell it is not run by plain ``python``: same
``sys.argv``, ``sys.path[0]``, ``__main__`` module (``__name__``, ``__file__``, ``__spec__``,
``__package__``, ``__loader__``), working directory and exit status. We therefore build the
``__main__`` module ourselves (as CPython's ``pymain_run_*`` does) instead of going through
``runpy.run_path``, which would force ``sys.argv[0]`` to equal ``__file__``.

:func:`resolve` turns the program part of the command line (``script.py``, ``-m module``,
``-c code``, a directory or zip with ``__main__.py``) into a :class:`Program`; :func:`install`
makes the interpreter look as python would have it; :func:`run_program` executes it and returns
how it ended; :func:`exit_status` prints what python prints for that ending (the traceback,
starting at the program's own code) and gives python's exit status.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # CPython's C module of signal: no stub
import ast
import builtins
import contextlib
import importlib.machinery
import io
import os
import runpy
import signal
import sys
import types
from dataclasses import dataclass, field
from typing import Any

from dlpt.capture import signal_end
from dlpt.capture.source_text import remember_source
from dlpt.capture.step_on import instrument_main
from dlpt.cli.process_end import Death, program_status
from dlpt.errors import UsageError

__all__ = ["LaunchError", "Program", "resolve", "install", "run_program", "exit_status"]


# Keep the module dlpt itself ran as (python -m dlpt) alive once the program's module replaces it
# in sys.modules["__main__"]; its globals are still in use by our caller's frame.
_launcher_main: Any = None


class LaunchError(UsageError):
    """The program cannot be started, as python would say it (a missing file: status 2, a
    missing module or ``__main__``: status 1); ``status`` is python's exit status for it."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Program:
    """What to run and how the interpreter state must look while it runs."""

    code: types.CodeType
    argv: list[str]
    path0: str  # sys.path[0] as python would set it
    module: types.ModuleType = field(default_factory=lambda: types.ModuleType("__main__"))
    sigint_at_end: Any = None  # the SIGINT handler the program left (run_program sets it)


def _set_path0(entry: str) -> None:
    # python -P / -I / PYTHONSAFEPATH prepend nothing, so there is no entry of ours to replace.
    if not sys.flags.safe_path:
        sys.path[0] = entry


def _main_module(program: Program, **attrs: Any) -> None:
    d = program.module.__dict__
    # CPython's main module always starts with these (pylifecycle.c: add_main_module).
    d.update(__builtins__=builtins, __annotations__={}, __doc__=None)
    d.update(attrs)


def _compile_main(source: str | bytes, filename: str, step_on: str | None) -> types.CodeType:
    """Compile the program's main code as python would; with ``--step-on``, the defs it names get
    the decorator that counts their calls (dlpt.capture.step_on.instrument_main)."""
    if step_on is None:
        return compile(source, filename, "exec", dont_inherit=True)
    tree = ast.parse(source, filename)  # the SyntaxError compile() would raise
    return compile(instrument_main(tree, step_on), filename, "exec", dont_inherit=True)


def _null_byte_error(source: bytes, filename: str) -> SyntaxError:
    """The SyntaxError python raises for a script holding a NUL byte: it reads the file line by
    line and names the line with the first one (``compile()`` of the whole text says neither)."""
    at = source.index(b"\0")
    start = source.rfind(b"\n", 0, at) + 1
    line = source[start:at].decode("utf-8", "replace")
    return SyntaxError(
        "source code cannot contain null bytes", (filename, source.count(b"\n", 0, at) + 1, None, line)
    )


def _from_script(path: str, args: list[str], step_on: str | None) -> Program:
    if os.path.isdir(path) or _is_zip(path):
        return _from_main_dir(path, args)
    with io.open_code(path) as f:  # OSError → "can't open file", like python
        source = f.read()
    # Like python >= 3.9: __file__ is absolute (not normalised), sys.path[0] is the real directory.
    filename = path if os.path.isabs(path) else os.path.join(os.getcwd(), path)
    if b"\0" in source:
        raise _null_byte_error(source, filename)
    code = _compile_main(source, filename, step_on)
    prog = Program(code, [path, *args], os.path.dirname(os.path.realpath(path)))
    _main_module(
        prog,
        __file__=filename,
        __cached__=None,
        __package__=None,
        __spec__=None,
        __loader__=importlib.machinery.SourceFileLoader("__main__", filename),
    )
    return prog


def _is_zip(path: str) -> bool:
    import zipfile

    return os.path.isfile(path) and zipfile.is_zipfile(path)


def _from_main_dir(path: str, args: list[str]) -> Program:
    """A directory or zip with __main__.py: python puts it on sys.path and runs ``__main__``."""
    path0 = path if os.path.isabs(path) else os.path.join(os.getcwd(), path)
    _set_path0(path0)
    saved = sys.modules.pop("__main__", None)  # so the lookup finds the program's __main__
    try:
        # runpy's private helpers are what python's own -m and directory runs use; they give
        # python's exact lookup semantics and error messages (private: not in typeshed).
        _, spec, code = runpy._get_module_details("__main__", UsageError)  # type: ignore[attr-defined]
    except UsageError:
        raise LaunchError(f"can't find '__main__' module in {path!r}", 1) from None
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved
    prog = Program(code, [path, *args], path0)
    _module_attrs(prog, spec)
    return prog


def _from_module(name: str, args: list[str], step_on: str | None) -> Program:
    _set_path0(os.getcwd())  # python -m: the working directory, absolute
    # The helper python -m itself uses (see _from_main_dir); private, hence not in typeshed.
    try:
        _, spec, code = runpy._get_module_details(name, UsageError)  # type: ignore[attr-defined]
    except UsageError as e:  # "No module named ...": python -m says it and exits with 1
        raise LaunchError(str(e), 1) from None
    source = spec.loader.get_source(spec.name) if step_on and hasattr(spec.loader, "get_source") else None
    if source is not None:
        code = _compile_main(source, spec.origin, step_on)
    prog = Program(code, [spec.origin, *args], os.getcwd())
    _module_attrs(prog, spec)
    return prog


def _module_attrs(prog: Program, spec: Any) -> None:
    _main_module(
        prog,
        __file__=spec.origin,
        __cached__=spec.cached,
        __loader__=spec.loader,
        __package__=spec.parent,
        __spec__=spec,
    )


def _from_code(source: str, args: list[str], step_on: str | None) -> Program:
    remember_source("<string>", source)  # the report shows the code's lines, as a script's
    prog = Program(_compile_main(source, "<string>", step_on), ["-c", *args], "")
    _main_module(prog, __package__=None, __spec__=None, __loader__=importlib.machinery.BuiltinImporter)
    return prog


def resolve(program: list[str], step_on: str | None) -> Program:
    """The program the command line names (``program[0]`` is the script, ``-m``/``-mNAME`` or
    ``-c``/``-cCODE``; the rest are its arguments). Raises :class:`LaunchError` for what python
    reports in one line (a missing file: status 2; a missing module or ``__main__``: 1),
    UsageError for a command line python would not take, and whatever compiling or finding the
    program raises (a SyntaxError, the program's package failing to import)."""
    head, rest = program[0], program[1:]
    for flag, make in (("-m", _from_module), ("-c", _from_code)):
        if head.startswith(flag):
            if head == flag:
                if not rest:
                    raise UsageError(f"argument {flag} needs a value")
                head, rest = flag + rest[0], rest[1:]
            return make(head[2:], rest, step_on)
    if head == "-":
        raise UsageError("reading the program from stdin is not supported; pass a file")
    try:
        return _from_script(head, rest, step_on)
    except OSError as e:
        raise LaunchError(f"can't open file {head!r}: [Errno {e.errno}] {e.strerror}", 2) from None


def install(prog: Program) -> None:
    """Make ``sys.argv``, ``sys.path[0]`` and ``sys.modules["__main__"]`` the program's."""
    global _launcher_main
    _launcher_main = sys.modules.get("__main__")
    sys.argv[:] = prog.argv  # in place: code may hold a reference to the list
    _set_path0(prog.path0)
    # pickle and multiprocessing look the program's classes up through sys.modules['__main__'].
    sys.modules["__main__"] = prog.module


def run_program(prog: Program, hold_sigint: Any) -> BaseException | None:
    """Execute the program; return how it ended (None for a normal end).

    The moment it ends, Ctrl-C is only noted (``hold_sigint``), installed through a native call
    (dlpt.capture.signal_end.quiet_setter) that nothing checks for signals before: a Ctrl-C
    pending then is noted, never raised in dlpt's own code (Python's ``signal.signal`` runs the
    pending handlers, KeyboardInterrupt's included, before it changes one)."""
    setter = (signal_end.quiet_setter() or _python_setter) if hold_sigint is not None else None
    set_fn = _signal.signal
    outcome: BaseException | None = None
    try:
        exec(prog.code, prog.module.__dict__)
    except BaseException as e:  # noqa: BLE001 - every way out (SystemExit, Ctrl-C) is the outcome
        outcome = e
    if setter is not None:
        prog.sigint_at_end, interrupts = setter(set_fn, signal.SIGINT, hold_sigint)
        if interrupts:  # a Ctrl-C came as the program ended: noted as one that came now
            hold_sigint(signal.SIGINT, None)
    return outcome


def _python_setter(set_fn: Any, signum: int, handler: Any) -> tuple[Any, int]:
    """quiet_setter without the native core (never in a run: a profile needs it)."""
    return set_fn(signum, handler), 0


_DLPT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _is_runner_frame(tb: types.TracebackType) -> bool:
    """A frame of dlpt's (the command line, its hooks inside torch: backward_records) or runpy's."""
    name = tb.tb_frame.f_code.co_filename
    return name.startswith(_DLPT_DIR) or name in (getattr(runpy, "__file__", ""), "<frozen runpy>")


def _strip_launcher_frames(tb: types.TracebackType | None) -> types.TracebackType | None:
    """The traceback python would show: the frames of dlpt's command line and runpy before the
    program's code dropped (none at all for a SyntaxError in the script), and dlpt's frames
    between the program's (a hook of dlpt's inside torch's backward) too. The innermost frames
    stay whoever's they are: an error raised in dlpt's own code must show where."""
    frames: list[types.TracebackType] = []
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    # Innermost frame of anyone else's (-1: none, e.g. the script's SyntaxError: no frame at all).
    last_other = max((i for i, f in enumerate(frames) if not _is_runner_frame(f)), default=-1)
    kept = [f for i, f in enumerate(frames) if (i > last_other >= 0) or not _is_runner_frame(f)]
    out: types.TracebackType | None = None
    for f in reversed(kept):
        out = types.TracebackType(out, f.tb_frame, f.tb_lasti, f.tb_lineno)
    return out


def exit_status(outcome: BaseException | None) -> int:
    """Translate how the program ended into python's exit status, printing what python prints:
    ``sys.exit(code)`` gives what python's exit gives (dlpt.cli.process_end.program_status), an
    unhandled Ctrl-C a :class:`~dlpt.cli.process_end.Death` by SIGINT."""
    if outcome is None:
        return 0
    # The report and program output come before the traceback. The program may have closed
    # stdout or replaced it (even with None): a failing flush must not hide its outcome.
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    if isinstance(outcome, SystemExit):
        code = outcome.code
        if code is None:
            return 0
        if isinstance(code, int):
            return program_status(code)
        print(code, file=sys.stderr, flush=True)  # sys.exit("msg"): message, status 1
        return 1
    tb = _strip_launcher_frames(outcome.__traceback__)
    outcome.__traceback__ = tb
    sys.excepthook(type(outcome), outcome, tb)  # honour a hook the program installed
    # Python ends by SIGINT itself after an unhandled Ctrl-C (dlpt.cli.process_end.end_process).
    return Death(signal.SIGINT) if isinstance(outcome, KeyboardInterrupt) else 1
