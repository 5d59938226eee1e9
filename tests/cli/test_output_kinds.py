"""Without --force an output replaces only a file of the kind it writes: ``--html run.json`` (a
typo) over the session of an hour-long run is refused before anything runs, in one line, with a
non-zero status and the file untouched; an export never replaces py-spy's folded file."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlpt.model.session import Session
from dlpt.renderers.exports import write_export
from tests import sessions as S

from .helpers import Job, run_many, write

PY_SPY = 'process 7:"python train.py";<module> (train.py:12);step (train.py:8) 57\n'
PROGRAM = 'import pathlib\npathlib.Path("ran").write_text("yes")\n'


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("output_kinds")
    session = Session.from_dict(S.gpt_eager())
    for name in ("run.json", "a.json", "b.json"):
        session.save(root / name)
    write_export(session, "folded", root / "dlpt.folded")
    write(root / "pyspy.folded", PY_SPY)
    write(root / "prog.py", PROGRAM)
    return root


# (arguments, the file that must stay as it was, the flag named in the one-line error)
CASES = {
    "html over a session": (["--html", "run.json", "prog.py"], "run.json", "--html run.json"),
    "html over a session, --load": (
        ["--load", "a.json", "--html", "run.json"],
        "run.json",
        "--html run.json",
    ),
    "diff html over a session": (
        ["diff", "a.json", "b.json", "--html", "run.json"],
        "run.json",
        "--html run.json",
    ),
    "report file over a session": (
        ["--report-file", "run.json", "prog.py"],
        "run.json",
        "--report-file run.json",
    ),
    "export over a session": (["--load", "a.json", "--export", "folded", "run.json"], "run.json", "run.json"),
    "session over a folded export": (["-o", "dlpt.folded", "prog.py"], "dlpt.folded", "-o dlpt.folded"),
    "speedscope over a folded export": (
        ["--load", "a.json", "--export", "speedscope", "dlpt.folded"],
        "dlpt.folded",
        "dlpt.folded",
    ),
    "folded over py-spy's": (
        ["--load", "a.json", "--export", "folded", "pyspy.folded"],
        "pyspy.folded",
        "pyspy",
    ),
    "session over py-spy's": (["-o", "pyspy.folded", "prog.py"], "pyspy.folded", "-o pyspy.folded"),
}


@pytest.fixture(scope="module")
def results(root: Path) -> dict:
    before = {p.name: p.read_bytes() for p in root.iterdir()}
    jobs = {name: Job(args, root) for name, (args, _, _) in CASES.items()}
    jobs["folded over dlpt's folded"] = Job(["--load", "a.json", "--export", "folded", "dlpt.folded"], root)
    jobs["forced"] = Job(["--load", "a.json", "--no-report", "--force", "--html", "b.json"], root)
    return {"before": before, "after": run_many(jobs)}


@pytest.mark.parametrize("case", CASES)
def test_an_output_over_a_file_of_another_kind_is_refused(root: Path, results: dict, case: str) -> None:
    _, kept, flag = CASES[case]
    r = results["after"][case]
    assert r.rc == 2, (r.rc, r.err)
    assert len(r.err.splitlines()) == 1 and flag in r.err and "Traceback" not in r.err, r.err
    assert "not replaced (--force" in r.err
    assert (root / kept).read_bytes() == results["before"][kept]
    assert not (root / "ran").exists(), "refused before the program ran"


def test_a_session_is_named_as_such(results: dict) -> None:
    err = results["after"]["html over a session"].err.strip()
    assert err == (
        "dlpt: error: --html run.json: is a dlpt session (dlpt replaces it only with another session); "
        "not replaced (--force, or force=True, replaces it)"
    )


def test_dlpts_own_folded_export_is_replaced_and_force_replaces_anything(root: Path, results: dict) -> None:
    r = results["after"]["folded over dlpt's folded"]
    assert r.rc == 0 and "wrote folded export to dlpt.folded" in r.err, r.err
    forced = results["after"]["forced"]
    assert forced.rc == 0, forced.err
    assert (root / "b.json").read_text().lstrip().lower().startswith("<!doctype html>")
