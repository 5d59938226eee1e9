"""``--step-on NAME`` / ``dlpt.profile(step_on=NAME)``: each outermost call of a function is a step.

Inference has no optimizer step to count: a ``generate()`` loop or a server handling requests
calls one function per unit of work, so that function's calls are the steps. The function is
wrapped (no ``sys.setprofile``: that would slow every Python call of the program), and each
wrapper's call tells the profile when an outermost call begins and ends; calls made while one is
already running on the same thread (recursion, ``forward`` calling ``forward``) are part of it.

NAME is resolved as follows, and the originals are put back when the profile stops:

- ``module:qualname`` (``pkg.mod:generate``, ``pkg.mod:Model.forward``): the attribute of that
  module, now if it is imported, else as soon as the program imports it.
- ``Class.method`` or ``function``: looked up in every module imported so far and every module
  imported later (:mod:`dlpt.capture.import_hooks`), except torch's, its own dependencies' (jinja2 has a
  ``generate`` too), the stdlib's and dlpt's: a class of that name defined in the module, or a
  function of that name defined in it. A bare name also matches methods of that name of classes
  defined there (``generate`` finds ``GenerationMixin.generate``). Every match is wrapped and
  listed in the session (``meta.steps.step_on_matched``), but only one of them makes the steps:
  the one the program actually calls as NAME, i.e. the first one called as an outermost call, the
  program's own code first (a function of the user's files wins over a library's while one is
  wrapped). Calls of the others are not steps; the session names the one chosen
  (``step_on_chosen``) and counts the others' calls (``step_on_ignored``), so a ``generate`` of
  pandas or PIL that the program happens to import cannot become its steps.
- Functions of the program's main script (``python -m dlpt --step-on step train.py``), nested
  ones included, are wrapped where they are defined: the CLI compiles the script with a decorator
  on each matching ``def`` (:func:`instrument_main`), and wraps the value of each assignment to a
  matching name (``g = torch.compile(f)`` for ``--step-on g``; a module, compiled or not, has its
  calls counted through its ``forward``).
- A class name (``--step-on GPT``) names the class's ``forward``: a call of the module.

Compiled functions count by the name the user wrote: ``--step-on f`` counts the calls of
``g = torch.compile(f)``, ``--step-on forward`` (or ``GPT.forward``, ``GPT``) the calls of
``torch.compile(model)`` and of ``model.compile()``'d models: the wrapper is the first frame
Dynamo is handed, and runs outside it (:mod:`dlpt.capture.compile.step_frames`). A named function
called *inside* compiled code is traced into the graph and not counted: name the compiled
function or an uncompiled caller instead. A generator or async function's "call" only creates
the generator or coroutine.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import sys
import threading
import time
from collections.abc import Callable
from types import CodeType, FunctionType, MethodType, ModuleType
from typing import Any

from dlpt.capture.compile.step_frames import run_outside_dynamo
from dlpt.capture.import_hooks import on_every_import, when_imported
from dlpt.errors import UsageError
from dlpt.model.source_files import file_kind

__all__ = ["StepOn", "parse_spec", "instrument_main", "main_def", "main_value"]

_MISSING = object()
_active: StepOn | None = None  # the StepOn whose main-script defs are being wrapped


def parse_spec(spec: str) -> tuple[str | None, list[str]]:
    """(module or None, qualname parts) of a step_on NAME; UsageError if it is not a name."""
    if not isinstance(spec, str):
        raise UsageError(
            f'step_on must be a function\'s name (a string such as "generate" or '
            f'"Model.forward"), got {type(spec).__name__} {spec!r:.60}'
        )
    module, _, qualname = spec.rpartition(":") if ":" in spec else (None, "", spec)
    parts = qualname.split(".")
    if not all(p.isidentifier() for p in parts) or (
        module is not None and not all(p.isidentifier() for p in module.split("."))
    ):
        raise UsageError(
            f"step_on {spec!r} is not a function name: use function, Class.method, "
            "module:function or module:Class.method"
        )
    return module or None, parts


class StepOn:
    """Wraps the functions ``spec`` names from :meth:`start` to :meth:`stop`; each outermost call
    on a thread calls ``begin()`` on entry and ``end(began_ns)`` on return (or raise)."""

    def __init__(self, spec: str, begin: Callable[[], None], end: Callable[[int], None]) -> None:
        self.spec = spec
        self.module, self.parts = parse_spec(spec)
        self._begin, self._end = begin, end
        self._local = threading.local()
        self._lock = threading.Lock()
        # (owner, attribute, what owner.__dict__ held before or _MISSING, our wrapper)
        self._wrapped: list[tuple[Any, str, Any, Any]] = []
        self._cancel: list[Callable[[], None]] = []
        self.matched: list[str] = []
        self._users: set[str] = set()  # matches defined in the user's own files
        self.chosen: str | None = None  # the match whose calls are the steps
        self.ignored: dict[str, int] = {}  # outermost calls of the other matches

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        global _active
        _active = self
        self._cancel.append(run_outside_dynamo(_step_call_code()))
        if self.module is not None:
            self._cancel.append(when_imported(self.module, self._resolve_in))
            return
        for module in list(sys.modules.values()):
            if isinstance(module, ModuleType):
                self._search(module)
        self._cancel.append(on_every_import(self._search))

    def stop(self) -> None:
        """Put every original back (unless the program replaced our wrapper since)."""
        global _active
        if _active is self:
            _active = None
        for cancel in self._cancel:
            cancel()
        self._cancel.clear()
        with self._lock:
            wrapped, self._wrapped = self._wrapped, []
        for owner, attr, before, wrapper in reversed(wrapped):
            if vars(owner).get(attr) is not wrapper:
                continue
            if before is _MISSING:
                delattr(owner, attr)
            else:
                setattr(owner, attr, before)

    # -- finding the functions ------------------------------------------------------------------

    def _resolve_in(self, module: ModuleType) -> None:
        """module:qualname: the attribute path in that module, whoever defined it."""
        owner: Any = module
        for part in self.parts[:-1]:
            owner = getattr(owner, part, None)
            if owner is None:
                return
        self._wrap_attr(owner, self.parts[-1], f"{module.__name__}:{'.'.join(self.parts)}")

    def _search(self, module: ModuleType) -> None:
        """A bare name: definitions of it in ``module`` if the module is not the framework's."""
        name = getattr(module, "__name__", "")
        file = getattr(module, "__file__", None)
        if name != "__main__" and (
            not isinstance(file, str)
            or file_kind(file) == "framework"
            or name.partition(".")[0].lower() in _torch_dependencies()
        ):
            return
        try:
            namespace = vars(module)
        except TypeError:
            return
        first, rest = self.parts[0], self.parts[1:]
        if not rest:
            fn = namespace.get(first)
            if isinstance(fn, FunctionType) and fn.__module__ == name:
                self._wrap_attr(module, first, f"{name}:{first}")
            for cls in [v for v in namespace.values() if isinstance(v, type)]:
                if cls.__module__ == name and first in vars(cls):
                    self._wrap_attr(cls, first, f"{name}:{cls.__qualname__}.{first}")
            named = namespace.get(first)
            if isinstance(named, type) and named.__module__ == name and "forward" in vars(named):
                self._wrap_attr(named, "forward", f"{name}:{named.__qualname__}.forward")
            return
        owner = namespace.get(first)
        if not isinstance(owner, type) or owner.__module__ != name:
            return
        for part in rest[:-1]:
            owner = getattr(owner, part, None)
            if owner is None:
                return
        self._wrap_attr(owner, rest[-1], f"{name}:{'.'.join(self.parts)}")

    def _wrap_attr(self, owner: Any, attr: str, where: str) -> None:
        try:
            before = vars(owner).get(attr, _MISSING)
        except TypeError:
            return
        value = before if before is not _MISSING else getattr(owner, attr, None)
        wrapper = self.wrap(value, where)
        if wrapper is None:
            return
        with self._lock:
            if any(o is owner and a == attr for o, a, _, _ in self._wrapped):
                return
            try:
                setattr(owner, attr, wrapper)
            except (AttributeError, TypeError):  # a built-in or frozen class
                return
            self._wrapped.append((owner, attr, before, wrapper))
            self.matched.append(where)

    # -- the wrapper ----------------------------------------------------------------------------

    def wrap(self, value: Any, where: str) -> Any:
        """A wrapper counting the calls of ``value`` (a function, staticmethod or classmethod)
        known as ``where``, or None for anything else."""
        if isinstance(value, (staticmethod, classmethod)):
            inner = self.wrap(value.__func__, where)
            return None if inner is None else type(value)(inner)
        if not isinstance(value, (FunctionType, MethodType)) or getattr(value, "__dlpt_step_on__", False):
            return None
        fn = value
        if where.startswith("__main__:") or file_kind(fn.__code__.co_filename) == "user":
            self._users.add(where)
        local, begin, end = self._local, self._begin, self._end
        compiling = _is_compiling()

        @functools.wraps(fn)
        def step_call(*args: Any, **kwargs: Any) -> Any:
            if local.__dict__.get("depth") or compiling() or not self._counts(where):
                return fn(*args, **kwargs)
            local.depth = 1
            began = time.perf_counter_ns()
            begin()
            try:
                return fn(*args, **kwargs)
            finally:
                local.depth = 0
                end(began)

        step_call.__dlpt_step_on__ = True  # type: ignore[attr-defined]
        return step_call

    def _counts(self, where: str) -> bool:
        """Whether an outermost call of ``where`` is a step: the first match called chooses (a
        match of the user's own code before a library's); the others' calls are counted apart."""
        with self._lock:
            if self.chosen is None and (where in self._users or not self._users):
                self.chosen = where
            if where == self.chosen:
                return True
            self.ignored[where] = self.ignored.get(where, 0) + 1
            return False

    def wrap_main_def(self, fn: Any, qualname: str) -> Any:
        """The decorator :func:`instrument_main` puts on the main script's matching defs."""
        wrapper = self.wrap(fn, f"__main__:{qualname}")
        if wrapper is None:
            return fn
        with self._lock:
            self.matched.append(f"__main__:{qualname}")
        return wrapper

    def wrap_main_value(self, value: Any, qualname: str) -> Any:
        """What :func:`instrument_main` assigns to a matching name: a function (``torch.compile``
        returns one) wrapped; a module (an ``OptimizedModule`` too) with its own ``forward``
        wrapped, put back at stop; anything else as it is."""
        if isinstance(value, (FunctionType, MethodType)):
            return self.wrap_main_def(value, qualname)
        if callable(value) and isinstance(getattr(value, "forward", None), (FunctionType, MethodType)):
            self._wrap_attr(value, "forward", f"__main__:{qualname}")
        return value


