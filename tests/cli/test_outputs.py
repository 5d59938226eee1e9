"""``--html`` and ``--export`` with a run and with ``--load``, and ``dlpt diff``, end to end:
outputs written where the user meant (even if the program changes directory), the terminal
report still printed unless ``--no-report``, bad paths caught before the program runs, and bad
input answered with one line and exit status 2."""

from __future__ import annotations

import json

import pytest

from .helpers import Job, Result, run_many, write

PROGRAM = """\
import os
import torch
x = torch.randn(64, 64)
for _ in range(3):
    y = x @ x  # the matmul line
    z = torch.relu(y)
os.makedirs("elsewhere", exist_ok=True)
os.chdir("elsewhere")  # outputs must still land where the command line said
"""


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("outputs")
    write(root / "prog.py", PROGRAM)
    write(root / "marker.py", "open('marker.ran', 'w').write('ran')\n")
    write(root / "diff", "open('diff.ran', 'w').write('ran')\n")  # a script literally named diff
    write(root / "garbage.json", "not json\n")
    first = run_many(
        {
            "run": Job(
                [
                    "--html",
                    "r.html",
                    "--export",
                    "speedscope",
                    "s.json",
                    "--export",
                    "folded",
                    "f.txt",
                    "-o",
                    "p.json",
                    "prog.py",
                ],
                root,
            ),
            "run quiet": Job(["--no-report", "--html", "q.html", "prog.py"], root),
            "html bad dir": Job(["--html", "no/such/dir/r.html", "marker.py"], root),
            "export bad format": Job(["--export", "svg", "x.svg", "marker.py"], root),
            "export bad dir": Job(["--export", "folded", "no/such/f.txt", "marker.py"], root),
            "same file twice": Job(["--html", "a.out", "--export", "folded", "a.out", "marker.py"], root),
            "export missing file": Job(["--export", "folded"], root),
            "script named diff": Job(["./diff"], root),
        }
    )
    second = run_many(
        {
            "load outputs": Job(
                ["--load", "p.json", "--no-report", "--html", "l.html", "--export", "folded", "l.txt"], root
            ),
            "load html and report": Job(["--load", "p.json", "--html", "l2.html"], root),
            "load no-report alone": Job(["--load", "p.json", "--no-report"], root),
            "diff": Job(["diff", "p.json", "p.json", "--html", "d.html", "--metric", "cpu"], root),
            "diff ascii": Job(["diff", "p.json", "p.json", "--ascii", "--threshold", "0"], root),
            "diff missing file": Job(["diff", "missing.json", "p.json"], root),
            "diff garbage": Job(["diff", "p.json", "garbage.json"], root),
            "diff one file": Job(["diff", "p.json"], root),
            "diff bad threshold": Job(["diff", "p.json", "p.json", "--threshold", "200"], root),
            "diff bad html dir": Job(["diff", "p.json", "p.json", "--html", "no/such/d.html"], root),
        }
    )
    return {"root": root, "results": {**first, **second}}


def _one_line_exit_2(r: Result, needle: str) -> None:
    lines = r.err.strip().splitlines()
    assert r.rc == 2, (r.rc, r.err)
    assert len(lines) == 1 and lines[0].startswith("dlpt: ") and needle in lines[0], r.err
    assert "Traceback" not in r.err + r.out


def test_run_writes_html_and_exports_next_to_the_report(env: dict) -> None:
    root, r = env["root"], env["results"]["run"]
    assert r.rc == 0, r.err
    assert "prog.py" in r.out and "aten::matmul" in r.out, "the terminal report is still printed"
    for msg in (
        "wrote HTML report to r.html",
        "wrote speedscope export to s.json",
        "wrote folded export to f.txt",
    ):
        assert msg in r.err
    html = (root / "r.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and 'id="dlpt-data"' in html
    assert not (root / "elsewhere" / "r.html").exists()
    session = json.loads((root / "p.json").read_text())
    cpu_total = sum(n["m"].get("cpu_ns", 0) for n in session["nodes"])
    folded = (root / "f.txt").read_text().splitlines()
    assert sum(int(line.rsplit(" ", 1)[1]) for line in folded) == cpu_total  # no GPU: CPU op time
    assert any("prog.py:5 <module>" in line for line in folded), "the matmul line is a frame"
    speedscope = json.loads((root / "s.json").read_text())
    assert speedscope["profiles"][speedscope["activeProfileIndex"]]["endValue"] == cpu_total


def test_no_report_writes_outputs_only(env: dict) -> None:
    root, r = env["root"], env["results"]["run quiet"]
    assert r.rc == 0, r.err
    assert r.out == "" and (root / "q.html").stat().st_size > 10_000


@pytest.mark.parametrize(
    "name, needle",
    [
        ("html bad dir", "--html no/such/dir/r.html"),
        ("export bad format", "svg"),
        ("export bad dir", "--export folded no/such/f.txt"),
        ("same file twice", "a.out"),
        ("export missing file", "--export"),
    ],
)
def test_bad_outputs_fail_before_the_program_runs(env: dict, name: str, needle: str) -> None:
    _one_line_exit_2(env["results"][name], needle)
    assert not (env["root"] / "marker.ran").exists()


def test_a_script_named_diff_runs_as_dot_slash_diff(env: dict) -> None:
    r = env["results"]["script named diff"]
    assert r.rc == 0, r.err
    assert (env["root"] / "diff.ran").read_text() == "ran"


def test_load_renders_outputs_with_or_without_the_report(env: dict) -> None:
    root, results = env["root"], env["results"]
    quiet = results["load outputs"]
    assert quiet.rc == 0 and quiet.out == "", quiet.err
    assert (root / "l.html").exists() and (root / "l.txt").read_text().strip()
    loud = results["load html and report"]
    assert loud.rc == 0 and "prog.py" in loud.out and "wrote HTML report to l2.html" in loud.err
    _one_line_exit_2(results["load no-report alone"], "--no-report")


def test_diff_prints_and_writes_html(env: dict) -> None:
    root, results = env["root"], env["results"]
    r = results["diff"]
    assert r.rc == 0, r.err
    assert "dlpt diff" in r.out and "CPU time of aten ops" in r.out and "prog.py:5" in r.out
    assert "wrote HTML diff to d.html" in r.err
    assert '"format":"dlpt-diff-model"' in (root / "d.html").read_text()
    a = results["diff ascii"]
    assert a.rc == 0 and a.out.isascii() and "prog.py:5" in a.out


@pytest.mark.parametrize(
    "name, needle",
    [
        ("diff missing file", "missing.json"),
        ("diff garbage", "garbage.json"),
        ("diff one file", "B.json"),
        ("diff bad threshold", "--threshold"),
        ("diff bad html dir", "no/such/d.html"),
    ],
)
def test_diff_bad_input_one_line_exit_2(env: dict, name: str, needle: str) -> None:
    _one_line_exit_2(env["results"][name], needle)
