"""A project-local ``html.py`` next to the script (or in the working directory) is harmless: dlpt
imports its own modules before the program runs and not through the program's ``sys.path``, so
``--html`` works and dlpt never executes the project's file; the program still gets its own
``html.py`` when it imports it, as under plain python."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import Job, run_many, write

LOCAL_HTML = """\
print("the project's html.py ran", flush=True)
raise ImportError("the project's html.py, not the standard library's")
"""
TRAIN = "import torch\nx = torch.ones(4) + 1\nprint('trained', flush=True)\n"
OWN_HTML = """\
import torch
try:
    import html
except ImportError as e:
    print("program:", e, flush=True)
x = torch.ones(4) + 1
"""


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("own_imports")
    for d in (root, root / "proj"):
        write(d / "html.py", LOCAL_HTML)
        write(d / "train.py", TRAIN)
        write(d / "own.py", OWN_HTML)
    jobs = {
        "cwd": Job(["--no-report", "--html", "a.html", "train.py"], root),
        "script dir": Job(["--no-report", "--html", "b.html", "proj/train.py"], root),
        "program imports it": Job(["--no-report", "--html", "c.html", "own.py"], root),
        "program imports it/python": Job(["own.py"], root, dlpt=False),
    }
    return root, run_many(jobs)


@pytest.mark.parametrize(("case", "out"), [("cwd", "a.html"), ("script dir", "b.html")])
def test_a_local_html_py_neither_runs_nor_breaks_the_html_report(results: tuple, case: str, out: str) -> None:
    root, got = results
    r = got[case]
    assert r.rc == 0, r.err
    assert "the project's html.py ran" not in r.out + r.err
    assert r.out == "trained\n" and r.err == f"dlpt: wrote HTML report to {out}\n"
    assert (root / out).read_text().lstrip().lower().startswith("<!doctype html>")


def test_the_program_still_gets_its_own_html_py(results: tuple) -> None:
    root, got = results
    r, plain = got["program imports it"], got["program imports it/python"]
    assert r.rc == plain.rc == 0, r.err
    assert r.out == plain.out  # the project's html.py ran once, for the program, as with python
    assert "program: the project's html.py" in r.out
    assert (root / "c.html").exists() and "could not write" not in r.err, r.err
