"""What a new user meets first on the command line: ``-c`` code shown as lines with their text,
``-m`` modules named by relative path, ``-V``, examples in ``--help``, ``--open`` (with a browser
and without one), and two unrelated sessions given to ``--load`` refused with a pointer to
``dlpt diff``."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

import dlpt
from dlpt.model.session import Session
from tests import sessions as S

from .helpers import Job, Result, run_many, write

CODE = """\
import torch
x = torch.ones(64, 64)
for _ in range(3):
    y = x @ x  # the matmul line
"""
MODULE = """\
import sys, torch
x = torch.ones(64, 64)
for _ in range(3):
    y = x @ x
print("argv0", sys.argv[0], flush=True)
"""
# A stand-in for a browser: $BROWSER names a command that gets the address (webbrowser's contract).
BROWSER = f"""\
#!{sys.executable}
import sys
open(sys.argv[0] + ".opened", "w").write(sys.argv[1])
"""


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("first_hour")
    write(root / "pkg" / "__init__.py", "")
    write(root / "pkg" / "run.py", MODULE)
    write(root / "browser", BROWSER)
    os.chmod(root / "browser", os.stat(root / "browser").st_mode | stat.S_IXUSR)
    Session.from_dict(S.gpt_eager()).save(root / "a.json")
    Session.from_dict(S.gpt_compiled()).save(root / "b.json")
    no_display = {"DISPLAY": None, "WAYLAND_DISPLAY": None, "BROWSER": None}
    jobs = {
        "code": Job(["-o", "c.json", "--threshold", "0", "-c", CODE], root),
        "code_fails": Job(["--no-report", "-o", "f.json", "-c", "x = 1\n1 / 0\n"], root),
        "plain_fails": Job(["-c", "x = 1\n1 / 0\n"], root, dlpt=False),
        "module": Job(["-o", "m.json", "-m", "pkg.run"], root),
        "version": Job(["-V"], root),
        "help": Job(["--help"], root),
        "unrelated": Job(["--load", "a.json", "b.json"], root),
        "open": Job(
            ["--load", "a.json", "--html", "a.html", "--open", "--no-report"],
            root,
            env={
                "BROWSER": str(root / "browser"),
            },
        ),
        "no_browser": Job(
            ["--load", "a.json", "--html", "n.html", "--open", "--no-report"], root, env=no_display
        ),
        "open_alone": Job(["--open", "-c", "pass"], root),
    }
    return {"root": root, "results": run_many(jobs)}


def test_code_lines_are_shown_with_their_text(env: dict) -> None:
    r: Result = env["results"]["code"]
    assert r.rc == 0, r.err
    assert "<string>:4 <module>  y = x @ x  # the matmul line" in r.out
    sources = json.loads((env["root"] / "c.json").read_text())["meta"]["sources"]
    assert sources["<string>"]["4"] == "    y = x @ x  # the matmul line"


def test_code_tracebacks_stay_as_python_prints_them(env: dict) -> None:
    ours: Result = env["results"]["code_fails"]
    plain: Result = env["results"]["plain_fails"]
    assert ours.rc == plain.rc == 1
    assert ours.err.endswith(plain.err), (ours.err, plain.err)  # no source line python would not show


def test_module_is_named_by_its_relative_path(env: dict) -> None:
    r: Result = env["results"]["module"]
    root: Path = env["root"]
    assert r.rc == 0, r.err
    assert f"argv0 {root / 'pkg' / 'run.py'}" in r.out  # the program still sees python's argv
    report = r.out[r.out.index("╭") :]
    assert "dlpt  pkg/run.py" in report and str(root) not in report
    meta = json.loads((root / "m.json").read_text())["meta"]
    assert meta["argv"][0] == str(root / "pkg" / "run.py") and meta["cwd"] == str(root)


def test_version_and_examples(env: dict) -> None:
    r: Result = env["results"]["version"]
    assert r.rc == 0 and r.out.strip() == f"dlpt {dlpt.__version__}"
    h: Result = env["results"]["help"]
    assert h.rc == 0 and "examples:" in h.out and "dlpt diff before.json after.json" in h.out
    assert "%load_ext dlpt" in h.out


def test_unrelated_sessions_are_not_ranks(env: dict) -> None:
    r: Result = env["results"]["unrelated"]
    assert r.rc == 2 and r.out == ""
    assert r.err.strip() == (
        "dlpt: a.json and b.json are two separate runs, not ranks of one job (neither was recorded "
        "as a rank); to compare them: dlpt diff a.json b.json"
    )


def test_open_hands_the_report_to_the_browser(env: dict) -> None:
    root: Path = env["root"]
    r: Result = env["results"]["open"]
    assert r.rc == 0, r.err
    assert (root / "browser.opened").read_text() == (root / "a.html").resolve().as_uri()


def test_open_without_a_browser_is_one_line_not_a_failure(env: dict) -> None:
    root: Path = env["root"]
    r: Result = env["results"]["no_browser"]
    assert r.rc == 0 and (root / "n.html").is_file()
    uri = (root / "n.html").resolve().as_uri()
    assert f"dlpt: --open: no browser here (no $DISPLAY or $BROWSER); the report is at {uri}" in r.err
    alone: Result = env["results"]["open_alone"]
    assert (
        alone.rc == 2
        and alone.err.strip() == "dlpt: error: --open opens the HTML report: give --html FILE too"
    )
