"""Imports follow the pipeline (docs/architecture.md, "Layers", generated from ALLOWED below and
held to it by test_layout_doc.py): files <- model <- capture, trees <- analysis <- views <-
renderers <- finish <- api <- frontend <- cli (notebook beside it).

- ``dlpt.files`` (every file dlpt reads or writes by path, and its rules) imports only the
  errors; ``dlpt.model`` (the session, its tree, what a metric is and the naming knowledge every
  stage shares) imports nothing else of dlpt but the files.
- ``dlpt.capture`` (what runs while the program runs) builds sessions: it never imports the
  tree operations, analysis, a view or a renderer; only its native bridge loads ``dlpt._C``.
- ``dlpt.trees`` (the tree operations: folding, pruning, inverting, flattening) build on the
  model; ``dlpt.analysis`` (facts derived from a session, the report model) on them: it never
  captures and never prints, and nothing in model, capture, analysis or the views imports rich.
- ``dlpt.views`` (one per report kind: a run, a job's ranks, a comparison) are the only door
  into the analysis: renderers and front ends import the views and the model, never the
  analysis or the tree operations.
- ``dlpt.renderers`` (terminal, HTML, exports) format the views; the HTML report and the
  exports never reach into the terminal renderer.
- ``dlpt.finish`` (the end of capture) under ``dlpt.api`` (``dlpt.profile``, whose stop it is);
  ``dlpt.frontend`` (a run's options, files and one ending) under the front ends: ``dlpt.cli``
  on top and ``dlpt.notebook`` (the IPython magic) beside it, never importing it.
- Nothing imports the package face (``dlpt/__init__.py``, above everything): the version is
  ``dlpt._version``.

No module imports another's private names. Function-level imports count too.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

import dlpt
from tests.offenders import assert_every_file

pytestmark = pytest.mark.torch_independent  # not rerun on CI's newest-torch leg (.ci/run)

PKG = Path(dlpt.__file__).parent

_BASE = ("dlpt.errors", "dlpt.log", "dlpt._version")
_FILES = ("dlpt.files", *_BASE)
_MODEL = ("dlpt.model", *_FILES)
_TREES = ("dlpt.trees", *_MODEL)
_VIEWS = ("dlpt.views", *_MODEL)  # what renderers and front ends read: the views and the model
_CLI = "dlpt.cli"

# What each part of dlpt may import from dlpt (by module-name prefix; the longest prefix wins).
# No part imports the package face ("dlpt"): it sits above everything (test_nothing_imports_the_face).
ALLOWED: dict[str, tuple[str, ...]] = {
    "dlpt.errors": (),
    "dlpt.log": (),
    "dlpt._version": (),
    # File plumbing, below the model (sessions are saved and loaded through it).
    "dlpt.files": _FILES,
    "dlpt.files.own_files": (),
    "dlpt.files.write_target": ("dlpt.errors",),
    "dlpt.files.safe_files": ("dlpt.errors", "dlpt.files.own_files", "dlpt.files.write_target"),
    "dlpt.files.rank_paths": ("dlpt.errors",),
    "dlpt.model": _MODEL,
    # Inside the model, the session format is the bottom: the tree and everything that reads it
    # build on it, never the other way round.
    # The typed meta (dataclasses) is checked by shape; schema names the checks the loader runs.
    "dlpt.model.shape": ("dlpt.model.safe_text",),
    "dlpt.model.meta": ("dlpt.model.shape",),
    "dlpt.model.schema": ("dlpt.model.meta", "dlpt.model.shape"),
    "dlpt.model.safe_text": (),
    "dlpt.model.gc_pause": (),
    "dlpt.model.units": (),
    "dlpt.model.session": (
        "dlpt.errors",
        "dlpt.model.gc_pause",
        "dlpt.model.meta",
        "dlpt.files.safe_files",
        "dlpt.model.schema",
    ),
    # The tree reads its nodes' extras typed (dlpt.model.meta.Extras; schema names their keys).
    "dlpt.model.tree": ("dlpt.model.session", "dlpt.model.meta", "dlpt.model.schema"),
    "dlpt.capture": ("dlpt.capture", "dlpt._C", *_MODEL),
    # The tree operations every report starts from; capture never uses them.
    "dlpt.trees": _TREES,
    "dlpt.analysis": ("dlpt.analysis", *_TREES),
    # One view per report kind (a run, a job's ranks, a comparison): the renderers' and front
    # ends' only door into the analysis.
    "dlpt.views": ("dlpt.views", "dlpt.analysis", *_TREES),
    # Answers for scripts and agents (dlpt query, the MCP server's tools, dlpt verify's verdict):
    # a view of its own kind, the analysis as a versioned JSON schema.
    "dlpt.query": ("dlpt.query", "dlpt.views", "dlpt.analysis", *_TREES),
    # Renderers format views and the model: never the analysis, never the tree operations.
    "dlpt.renderers": ("dlpt.renderers", *_VIEWS),
    # The page and the exports format the views, never the terminal's renderer.
    "dlpt.renderers.html": ("dlpt.renderers.html", *_VIEWS),
    "dlpt.renderers.exports": ("dlpt.renderers.exports", *_VIEWS),
    # The one ending of a run, under the API (whose stop it is) and the front ends.
    "dlpt.finish": ("dlpt.capture", "dlpt.renderers", *_VIEWS),
    "dlpt.api": ("dlpt.finish", "dlpt.capture", "dlpt.renderers", *_VIEWS),
    # What the front ends share, below both: a run's options, its files, its one ending.
    "dlpt.frontend": ("dlpt.frontend", "dlpt.finish", "dlpt.capture", "dlpt.renderers", *_VIEWS),
    _CLI: (
        _CLI,
        "dlpt.frontend",
        "dlpt.query",
        "dlpt.api",
        "dlpt.finish",
        "dlpt.capture",
        "dlpt.renderers",
        *_VIEWS,
    ),
    # The notebook magic is a front end beside the command line: it never imports it.
    "dlpt.notebook": (
        "dlpt.notebook",
        "dlpt.frontend",
        "dlpt.api",
        "dlpt.finish",
        "dlpt.capture",
        "dlpt.renderers",
        *_VIEWS,
    ),
    "dlpt.__main__": ("dlpt.cli",),
}

#: Parts of dlpt that never print or draw: no rich.
NO_RICH = (
    "dlpt.files",
    "dlpt.model",
    "dlpt.trees",
    "dlpt.capture",
    "dlpt.analysis",
    "dlpt.views",
    "dlpt.query",
    "dlpt.api",
)


def module_name(path: Path) -> str:
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    rel = Path(*name.split("."))
    return (PKG.parent / rel).with_suffix(".py").exists() or (PKG.parent / rel / "__init__.py").exists()


@functools.cache  # every rule below reads every module
def syntax(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


@functools.cache
def dlpt_imports(path: Path) -> tuple[tuple[str, str], ...]:
    """(imported dlpt module, name) for every import in the file; name "" for ``import x``."""
    out = []
    for node in ast.walk(syntax(path)):
        if isinstance(node, ast.Import):
            out += [(a.name, "") for a in node.names if a.name.split(".")[0] == "dlpt"]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "dlpt":
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                # `from dlpt import log` imports a module; `from dlpt._C` is the extension.
                out.append((sub, "") if is_module(sub) or sub == "dlpt._C" else (node.module, a.name))
    return tuple(out)


MODULES = sorted(p for p in PKG.rglob("*.py") if module_name(p) != "dlpt")


def allowed_for(module: str) -> tuple[str, ...]:
    key = max((k for k in ALLOWED if module == k or module.startswith(k + ".")), key=len, default=None)
    assert key is not None, f"{module} is not placed in a layer: add it to ALLOWED"
    return ALLOWED[key]


def within(target: str, prefixes: tuple[str, ...]) -> bool:
    # "dlpt" stands for the package itself (its public API), not for everything below it.
    return any(target == p or (p != "dlpt" and target.startswith(p + ".")) for p in prefixes)


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__")


def wrong_imports(path: Path) -> list[str]:
    """The dlpt modules ``path`` imports that its layer may not."""
    module = module_name(path)
    if not any(module == k or module.startswith(k + ".") for k in ALLOWED):
        return ["in no layer: add it to ALLOWED"]
    allowed = allowed_for(module)
    return [t for t, _ in dlpt_imports(path) if not within(t, allowed)]


def test_imports_point_downward() -> None:
    assert_every_file(MODULES, wrong_imports, "imports a layer may not (ALLOWED)", module_name)


def private_imports(path: Path) -> list[str]:
    """Private names of other modules ``path`` imports (dlpt.capture.native: those not of dlpt._C,
    or none at all, since it is the sole importer of the native core and its stub's types)."""
    private = [
        f"{t}.{n}" if n else t
        for t, n in dlpt_imports(path)
        # dlpt._version: private to the package (not its API), shared by every layer on purpose.
        if is_private(n) or (is_private(t.rsplit(".", 1)[-1]) and t != "dlpt._version")
    ]
    if module_name(path) == "dlpt.capture.native":
        native = [p for p in private if p == "dlpt._C" or p.startswith("dlpt._C.")]
        return [p for p in private if p not in native] or ([] if native else ["no import of dlpt._C"])
    return private


def test_no_private_names_cross_modules() -> None:
    assert_every_file(MODULES, private_imports, "imports private names of other modules", module_name)


def face_imports(path: Path) -> list[str]:
    return [t for t, _ in dlpt_imports(path) if t == "dlpt"]


def test_nothing_imports_the_face() -> None:
    """The package face (dlpt/__init__.py) imports the API above everything: a module below it
    importing ``dlpt`` (its ``__version__``, ``dlpt._C`` through it) is an arrow back up."""
    assert_every_file(MODULES, face_imports, "imports the package face", module_name)


def test_no_layer_may_import_the_face() -> None:
    assert [k for k, v in ALLOWED.items() if "dlpt" in v] == []


def test_renderers_and_front_ends_read_the_views_not_the_analysis() -> None:
    """The views are the one door into the analysis: no renderer or front end may import the
    analysis or the tree operations (a type they format is named by its view's module)."""
    readers = [
        k for k in ALLOWED if k.split(".")[1] in ("renderers", "finish", "api", "frontend", "cli", "notebook")
    ]
    assert len(readers) >= 8
    assert [k for k in readers if {"dlpt.analysis", "dlpt.trees"} & set(ALLOWED[k])] == []
    assert all("dlpt.views" in ALLOWED[k] for k in readers)


def test_the_notebook_stands_beside_the_command_line() -> None:
    """What both front ends share is below them (dlpt.frontend): the notebook never imports the
    command line."""
    assert _CLI not in ALLOWED["dlpt.notebook"]


def test_the_layer_table_names_real_modules() -> None:
    assert all(is_module(k) for k in ALLOWED if k != "dlpt._C")


def rich_imports(path: Path) -> list[str]:
    """The rich modules ``path`` imports, when it is in a part of dlpt that never prints (NO_RICH)."""
    module = module_name(path)
    if not any(module == p or module.startswith(p + ".") for p in NO_RICH):
        return []
    tree = syntax(path)
    return [
        a.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for a in node.names
        if a.name.split(".")[0] == "rich"
    ] + [
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "rich"
    ]


def test_model_capture_and_analysis_never_import_rich() -> None:
    assert_every_file(MODULES, rich_imports, "imports rich where nothing prints", module_name)
