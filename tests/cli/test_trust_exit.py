"""The program's status is dlpt's status, whatever happens to dlpt's own output; a launch failure
ends as python ends it; nothing dlpt prints carries raw control characters from a session, a
path or the program; absurd launcher variables cost a warning, not gigabytes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .helpers import Job, Result, env, run_many, write

QUIET3 = "import sys, torch\nx = torch.ones(2) + 1\nsys.exit(3)\n"
ZERO = "import torch\nx = torch.ones(2) + 1\n"
CLOSES_FD = "import os, torch\nx = torch.ones(2) + 1\nos.close(1)\n"
CLOSES_FILE = "import sys, torch\nx = torch.ones(2) + 1\nsys.stdout.close()\n"
RMDIR = "import shutil, torch\nx = torch.ones(2) + 1\nshutil.rmtree('outdir')\n"
ESC = "\x1b]0;pwned\x07\x1b[2J"


def _sh(cmd: str, cwd: Path, extra: dict[str, str] | None = None) -> Result:
    e = env()
    e.update(extra or {})
    p = subprocess.run(["bash", "-c", cmd], cwd=cwd, env=e, capture_output=True, text=True, timeout=180)
    return Result(p.returncode, p.stdout, p.stderr)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Result]]:
    root = tmp_path_factory.mktemp("trust_exit")
    write(root / "quiet3.py", QUIET3)
    write(root / "zero.py", ZERO)
    write(root / "rmdir.py", RMDIR)
    write(root / "closes_fd.py", CLOSES_FD)
    write(root / "closes_file.py", CLOSES_FILE)
    (root / "outdir").mkdir()
    (root / "nul.py").write_bytes(b"x = 1\ny = 2\0z\n")
    # A session whose dict keys and a file name matched by a --load glob hold escape sequences.
    bad = {"format": "dlpt-session", "version": 2, "meta": {"gpu_busy_ns": {ESC: "x"}}, "nodes": []}
    write(root / "badkeys.json", json.dumps(bad))
    write(root / f"g{ESC}.json", "not json")
    write(root / "g0.json", "not json either")
    event = {"function": "f", "file": "m.py", "line": 1, "break_reasons": [], "compile_s": -1}
    nan = {
        "format": "dlpt-session",
        "version": 2,
        "meta": {"compile": [event]},
        "nodes": [{"id": 0, "parent": -1, "kind": "root", "name": "<root>"}],
    }
    write(root / "negative.json", json.dumps(nan))
    write(root / "nan.json", json.dumps(nan).replace("-1", "NaN"))
    py = f"{sys.executable} -m dlpt"
    results = run_many(
        {
            "program closes fd 1": Job(["closes_fd.py"], root),
            "program closes sys.stdout": Job(["closes_file.py"], root),
            "nul dlpt": Job(["nul.py"], root),
            "nul python": Job(["nul.py"], root, dlpt=False),
            "bad keys": Job(["--load", "badkeys.json"], root),
            "glob": Job(["--load", "g*.json"], root),
            "newline path": Job(["-o", "a\nb/x.json", "zero.py"], root),
            "negative compile_s": Job(["--load", "negative.json"], root),
            "nan compile_s": Job(["--load", "nan.json"], root),
        }
    )
    results["head -c0"] = _sh(f"{py} quiet3.py | head -c0; exit ${{PIPESTATUS[0]}}", root)
    results["/dev/full"] = _sh(f"{py} zero.py > /dev/full", root)
    results["/dev/full 3"] = _sh(f"{py} quiet3.py > /dev/full", root)
    results["closed stdout"] = _sh(f"{py} zero.py >&-", root)
    results["deleted -o dir"] = _sh(f"{py} --no-report -o outdir/p.json rmdir.py", root)
    t = time.monotonic()
    results["absurd world size"] = _sh(
        f"{py} --no-report -o w.json zero.py", root, {"RANK": "0", "WORLD_SIZE": "10000000"}
    )
    results["absurd world size"].out = f"{time.monotonic() - t:.1f}"
    return root, results


@pytest.mark.parametrize(
    "name, status, says",
    [
        ("head -c0", 3, "could not print the report: stdout is closed (broken pipe)"),
        ("/dev/full", 0, "could not print the report: No space left on device"),
        ("/dev/full 3", 3, "could not print the report: No space left on device"),
        ("closed stdout", 0, ""),
        ("program closes fd 1", 0, "could not print the report: Bad file descriptor"),
        ("program closes sys.stdout", 0, "could not print the report: stdout is closed"),
        ("deleted -o dir", 0, "could not save the profile to outdir/p.json: directory"),
    ],
)
def test_the_programs_status_survives_dlpts_output_failing(
    runs: tuple[Path, dict[str, Result]], name: str, status: int, says: str
) -> None:
    r = runs[1][name]
    assert r.rc == status, (r.rc, r.err)
    assert "Traceback" not in r.err and "Exception ignored" not in r.err, r.err
    if says:
        assert [ln for ln in r.err.splitlines() if says in ln], r.err


def test_a_nul_byte_is_pythons_syntax_error(runs: tuple[Path, dict[str, Result]]) -> None:
    dlpt, plain = runs[1]["nul dlpt"], runs[1]["nul python"]
    assert plain.rc == dlpt.rc == 1
    assert dlpt.err == plain.err, (dlpt.err, plain.err)  # python's three lines, nothing of dlpt's


@pytest.mark.parametrize("name", ["bad keys", "glob", "newline path"])
def test_no_raw_control_character_reaches_the_terminal(
    runs: tuple[Path, dict[str, Result]], name: str
) -> None:
    r = runs[1][name]
    assert r.rc == 2, r.err
    text = r.out + r.err
    assert "\x1b" not in text and "\x07" not in text, repr(text)
    assert len(r.err.strip().splitlines()) == 1, r.err  # a newline in a path is shown escaped
    assert "\\x1b" in r.err or "\\x0a" in r.err, r.err


@pytest.mark.parametrize("name", ["negative compile_s", "nan compile_s"])
def test_durations_must_be_finite_and_not_negative(runs: tuple[Path, dict[str, Result]], name: str) -> None:
    r = runs[1][name]
    assert r.rc == 2 and "meta.compile[0].compile_s must be a duration in seconds" in r.err, r.err


def test_an_absurd_world_size_is_a_warning(runs: tuple[Path, dict[str, Result]]) -> None:
    root, results = runs
    r = results["absurd world size"]
    assert r.rc == 0, r.err
    assert "dlpt: ignoring RANK='0' WORLD_SIZE='10000000': more than 131,072 ranks" in r.err
    assert float(r.out) < 120, "no work proportional to the world size"
    assert (root / "w.json").exists() and not list(root.glob("w.rank*.json"))
