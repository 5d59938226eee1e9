"""Imports point downward (see README "Layout"): the data model knows nothing of capture or
reports, capture and compile never reach into the report side, renderers never into capture or
the profiler, the HTML report, exports and dlpt diff sit above the terminal report and below the
CLI, only the native bridge loads ``dlpt._C``, and no module imports another's private names.
Function-level imports count too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import dlpt

PKG = Path(dlpt.__file__).parent

# What each part of dlpt may import from dlpt (by module-name prefix; the longest prefix wins).
ALLOWED: dict[str, tuple[str, ...]] = {
    "dlpt.errors": (),
    "dlpt.log": (),
    "dlpt.source_files": (),
    "dlpt.steps": ("dlpt.import_hooks",),
    "dlpt.safe_files": ("dlpt.errors",),
    "dlpt.session_schema": (),
    "dlpt.gc_pause": (),
    "dlpt.session": ("dlpt.errors", "dlpt.gc_pause", "dlpt.safe_files", "dlpt.session_schema"),
    "dlpt.tree": ("dlpt.session",),
    "dlpt.processors": ("dlpt.errors", "dlpt.source_files", "dlpt.tree", "dlpt.session"),
    # Forward/backward/compiled context bits of tree nodes: plain tree data, read by the folded
    # table (dlpt.display_tree) and the outputs that show them (HTML report, dlpt diff).
    "dlpt.contexts": ("dlpt.tree",),
    "dlpt.display_tree": ("dlpt.contexts", "dlpt.processors", "dlpt.tree", "dlpt.session"),
    "dlpt.capture": (
        "dlpt.capture",
        "dlpt.errors",
        "dlpt.source_files",
        "dlpt.safe_files",
        "dlpt.log",
        "dlpt._C",
    ),
    "dlpt.compile": ("dlpt.compile", "dlpt.errors", "dlpt.source_files", "dlpt.log", "dlpt.import_hooks"),
    # Renderers read the compile events of a session (plain data), never the torch-facing parts.
    "dlpt.renderers": (
        "dlpt.renderers",
        "dlpt.display_tree",
        "dlpt.processors",
        "dlpt.tree",
        "dlpt.session",
        "dlpt.errors",
        "dlpt.compile.events",
        "dlpt.compile.resume",
    ),
    # Why is this line slow: analysis of a session above the renderers (its views use them) and the
    # folded table (it reads the report's tree), below the report. Its capture half (signatures,
    # FLOP formulas, bytes, the pinned-copy probe) imports nothing from the report side, so
    # dlpt.assemble can use it at session build time.
    "dlpt.insights": (
        "dlpt.insights",
        "dlpt.session",
        "dlpt.tree",
        "dlpt.processors",
        "dlpt.display_tree",
        "dlpt.renderers",
        "dlpt.compile.events",
    ),
    "dlpt.insights.peaks": (),
    "dlpt.insights.signature": (),
    "dlpt.insights.probe": (),
    "dlpt.insights.flops": ("dlpt.insights.signature",),
    "dlpt.insights.traffic": ("dlpt.insights.flops", "dlpt.insights.signature"),
    "dlpt.insights.annotate": ("dlpt.insights.flops", "dlpt.insights.signature", "dlpt.insights.traffic"),
    "dlpt.report": (
        "dlpt.ranks.comm",
        "dlpt.ranks.comm_view",
        "dlpt.gc_pause",
        "dlpt.insights",
        "dlpt.renderers",
        "dlpt.display_tree",
        "dlpt.processors",
        "dlpt.tree",
        "dlpt.session",
        "dlpt.errors",
        "dlpt.compile.events",
    ),
    # The outputs besides the terminal report (HTML report, exports, dlpt diff) start from
    # report.report_tree and reuse the renderers' formatting; capture, compile, the data model
    # and the terminal report never import them. They write files by dlpt.safe_files' rules.
    "dlpt.source_text": (),
    "dlpt.exports": (
        "dlpt",  # __version__, for the exporter field
        "dlpt.compile.resume",
        "dlpt.errors",
        "dlpt.processors",
        "dlpt.report",
        "dlpt.safe_files",
        "dlpt.session",
        "dlpt.tree",
    ),
    "dlpt.diff": (
        "dlpt.compile.resume",
        "dlpt.contexts",
        "dlpt.processors",
        "dlpt.report",
        "dlpt.session",
        "dlpt.source_text",
        "dlpt.tree",
    ),
    "dlpt.diff_view": ("dlpt.compile.resume", "dlpt.diff", "dlpt.processors", "dlpt.renderers"),
    "dlpt.html": (
        "dlpt.html",
        "dlpt.insights",
        "dlpt.ranks.comm_view",
        "dlpt.compile.events",
        "dlpt.compile.resume",
        "dlpt.contexts",
        "dlpt.diff",
        "dlpt.processors",
        "dlpt.renderers",
        "dlpt.report",
        "dlpt.safe_files",
        "dlpt.session",
        "dlpt.source_text",
        "dlpt.tree",
    ),
    "dlpt.outputs": ("dlpt.errors", "dlpt.exports", "dlpt.html", "dlpt.safe_files", "dlpt.session"),
    "dlpt.diff_cli": (
        "dlpt.errors",
        "dlpt.outputs",
        "dlpt.processors",
        "dlpt.diff",
        "dlpt.diff_view",
        "dlpt.html",
        "dlpt.session",
    ),
    # Many ranks (dlpt.ranks): the capture half (rank detection, per-rank paths, the names of
    # communication, the wrappers of Python-level collectives, marking communication in the
    # node table) imports nothing from the report side, so the profiler and the session
    # assembly can use it; the report half (one rank's communication, the cross-rank report)
    # sits above the terminal report, like dlpt diff.
    "dlpt.ranks.env": (),
    "dlpt.ranks.paths": ("dlpt.errors",),
    "dlpt.ranks.comm": (),
    "dlpt.ranks.annotate": ("dlpt.ranks.comm",),
    "dlpt.ranks.pycomm": ("dlpt.capture.native", "dlpt.ranks.env"),
    "dlpt.ranks.comm_view": (
        "dlpt.ranks.comm",
        "dlpt.ranks.annotate",
        "dlpt.renderers",
        "dlpt.processors",
        "dlpt.tree",
        "dlpt.session",
    ),
    "dlpt.ranks.gather": ("dlpt.errors", "dlpt.session", "dlpt.ranks.paths"),
    "dlpt.ranks": (
        "dlpt.ranks",
        "dlpt.report",
        "dlpt.renderers",
        "dlpt.display_tree",
        "dlpt.processors",
        "dlpt.tree",
        "dlpt.session",
        "dlpt.errors",
        "dlpt.gc_pause",
        "dlpt.compile.resume",
        "dlpt.diff",
    ),
    "dlpt.scope": ("dlpt.capture.native",),
    "dlpt.import_hooks": (),
    "dlpt.step_on": ("dlpt.errors", "dlpt.import_hooks", "dlpt.source_files"),
    "dlpt.assemble": (
        "dlpt",
        "dlpt.capture",
        "dlpt.compile",
        "dlpt.insights.annotate",
        "dlpt.ranks.annotate",
        "dlpt.session",
    ),
    "dlpt.profiler": (
        "dlpt",
        "dlpt.assemble",
        "dlpt.capture",
        "dlpt.insights.annotate",  # the op names --flops records
        "dlpt.insights.stop",  # suggestions and the pinned-copy probe, once the session is built
        "dlpt.compile",
        "dlpt.errors",
        "dlpt.session",
        "dlpt.step_on",
        "dlpt.steps",
        "dlpt.report",
        "dlpt.ranks.env",
        "dlpt.ranks.paths",
        "dlpt.ranks.pycomm",
    ),
    "dlpt.cli": (
        "dlpt",
        "dlpt.errors",
        "dlpt.processors",
        "dlpt.report",
        "dlpt.session",
        "dlpt.outputs",
        "dlpt.diff_cli",
        "dlpt.launch",
        "dlpt.signals",
        "dlpt.step_on",
        "dlpt.ranks",
    ),
    # Running the program as python would (argv, sys.path[0], __main__, tracebacks).
    "dlpt.launch": ("dlpt.errors", "dlpt.step_on"),
    "dlpt.signals": (),
    "dlpt.__main__": ("dlpt.cli",),
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    rel = Path(*name.split("."))
    return (PKG.parent / rel).with_suffix(".py").exists() or (PKG.parent / rel / "__init__.py").exists()


def dlpt_imports(path: Path) -> list[tuple[str, str]]:
    """(imported dlpt module, name) for every import in the file; name "" for ``import x``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(a.name, "") for a in node.names if a.name.split(".")[0] == "dlpt"]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "dlpt":
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                # `from dlpt import log` imports a module; `from dlpt._C` is the extension.
                out.append((sub, "") if is_module(sub) or sub == "dlpt._C" else (node.module, a.name))
    return out


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


@pytest.mark.parametrize("path", MODULES, ids=module_name)
def test_imports_point_downward(path: Path) -> None:
    module = module_name(path)
    allowed = allowed_for(module)
    wrong = sorted({t for t, _ in dlpt_imports(path) if not within(t, allowed)})
    assert not wrong, f"{module} imports {wrong}; allowed: {allowed}"


@pytest.mark.parametrize("path", MODULES, ids=module_name)
def test_no_private_names_cross_modules(path: Path) -> None:
    private = [
        f"{t}.{n}" if n else t
        for t, n in dlpt_imports(path)
        if is_private(n) or is_private(t.rsplit(".", 1)[-1])
    ]
    if (
        module_name(path) == "dlpt.capture.native"
    ):  # the sole importer of the native core (and its stub's types)
        assert private and all(p == "dlpt._C" or p.startswith("dlpt._C.") for p in private)
    else:
        assert private == []


def test_the_layer_table_names_real_modules() -> None:
    assert all(is_module(k) for k in ALLOWED if k != "dlpt._C")
