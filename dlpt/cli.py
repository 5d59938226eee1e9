"""Command line: ``python -m dlpt [options] (script.py | -m module | -c code) [args...]``.

The profiled program must not be able to tell it is not run by plain ``python``: same
``sys.argv``, ``sys.path[0]``, ``__main__`` module (``__name__``, ``__file__``, ``__spec__``,
``__package__``, ``__loader__``), working directory and exit status. We therefore build the
``__main__`` module ourselves (as CPython's ``pymain_run_*`` does) instead of going through
``runpy.run_path``, which would force ``sys.argv[0]`` to equal ``__file__``.

Whatever way the program ends (normal end, ``sys.exit``, exception, Ctrl-C), the profile is first
stopped, saved and shown; only then does the program's traceback / exit status follow.
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import importlib.machinery
import io
import os
import runpy
import sys
import types
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from dlpt import outputs
from dlpt.errors import DlptError, UsageError
from dlpt.processors import METRICS
from dlpt.report import VIEWS  # imported now: the program's sys.path[0] replaces ours later

__all__ = ["main"]

EXIT_USAGE = 2  # bad options, missing program, unreadable session: like python's own exit 2
EXIT_SIGINT = 128 + 2  # what a shell reports for a program killed by Ctrl-C

# Keep the module dlpt itself ran as (python -m dlpt) alive once the program's module replaces it
# in sys.modules["__main__"]; its globals are still in use by our caller's frame.
_launcher_main: Any = None


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one clear line instead of usage + error
        raise UsageError(message)


@dataclass
class _Program:
    """What to run and how the interpreter state must look while it runs."""

    code: types.CodeType
    argv: list[str]
    path0: str  # sys.path[0] as python would set it
    module: types.ModuleType = field(default_factory=lambda: types.ModuleType("__main__"))


def _build_parser() -> _Parser:
    p = _Parser(
        prog="dlpt",
        allow_abbrev=False,  # abbreviations would make the script/option split ambiguous
        usage="dlpt [options] (script.py | -m module | -c code) [args ...]\n"
        "       dlpt --load FILE [render options]\n"
        "       dlpt diff A.json B.json [--metric M] [--threshold PCT] [--html OUT] [--ascii]",
        description="Profile a PyTorch program: which line of your code costs how much GPU time.",
    )
    p.add_argument("-o", "--output", metavar="FILE", help="save the session (JSON) to FILE")
    p.add_argument("--load", metavar="FILE", help="re-render a saved session; runs nothing")
    p.add_argument("--view", choices=VIEWS, default="tree", help="report view (default: tree)")
    p.add_argument(
        "--metric",
        choices=list(METRICS),
        help="metric to rank and prune by (default: gpu if there is GPU time, else cpu)",
    )
    p.add_argument(
        "--threshold",
        type=float,
        default=1.0,
        metavar="PCT",
        help="hide nodes below PCT percent of the total (default: 1)",
    )
    p.add_argument("--depth", type=int, metavar="N", help="show at most N levels below the root")
    p.add_argument("--show-all", action="store_true", help="show library frames too")
    p.add_argument("--ascii", action="store_true", help="draw with ASCII characters only")
    p.add_argument("--no-report", action="store_true", help="save only, print no report")
    outputs.add_arguments(p)
    p.add_argument("--skip-first", type=int, default=0, metavar="N", help="do not profile the first N steps")
    p.add_argument("--active", type=int, metavar="M", help="profile M steps, then stop")
    p.add_argument("--no-gpu", action="store_true", help="CPU-side attribution only")
    p.add_argument(
        "--nested-ops",
        action="store_true",
        help="also record ops inside ops (aten::mm under aten::matmul); slower",
    )
    p.add_argument(
        "--flops",
        action="store_true",
        help="record op shapes for FLOPs, TFLOP/s and MFU per line (costs time on every op)",
    )
    p.add_argument(
        "--peak-tflops",
        type=float,
        metavar="N",
        help="the GPU's dense peak TFLOP/s for MFU and %% of peak (default: datasheet table)",
    )
    p.add_argument("--version", action="version", version=f"dlpt {_version()}")
    return p


def _version() -> str:
    import dlpt

    return str(getattr(dlpt, "__version__", "unknown"))


def _split(parser: _Parser, argv: list[str]) -> tuple[list[str], list[str]]:
    """Split argv into dlpt's options and the program part, which starts at the script, ``-m``
    or ``-c``; everything after that belongs to the program, untouched (as with python)."""
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            return argv[:i], argv[i + 1 :]
        if not tok.startswith("-") or tok == "-":
            return argv[:i], argv[i:]
        if not tok.startswith("--") and tok[1] in "mc":
            return argv[:i], argv[i:]
        # Options with a separate value consume the next token, so that `-o p.json x.py`
        # does not take p.json for the script.
        if "=" not in tok and (len(tok) == 2 or tok.startswith("--")):
            action = parser._option_string_actions.get(tok)
            if action is not None and action.nargs != 0:
                i += action.nargs if isinstance(action.nargs, int) else 1
        i += 1
    return argv, []


def _parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    parser = _build_parser()
    opts_part, program = _split(parser, argv)
    opts = parser.parse_args(opts_part)
    opts.outputs = outputs.collect(opts)
    if opts.load is not None:
        if program:
            raise UsageError("--load re-renders a saved session and runs no program")
        for flag, bad in (
            ("-o", opts.output is not None),
            ("--no-report", opts.no_report and not opts.outputs),
            ("--skip-first", opts.skip_first != 0),
            ("--active", opts.active is not None),
            ("--no-gpu", opts.no_gpu),
            ("--nested-ops", opts.nested_ops),
            ("--flops", opts.flops),
        ):
            if bad:
                raise UsageError(f"{flag} applies when running a program, not with --load")
    elif not program:
        raise UsageError("no program given: expected script.py, -m module or -c code (see --help)")
    # Checked here, as the renderer would, so a bad value fails before a long run, not after it.
    if not 0.0 <= opts.threshold < 100.0:
        raise UsageError(f"--threshold must be a percentage in [0, 100), got {opts.threshold:g}")
    if opts.depth is not None and opts.depth < 1:
        raise UsageError("--depth must be >= 1")
    if opts.peak_tflops is not None and not 0 < opts.peak_tflops < float("inf"):
        raise UsageError(f"--peak-tflops must be a positive number, got {opts.peak_tflops:g}")
    if opts.skip_first < 0:
        raise UsageError("--skip-first must be >= 0")
    if opts.active is not None and opts.active < 1:
        raise UsageError("--active must be >= 1")
    if opts.no_report and opts.output is None and not opts.outputs:
        raise UsageError("--no-report without -o FILE, --html or --export would throw the profile away")
    for out in opts.outputs:
        _check_writable(out.path, out.flag)
    if opts.output is not None:
        _check_writable(opts.output)
        # The program may chdir; the file goes where the user meant when typing the command.
        opts.output_abs = os.path.abspath(opts.output)
    return opts, program


def _check_writable(path: str, flag: str = "-o") -> None:
    # Fail before a possibly hour-long run rather than lose its profile at the end.
    problem = outputs.path_problem(path)
    if problem is not None:
        raise UsageError(f"{flag} {path}: {problem}")


def _set_path0(entry: str) -> None:
    # python -P / -I / PYTHONSAFEPATH prepend nothing, so there is no entry of ours to replace.
    if not sys.flags.safe_path:
        sys.path[0] = entry


def _main_module(program: _Program, **attrs: Any) -> None:
    d = program.module.__dict__
    # CPython's main module always starts with these (pylifecycle.c: add_main_module).
    d.update(__builtins__=builtins, __annotations__={}, __doc__=None)
    d.update(attrs)


def _from_script(path: str, args: list[str]) -> _Program:
    if os.path.isdir(path) or _is_zip(path):
        return _from_main_dir(path, args)
    with io.open_code(path) as f:  # OSError → "can't open file", like python
        source = f.read()
    # Like python >= 3.9: __file__ is absolute (not normalised), sys.path[0] is the real directory.
    filename = path if os.path.isabs(path) else os.path.join(os.getcwd(), path)
    code = compile(source, filename, "exec", dont_inherit=True)
    prog = _Program(code, [path, *args], os.path.dirname(os.path.realpath(path)))
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


def _from_main_dir(path: str, args: list[str]) -> _Program:
    """A directory or zip with __main__.py: python puts it on sys.path and runs ``__main__``."""
    path0 = path if os.path.isabs(path) else os.path.join(os.getcwd(), path)
    _set_path0(path0)
    saved = sys.modules.pop("__main__", None)  # so the lookup finds the program's __main__
    try:
        # runpy's private helpers are what python's own -m and directory runs use; they give
        # python's exact lookup semantics and error messages (private: not in typeshed).
        _, spec, code = runpy._get_module_details("__main__", UsageError)  # type: ignore[attr-defined]
    except UsageError:
        raise UsageError(f"can't find '__main__' module in {path!r}") from None
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved
    prog = _Program(code, [path, *args], path0)
    _module_attrs(prog, spec)
    return prog


def _from_module(name: str, args: list[str]) -> _Program:
    _set_path0(os.getcwd())  # python -m: the working directory, absolute
    # The helper python -m itself uses (see _from_main_dir); private, hence not in typeshed.
    _, spec, code = runpy._get_module_details(name, UsageError)  # type: ignore[attr-defined]
    prog = _Program(code, [spec.origin, *args], os.getcwd())
    _module_attrs(prog, spec)
    return prog


def _module_attrs(prog: _Program, spec: Any) -> None:
    _main_module(
        prog,
        __file__=spec.origin,
        __cached__=spec.cached,
        __loader__=spec.loader,
        __package__=spec.parent,
        __spec__=spec,
    )


def _from_code(source: str, args: list[str]) -> _Program:
    prog = _Program(compile(source, "<string>", "exec", dont_inherit=True), ["-c", *args], "")
    _main_module(prog, __package__=None, __spec__=None, __loader__=importlib.machinery.BuiltinImporter)
    return prog


def _resolve(program: list[str]) -> _Program:
    head, rest = program[0], program[1:]
    for flag, make in (("-m", _from_module), ("-c", _from_code)):
        if head.startswith(flag):
            if head == flag:
                if not rest:
                    raise UsageError(f"argument {flag} needs a value")
                head, rest = flag + rest[0], rest[1:]
            return make(head[2:], rest)
    if head == "-":
        raise UsageError("reading the program from stdin is not supported; pass a file")
    try:
        return _from_script(head, rest)
    except OSError as e:
        raise UsageError(f"can't open file {head!r}: [Errno {e.errno}] {e.strerror}") from None


def _install(prog: _Program) -> None:
    global _launcher_main
    _launcher_main = sys.modules.get("__main__")
    sys.argv[:] = prog.argv  # in place: code may hold a reference to the list
    _set_path0(prog.path0)
    # pickle and multiprocessing look the program's classes up through sys.modules['__main__'].
    sys.modules["__main__"] = prog.module


def _run_program(prog: _Program) -> BaseException | None:
    """Execute the program; return how it ended (None for a normal end)."""
    try:
        exec(prog.code, prog.module.__dict__)
    except BaseException as e:  # noqa: BLE001 - every way out (SystemExit, Ctrl-C) is the outcome
        return e
    return None


def _finish(prof: Any, opts: argparse.Namespace) -> bool:
    """Stop, save and show the profile; report dlpt's own failures without hiding the
    program's outcome. Returns whether everything worked."""
    ok = True
    try:
        prof.stop()
    except Exception as e:  # noqa: BLE001 - shown, then the program's status still follows
        _say(f"failed to stop the profiler: {e}")
        return False
    if opts.output is not None:
        try:
            prof.save(opts.output_abs)
            _say(f"saved profile to {opts.output}")
        except (OSError, DlptError) as e:
            _say(f"could not save the profile to {opts.output}: {e}")
            ok = False
    if opts.outputs:
        ok = outputs.write_all(prof.session, opts.outputs, opts.metric, opts.show_all, _say) and ok
    if not opts.no_report:
        try:
            prof.print(**_render_kwargs(opts))
        except Exception as e:  # noqa: BLE001
            _say(f"could not render the report: {type(e).__name__}: {e}")
            ok = False
    return ok


