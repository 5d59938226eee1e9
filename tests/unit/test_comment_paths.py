"""Code comments stay true to the repository, as the documentation does (test_docs.py): every
repository path a comment or docstring names exists (``dlpt/...``, ``csrc/...``, ``tests/...``,
``tools/...``, ``bench/...``, ``examples/...``), every module it names by its dotted name
(``dlpt.trees.folding``, ``dlpt.analysis.suggest.rank``) is a module of dlpt or a name defined
in one, and inside csrc/ every file a comment names (``host/sampler.cpp``, ``tracer.cpp``) is a
file of csrc/. The documentation's dotted names are held to the same rule.

Only comments and docstrings are read: a string in code may name a path on purpose that is not
there (a test's missing file, a temporary folder)."""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize
from pathlib import Path

import pytest

from tests.offenders import assert_every_file
from tests.unit.test_docs import DOCS, ROOT, _exists, repository_paths

pytestmark = pytest.mark.torch_independent  # not rerun on CI's newest-torch leg (.ci/run)

CSRC = ROOT / "csrc"
SOURCE_DIRS = ("dlpt", "csrc", "tests", "tools", "bench", "examples", ".ci")
SKIPPED_PARTS = {"__pycache__", "node_modules", "golden", "fixtures", "results"}
#: How each kind of source file writes a comment.
HASH = re.compile(r"(?:^|\s)#(?!include|pragma|define|if|endif|else)(.*)$", re.M)
SLASH = re.compile(r"//(.*)$|/\*(.*?)\*/", re.M | re.S)


def _source_files() -> list[Path]:
    kinds = (".py", ".h", ".cpp", ".js", ".css", ".sh", ".mjs")
    out = [
        p
        for top in SOURCE_DIRS
        for p in (ROOT / top).rglob("*")
        if p.is_file()
        and not SKIPPED_PARTS & set(p.relative_to(ROOT).parts)
        and (p.suffix in kinds or p.name == "run")
    ]
    return sorted([*out, ROOT / "pyproject.toml", ROOT / "setup.py", ROOT / "CMakeLists.txt"])