@functools.cache
def _torch_dependencies() -> frozenset[str]:
    """Top-level module names of the packages torch requires (sympy, jinja2, networkx...): part
    of the framework for a bare name's search, not code a user steps on."""
    try:
        requires = importlib.metadata.requires("torch") or []
    except importlib.metadata.PackageNotFoundError:
        return frozenset()
    return frozenset(re.split(r"[\s;<>=!~\[(]", r, maxsplit=1)[0].lower().replace("-", "_") for r in requires)


def _is_compiling() -> Callable[[], bool]:
    """torch.compiler.is_compiling (True while Dynamo traces; it never imports Dynamo)."""
    torch = sys.modules.get("torch")
    check = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    return check if callable(check) else (lambda: False)


def _step_call_code() -> CodeType:
    """The code of :meth:`StepOn.wrap`'s wrapper, shared by every wrapper it makes."""
    return next(
        c for c in StepOn.wrap.__code__.co_consts if isinstance(c, CodeType) and c.co_name == "step_call"
    )


def main_def(qualname: str) -> Callable[[Any], Any]:
    """The decorator on a main-script def: counts its calls while a step_on profile runs."""

    def decorate(fn: Any) -> Any:
        active = _active
        return fn if active is None else active.wrap_main_def(fn, qualname)

    return decorate