def _render_kwargs(opts: argparse.Namespace) -> dict[str, Any]:
    return dict(
        view=opts.view,
        metric=opts.metric,
        threshold=opts.threshold / 100.0,
        depth=opts.depth,
        show_all=opts.show_all,
        ascii=opts.ascii,
        peak_tflops=opts.peak_tflops,
    )


def _say(msg: str) -> None:
    print(f"dlpt: {msg}", file=sys.stderr, flush=True)


def _strip_launcher_frames(tb: types.TracebackType | None) -> types.TracebackType | None:
    """Drop the leading frames of dlpt and runpy so the traceback starts at the program's code,
    as python shows it."""
    ours = {_run_program.__code__.co_filename, getattr(runpy, "__file__", ""), "<frozen runpy>"}
    while tb is not None and tb.tb_frame.f_code.co_filename in ours:
        tb = tb.tb_next
    return tb


def _exit_status(outcome: BaseException | None) -> int:
    """Translate how the program ended into python's exit status, printing what python prints."""
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
            return code
        print(code, file=sys.stderr, flush=True)  # sys.exit("msg"): message, status 1
        return 1
    tb = _strip_launcher_frames(outcome.__traceback__)
    outcome.__traceback__ = tb
    sys.excepthook(type(outcome), outcome, tb)  # honour a hook the program installed
    return EXIT_SIGINT if isinstance(outcome, KeyboardInterrupt) else 1


