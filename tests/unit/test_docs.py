"""The documentation stays true to the repository: every repository path it names exists, every
relative link (and its #anchor) resolves inside the repository, the README stays short, and the
README's test command is the one CI runs."""

from __future__ import annotations

import glob
import re
from pathlib import Path

import pytest

from tests.offenders import assert_every_file

pytestmark = pytest.mark.torch_independent  # not rerun on CI's newest-torch leg (.ci/run)

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted(
    [
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        *(ROOT / "docs").glob("*.md"),
        *(ROOT / "docs").glob("*/*.md"),
    ]
)
README_MAX_LINES = 250

#: Top-level folders of this repository: a token starting with one of them names a repository path.
REPO_DIRS = ("dlpt", "csrc", "tests", "tools", "bench", "examples", "docs", ".ci")
#: Files at the repository's root, named bare.
ROOT_FILES = re.compile(
    r"(?<![\w./-])(setup\.py|pyproject\.toml|CMakeLists\.txt|MANIFEST\.in|requirements(?:-\w+)?\.txt|"
    r"README\.md|CONTRIBUTING\.md|CHANGELOG\.md|package\.json|eslint\.config\.mjs)(?![\w/-])"
)
_DIRS = "|".join(re.escape(d) for d in REPO_DIRS)
PATH_TOKEN = re.compile(r"(?<![\w./~$-])((?:" + _DIRS + r")/[\w./*{}<>,@+-]*)")
#: Paths under the repository's folders that the documentation names although they are not in
#: it: what a command creates there. (What users create elsewhere, `run.json`, `report.html`,
#: `train.py`, is not taken for a repository path at all: only tokens under REPO_DIRS and the
#: root files above are checked.)
NOT_IN_REPOSITORY = (
    "tests/unit/golden/NAME.txt",  # DLPT_UPDATE_GOLDEN=1 writes a new golden there
)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _strip(token: str) -> str:
    token = re.sub(r":\d+$", "", token)  # file.py:12
    return token.rstrip(".,;:)'`\"")


def _exists(token: str, base: Path) -> bool:
    if "<" in token or "{" in token:  # a placeholder (`.rank<N>`, `{rank}`): its folder must exist
        token = token[: min(i for i in (token.find("<"), token.find("{")) if i >= 0)]
        token = token[: token.rfind("/") + 1]
    for root in (ROOT, base):
        if any(ch in token for ch in "*?["):
            if glob.glob(str(root / token)):
                return True
        elif (root / token).exists():
            return True
    return False


def repository_paths(text: str) -> list[str]:
    found = [_strip(m.group(1)) for m in PATH_TOKEN.finditer(text)]
    found += [m.group(1) for m in ROOT_FILES.finditer(text)]
    return [t for t in found if t and t not in NOT_IN_REPOSITORY and not t.endswith("/.")]


def _name(doc: Path) -> str:
    return str(doc.relative_to(ROOT))


def test_every_repository_path_named_exists() -> None:
    def missing(doc: Path) -> list[str]:
        return [t for t in repository_paths(doc.read_text()) if not _exists(t, doc.parent)]

    assert_every_file(DOCS, missing, "documents name paths that do not exist", _name)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", lambda m: "_" if m.group(0) == "_" else "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    return {_slug(m.group(1)) for m in re.finditer(r"^#+ (.*)$", text, flags=re.M)}


def broken_links(doc: Path) -> list[str]:
    """The relative links of ``doc`` that lead nowhere or out of the repository."""
    text = re.sub(r"```.*?```", "", doc.read_text(), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)  # code spans: `kernel[grid](...)` is no link
    bad = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):  # a web address
            continue
        file, _, anchor = target.partition("#")
        path = (doc.parent / file).resolve() if file else doc
        nowhere = not path.is_relative_to(ROOT) or not path.exists()
        if nowhere or (anchor and path.suffix == ".md" and anchor not in _anchors(path)):
            bad.append(target)
    return bad


def test_relative_links_resolve_inside_the_repository() -> None:
    assert_every_file(DOCS, broken_links, "links that lead nowhere or out of the repository", _name)


def test_no_reference_outside_the_repository() -> None:
    for doc in DOCS:
        assert "../shared" not in doc.read_text(), doc


def test_readme_reads_in_five_minutes() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= README_MAX_LINES


def _readme_test_command() -> str:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Tests\n", 1)[1]
    return re.search(r"```bash\n(.*?)\n```", section, flags=re.S).group(1).strip()


def test_readme_test_command_is_what_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    body = re.search(r"^readme_tests\(\) \{\n(.*?)^\}", ci, flags=re.S | re.M).group(1)
    command = [line.strip() for line in body.splitlines() if '"$py"' in line]
    assert len(command) == 1
    assert command[0].replace('"$py"', "python3") == _readme_test_command()


def test_the_path_check_catches_a_missing_path() -> None:
    assert repository_paths("see `dlpt/nowhere.py` and tools/gen_cli_reference.py, run.json") == [
        "dlpt/nowhere.py",
        "tools/gen_cli_reference.py",
    ]
    assert not _exists("dlpt/nowhere.py", ROOT)
    assert _exists("tools/gen_cli_reference.py", ROOT)
    assert _exists("tests/unit/test_suggestion*.py", ROOT)
    assert (
        _slug("A timeline (--timeline), host time (--sample-hz)")
        == "a-timeline---timeline-host-time---sample-hz"
    )


def test_concepts_explains_every_metric() -> None:
    from dlpt.model.metrics import METRICS

    concepts = (ROOT / "docs" / "concepts.md").read_text()
    table = concepts.split("\n## Metrics\n", 1)[1].split("\n## ", 1)[0]
    rows = " ".join(line.split("|")[1] for line in table.splitlines() if line.startswith("| `"))
    assert [m for m in METRICS if f"`{m}`" not in rows] == []