def python_comments(text: str) -> str:
    """The comments and docstrings of a Python file."""
    parts = [
        tok.string
        for tok in tokenize.generate_tokens(io.StringIO(text).readline)
        if tok.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                parts.append(doc)
    return "\n".join(parts)


@functools.cache  # three rules read the same files' comments
def comments(path: Path) -> str:
    text = path.read_text()
    if path.suffix == ".py":
        return python_comments(text)
    if path.suffix in (".h", ".cpp", ".js", ".mjs", ".css"):
        return "\n".join(a or b for a, b in SLASH.findall(text))
    return "\n".join(HASH.findall(text))  # shell, TOML, CMake


FILES = _source_files()


def _id(p: Path) -> str:
    return str(p.relative_to(ROOT))


def stale_paths(path: Path) -> list[str]:
    """The repository paths the comments of ``path`` name that do not exist."""
    return [t for t in repository_paths(comments(path)) if not _exists(t, path.parent)]


def test_every_repository_path_a_comment_names_exists() -> None:
    assert_every_file(FILES, stale_paths, "comments name paths that do not exist", _id)


#: A file of the native core named inside csrc/: relative to csrc/ (``host/sampler.cpp``) or bare.
_CSRC_DIRS = "|".join(sorted(p.name for p in CSRC.iterdir() if p.is_dir()))
CSRC_PATH = re.compile(r"(?<![\w./-])((?:" + _CSRC_DIRS + r")/[\w./]*\w)")
CSRC_FILE = re.compile(r"(?<![\w./-])(\w+\.(?:h|cpp))\b")
CSRC_NAMES = {p.name for p in CSRC.rglob("*") if p.is_file()}
#: Headers from outside: what csrc/ includes with <...>, and the compiler's own that comments name.
EXTERNAL_HEADERS = {
    Path(m).name
    for p in CSRC.rglob("*")
    if p.is_file()
    for m in re.findall(r"#include <([^>]+)>", p.read_text())
} | {"x86intrin.h"}


def stale_native_files(path: Path) -> list[str]:
    """The files of csrc/ the comments of ``path`` (a file of csrc/) name that do not exist."""
    text = comments(path)
    return [t for t in CSRC_PATH.findall(text) if not ((CSRC / t).exists() or (path.parent / t).exists())] + [
        t for t in CSRC_FILE.findall(text) if t not in CSRC_NAMES | EXTERNAL_HEADERS
    ]


def test_every_native_file_a_csrc_comment_names_exists() -> None:
    native = [p for p in FILES if p.is_relative_to(CSRC)]
    assert_every_file(native, stale_native_files, "comments name native files that do not exist", _id)


DOTTED = re.compile(r"(?<![\w.])(dlpt(?:\.\w+)+)")


def _module_file(parts: list[str]) -> Path | None:
    base = ROOT.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py", base.with_suffix(".pyi")):
        if candidate.is_file():
            return candidate
    return None


def dotted_name_exists(name: str) -> bool:
    """Whether ``name`` is a dlpt module, or a module followed by a name defined in it (a
    function, a class, a constant; its attributes after that are not checked)."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        source = _module_file(parts[:i])
        if source is None:
            continue
        if i == len(parts):
            return True
        attr = parts[i]
        if source.name == "_C.pyi":  # the extension: its stub, or a name its bindings define
            return (
                any(f'"{attr}"' in p.read_text() for p in CSRC.rglob("*.cpp")) or attr in source.read_text()
            )
        return attr.startswith("__") or re.search(rf"\b{re.escape(attr)}\b", source.read_text()) is not None
    return False


def dotted_names(text: str) -> list[str]:
    return [m.rstrip(".") for m in DOTTED.findall(text)]


def _prose(path: Path) -> str:
    """What a rule reads of ``path``: a document whole, a source file's comments."""
    return path.read_text() if path.suffix == ".md" else comments(path)


def stale_modules(path: Path) -> list[str]:
    """The dlpt modules (and names in them) ``path`` names that do not exist."""
    return [n for n in dotted_names(_prose(path)) if not dotted_name_exists(n)]


def test_every_dlpt_module_named_exists() -> None:
    named = [p for p in FILES if p.suffix == ".py"] + DOCS
    assert_every_file(named, stale_modules, "names dlpt modules that do not exist", _id)


#: A path outside the repository: the machine's workspace, a sibling folder of the checkout.
OUTSIDE = re.compile(r"(?<![\w.-])(/work/\S*|\.\./shared\S*|shared/(?:bench|ANCHORS|DESIGN)\S*)")
#: Documentation outside docs/ that test_docs.py does not read.
OTHER_DOCS = sorted([ROOT / "bench" / "README.md", ROOT / "tests" / "schemas" / "README.md"])


def outside_paths(path: Path) -> list[str]:
    return OUTSIDE.findall(_prose(path))


def test_nothing_names_a_path_outside_the_repository() -> None:
    assert_every_file(
        FILES + DOCS + OTHER_DOCS, outside_paths, "names what a reader of the repository does not have", _id
    )


def test_the_checks_catch_what_is_stale() -> None:
    text = python_comments('"""See dlpt/nowhere.py."""\nx = "dlpt/gone.py"  # and csrc/none.h\n')
    assert sorted(repository_paths(text)) == ["csrc/none.h", "dlpt/nowhere.py"]  # not the string
    assert dotted_name_exists("dlpt.trees.folding")
    assert dotted_name_exists("dlpt.trees.folding.report_tree")
    assert dotted_name_exists("dlpt._C")
    assert dotted_name_exists("dlpt._C._testing")
    assert not dotted_name_exists("dlpt.insights")
    assert not dotted_name_exists("dlpt.trees.folding.no_such_function")
    assert comments(CSRC / "events.h").startswith(" The events")
    assert CSRC_FILE.findall("(tracer.cpp) and host/sampler.h") == ["tracer.cpp"]
    assert OUTSIDE.findall("see /work/shared/ANCHORS.md, ../shared/DESIGN.md; dlpt/shared/x") == [
        "/work/shared/ANCHORS.md,",
        "../shared/DESIGN.md;",
    ]
    assert CSRC_PATH.findall("(tracer.cpp) and host/sampler.h") == ["host/sampler.h"]


def test_every_offender_is_listed(tmp_path: Path) -> None:
    """A rule over every file fails once, naming each file that breaks it and what it found."""
    texts = {"a.py": "# dlpt/nowhere.py\n", "ok.py": "# dlpt/\n", "b.py": "# csrc/none.h, dlpt/gone.py\n"}
    files = [tmp_path / name for name in texts]
    for path in files:
        path.write_text(texts[path.name])
    with pytest.raises(AssertionError) as failed:
        assert_every_file(files, stale_paths, "comments name paths that do not exist", lambda p: p.name)
    assert str(failed.value).splitlines() == [
        "comments name paths that do not exist: 2 of 3 files",
        "  a.py: dlpt/nowhere.py",
        "  b.py: csrc/none.h, dlpt/gone.py",
    ]