def _run(opts: argparse.Namespace, program: list[str]) -> int:
    import dlpt

    try:
        prog = _resolve(program)
    except UsageError as e:
        _say(str(e))
        return EXIT_USAGE
    except BaseException as e:  # noqa: BLE001 - the program's package failed to import, or a SyntaxError
        return _exit_status(e)
    _install(prog)
    prof = dlpt.profile(
        skip_first=opts.skip_first,
        active=opts.active,
        gpu=not opts.no_gpu,
        nested_ops=opts.nested_ops,
        flops=opts.flops,
    )
    try:
        prof.start()
    except DlptError as e:
        _say(f"cannot start profiling: {e}")
        return EXIT_USAGE
    outcome = _run_program(prog)
    ok = _finish(prof, opts)
    status = _exit_status(outcome)
    return status if status != 0 or ok else EXIT_USAGE


def _load(opts: argparse.Namespace) -> int:
    from dlpt.report import print_report
    from dlpt.session import Session

    try:
        session = Session.load(opts.load)
        if not opts.no_report:
            print_report(session, **_render_kwargs(opts))
    except DlptError as e:
        _say(str(e))
        return EXIT_USAGE
    ok = outputs.write_all(session, opts.outputs, opts.metric, opts.show_all, _say)
    return 0 if ok else EXIT_USAGE


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dlpt`` command; returns the exit status (the program's own status
    when a program was run)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["diff"]:  # the subcommand; a script named diff runs as ./diff
        from dlpt.diff_cli import main as diff_main

        return diff_main(args[1:])
    try:
        opts, program = _parse(args)
    except UsageError as e:
        _say(f"error: {e}")
        return EXIT_USAGE
    except SystemExit as e:  # --help and --version print and "exit"
        return e.code if isinstance(e.code, int) else 0
    if opts.load is not None:
        return _load(opts)
    return _run(opts, program)
