"""Outputs never destroy what is not dlpt's, tried as an attacker would, with real files, devices
and links: the profiled script, notes, CSVs, what the shell opened for ``>>``, links planted in
a sticky world-writable directory, dangling links, paths the shell itself refuses. Each is
refused in one line before the program runs (or streamed, for stdout and stderr), and
``--force`` is the only way to replace a file dlpt did not write."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from dlpt.model.session import Session

from .helpers import Job, Result, env, run_many, write

PROGRAM = """\
import torch
print("program output", flush=True)
open("ran.marker", "a").write("ran\\n")
x = torch.ones(4) + 1  # the profiled line
"""

NOTES = "my notes, not a profile\n"
CSV = "step,loss\n1,0.50\n2,0.41\n"
OTHER_UID = 54321  # a user that is not the caller (the tests chown to it when they may)
LONG = "l" * 245 + ".json"  # a legal name of 250 bytes


def _sh(cmd: str, cwd: Path) -> Result:
    """``cmd`` through bash, with the checkout's dlpt on PYTHONPATH."""
    p = subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env(), capture_output=True, text=True, timeout=180)
    return Result(p.returncode, p.stdout, p.stderr)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("trust_files")


@pytest.fixture(scope="module")
def runs(root: Path) -> dict[str, Result]:
    write(root / "prog.py", PROGRAM)
    write(root / "victim.py", PROGRAM)
    write(root / "notes.txt", NOTES)
    write(root / "data.csv", CSV)
    (root / "dangling.json").symlink_to("missing.json")
    # A sticky world-writable directory (/tmp's mode) holding a link another user planted.
    shared = root / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    write(root / "secret.txt", "root-only contents\n")
    os.chmod(root / "secret.txt", 0o600)
    (shared / "planted.json").symlink_to(root / "secret.txt")
    write(root / "theirs.json", '{"format":"dlpt-session"}\n')  # a dlpt file, of another user
    (root / "to_theirs.json").symlink_to("theirs.json")
    if os.geteuid() == 0:
        os.lchown(shared / "planted.json", OTHER_UID, OTHER_UID)
        os.chown(root / "theirs.json", OTHER_UID, OTHER_UID)
    py = f"{sys.executable} -m dlpt"
    jobs = {
        "-o the script": Job(["-o", "victim.py", "victim.py"], root),
        "--html the script": Job(["--html", "victim.py", "victim.py"], root),
        "--export the script": Job(["--export", "folded", "victim.py", "victim.py"], root),
        "-o notes": Job(["-o", "notes.txt", "prog.py"], root),
        "--export csv": Job(["--export", "speedscope", "data.csv", "prog.py"], root),
        "trailing slash": Job(["-o", "notes.txt/", "prog.py"], root),
        "new name slash": Job(["-o", "fresh/", "prog.py"], root),
        "dotdot through missing": Job(["-o", "nodir/../x.json", "prog.py"], root),
        "dangling link": Job(["-o", "dangling.json", "prog.py"], root),
        "planted link": Job(["-o", "shared/planted.json", "prog.py"], root),
        "link to another's file": Job(["-o", "to_theirs.json", "prog.py"], root),
        "long name": Job(["--no-report", "-o", LONG, "prog.py"], root),
    }
    results = run_many(jobs)
    # Through the shell: what it opened for >> and 2>> must keep what it held.
    write(root / "log.txt", "old line\n")
    write(root / "err.txt", "old error\n")
    results["-o /dev/stdout >>"] = _sh(f"{py} -o /dev/stdout prog.py >> log.txt", root)
    results["--html /dev/stderr 2>>"] = _sh(f"{py} --no-report --html /dev/stderr prog.py 2>> err.txt", root)
    results["-o /dev/stdout closed"] = _sh(f"{py} -o /dev/stdout prog.py >&-", root)
    # A file dlpt wrote is replaced; one it did not is, with --force.
    again = f"{py} --no-report -o again.json prog.py"
    results["rerun"] = _sh(f"{again} && {again}", root)
    results["--force"] = _sh(f"{py} --no-report --force -o data.csv prog.py", root)
    return results