def main_value(qualname: str) -> Callable[[Any], Any]:
    """Around the value of a main-script assignment to a matching name: counts its calls while a
    step_on profile runs (:meth:`StepOn.wrap_main_value`)."""

    def wrap(value: Any) -> Any:
        active = _active
        return value if active is None else active.wrap_main_value(value, qualname)

    return wrap


def _matches(qualname: str, module: str | None, parts: list[str]) -> bool:
    if module is not None and module != "__main__":
        return False
    spec, plain = ".".join(parts), qualname.replace(".<locals>", "")
    return plain == spec or (module is None and plain.endswith("." + spec))


def instrument_main(tree: ast.Module, spec: str) -> ast.Module:
    """Put :func:`main_def` on every def of the main script's ``tree`` that ``spec`` names (by
    qualname, nested functions included; a named class's ``forward``), and :func:`main_value`
    around the value of every assignment to a name it names; the rest of the tree is untouched."""
    module, parts = parse_spec(spec)

    def visit(nodes: list[Any], prefix: str) -> None:
        for node in nodes:
            if isinstance(node, ast.ClassDef):
                forward = (
                    f"{prefix}{node.name}.forward" if _matches(prefix + node.name, module, parts) else ""
                )
                for d in node.body:
                    if isinstance(d, ast.FunctionDef) and d.name == "forward" and forward:
                        d.decorator_list.insert(0, _call("main_def", forward, d))
                visit(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qualname = prefix + node.name
                if _matches(qualname, module, parts):
                    node.decorator_list.insert(0, _call("main_def", qualname, node))
                visit(node.body, f"{qualname}.<locals>.")
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                _wrap_assigned(node, prefix, module, parts)
            else:  # if/for/while/with/try/match: the defs in their blocks
                for _, value in ast.iter_fields(node):
                    if isinstance(value, list):
                        visit(
                            [
                                v
                                for v in value
                                if isinstance(v, (ast.stmt, ast.excepthandler, ast.match_case))
                            ],
                            prefix,
                        )

    visit(tree.body, "")
    return tree


def _wrap_assigned(
    node: ast.Assign | ast.AnnAssign, prefix: str, module: str | None, parts: list[str]
) -> None:
    """``name = value`` with ``name`` matching: ``name = main_value(qualname)(value)``."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    names = [t.id for t in targets if isinstance(t, ast.Name) and _matches(prefix + t.id, module, parts)]
    if names and node.value is not None:
        node.value = ast.Call(
            func=_call("main_value", prefix + names[0], node), args=[node.value], keywords=[]
        )
        ast.copy_location(node.value, node.value.func)


def _call(function: str, qualname: str, at: ast.AST) -> ast.expr:
    """``__import__("dlpt.capture.step_on", fromlist=[function]).function(qualname)``: no name
    is added to the script's globals."""
    imported = ast.Call(
        func=ast.Name("__import__", ast.Load()),
        args=[ast.Constant("dlpt.capture.step_on")],
        keywords=[ast.keyword("fromlist", ast.List([ast.Constant(function)], ast.Load()))],
    )
    call = ast.Call(
        func=ast.Attribute(imported, function, ast.Load()), args=[ast.Constant(qualname)], keywords=[]
    )
    for node in ast.walk(call):  # every new node sits on the statement's line
        ast.copy_location(node, at)
    return call