REFUSED = {
    "-o the script": "-o victim.py: is the profiled script; not replaced (--force",
    "--html the script": "--html victim.py: is the profiled script",
    "--export the script": "--export folded victim.py: is the profiled script",
    "-o notes": "-o notes.txt: exists and is not a file dlpt wrote",
    "--export csv": "--export speedscope data.csv: exists and is not a file dlpt wrote",
    "trailing slash": "-o notes.txt/: Not a directory",
    "new name slash": "-o fresh/: Is a directory",
    "dotdot through missing": "-o nodir/../x.json: directory",
    "dangling link": "-o dangling.json: is a dangling symlink",
}


@pytest.mark.parametrize("name", REFUSED)
def test_refused_in_one_line_before_the_program_runs(runs: dict[str, Result], name: str) -> None:
    r = runs[name]
    lines = r.err.strip().splitlines()
    assert r.rc == 2 and len(lines) == 1, (r.rc, r.err)
    assert lines[0].startswith("dlpt: error: " + REFUSED[name]), r.err
    assert "program output" not in r.out


def test_nothing_refused_was_touched(root: Path, runs: dict[str, Result]) -> None:
    assert (root / "victim.py").read_text() == PROGRAM
    assert (root / "notes.txt").read_text() == NOTES
    assert not (root / "fresh").exists() and not (root / "x.json").exists()
    assert not (root / "missing.json").exists() and (root / "dangling.json").is_symlink()
    assert not [p for p in root.rglob("*.tmp")], "no temporary file left behind"


@pytest.mark.skipif(os.geteuid() != 0, reason="planting another user's link needs root")
def test_links_of_other_users_are_not_followed(root: Path, runs: dict[str, Result]) -> None:
    planted = runs["planted link"]
    assert planted.rc == 2 and "another user's symlink in a world-writable sticky directory" in planted.err
    secret = root / "secret.txt"
    assert secret.read_text() == "root-only contents\n" and stat.S_IMODE(secret.stat().st_mode) == 0o600
    theirs = runs["link to another's file"]
    assert theirs.rc == 2 and "a file of another user" in theirs.err, theirs.err
    assert (root / "theirs.json").stat().st_uid == OTHER_UID


def test_stdout_and_stderr_are_streamed_not_replaced(root: Path, runs: dict[str, Result]) -> None:
    r = runs["-o /dev/stdout >>"]
    assert r.rc == 0 and "saved profile to /dev/stdout" in r.err, r.err
    log = (root / "log.txt").read_text()
    assert log.startswith('old line\nprogram output\n{"format":"dlpt-session"'), log[:200]
    assert "prog.py:4 <module>" in log, "the report follows the session, after what was there"
    err = runs["--html /dev/stderr 2>>"]
    assert err.rc == 0, err.err
    text = (root / "err.txt").read_text()
    assert text.startswith("old error\n<!DOCTYPE html>") and "wrote HTML report to /dev/stderr" in text
    closed = runs["-o /dev/stdout closed"]
    assert closed.rc == 2 and "is this process's stdout, which is closed" in closed.err


def test_dlpt_files_are_replaced_and_force_replaces_the_rest(root: Path, runs: dict[str, Result]) -> None:
    assert runs["rerun"].rc == 0, runs["rerun"].err
    Session.load(root / "again.json")
    assert runs["--force"].rc == 0, runs["--force"].err
    assert json.loads((root / "data.csv").read_text())["format"] == "dlpt-session"


def test_a_long_legal_name_is_written(root: Path, runs: dict[str, Result]) -> None:
    r = runs["long name"]
    assert r.rc == 0, r.err
    Session.load(root / LONG)
