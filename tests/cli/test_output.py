"""``-o`` writes a session where the user meant it and nowhere else: through a symlink to its
target (the link stays), atomically over a session an earlier run wrote (its permissions kept),
never through a dangling link, never over a device node, and without leaving anything else
behind (tests/cli/test_trust_files.py: files dlpt did not write, traps). ``--html``,
``--export`` and ``dlpt diff --html`` follow the same rules, and never overwrite the session
being saved or read."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from dlpt.model.session import VERSION

from .helpers import Job, Result, run_many, write


def _device_or_fifo(path: Path) -> str:
    """A character device node like /dev/null where this user may create one, else a FIFO."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        return "a character device"
    except (PermissionError, OSError):
        os.mkfifo(path)
        return "a FIFO"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("output")
    write(root / "prog.py", "print('ran', flush=True)\n")
    write(root / "real.json", '{"format":"dlpt-session","version":2,"meta":{},"nodes":[]}\n')  # an old run
    os.chmod(root / "real.json", 0o640)
    (root / "link.json").symlink_to("real.json")
    (root / "dangling.json").symlink_to("sub/new.json")
    (root / "sub").mkdir()
    kind = _device_or_fifo(root / "node.json")
    jobs = {
        "link": Job(["-o", "link.json", "--no-report", "prog.py"], root),
        "dangling": Job(["-o", "dangling.json", "--no-report", "prog.py"], root),
        "device": Job(["-o", "node.json", "prog.py"], root),
    }
    before = sorted(p.name for p in root.iterdir())
    return {"root": root, "kind": kind, "before": before, "results": run_many(jobs)}


def test_symlink_is_written_through_and_kept(env: dict) -> None:
    root: Path = env["root"]
    r: Result = env["results"]["link"]
    assert r.rc == 0 and "dlpt: saved profile to link.json" in r.err, r.err
    assert (root / "link.json").is_symlink() and os.readlink(root / "link.json") == "real.json"
    assert json.loads((root / "real.json").read_text())["format"] == "dlpt-session"
    assert stat.S_IMODE((root / "real.json").stat().st_mode) == 0o640  # a replaced file keeps its mode


def test_dangling_symlink_is_refused_before_the_run(env: dict) -> None:
    root: Path = env["root"]
    r: Result = env["results"]["dangling"]
    assert r.rc == 2 and "ran" not in r.out, r.err
    assert r.err.startswith("dlpt: error: -o dangling.json: is a dangling symlink"), r.err
    assert (root / "dangling.json").is_symlink() and not (root / "sub" / "new.json").exists()


def test_device_node_is_refused_before_the_run_and_survives(env: dict) -> None:
    root: Path = env["root"]
    r: Result = env["results"]["device"]
    assert r.rc == 2 and "ran" not in r.out
    assert (
        r.err.strip()
        == f"dlpt: error: -o node.json: is {env['kind']}; dlpt writes sessions to regular files only"
    )
    mode = (root / "node.json").lstat().st_mode
    assert stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def test_nothing_else_is_created(env: dict) -> None:
    root: Path = env["root"]
    assert sorted(p.name for p in root.iterdir()) == env["before"]
    assert sorted(p.name for p in (root / "sub").iterdir()) == []


@pytest.fixture(scope="module")
def outputs_env(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """``--html``, ``--export`` and ``dlpt diff --html`` go through the same rules as ``-o``."""
    root = tmp_path_factory.mktemp("outputs_safety")
    write(root / "prog.py", "print('ran', flush=True)\n")
    write(root / "real.html", '<!DOCTYPE html>\n<html><head><meta name="generator" content="dlpt">\n')
    (root / "link.html").symlink_to("real.html")
    (root / "adir").mkdir()
    kind = _device_or_fifo(root / "node.html")
    first = run_many(
        {
            "html link": Job(["--html", "link.html", "-o", "s.json", "--no-report", "prog.py"], root),
            "html device": Job(["--html", "node.html", "prog.py"], root),
            "export dir": Job(["--export", "folded", "adir", "prog.py"], root),
            "html is -o": Job(["-o", "same.json", "--html", "./same.json", "prog.py"], root),
        }
    )
    second = run_many(
        {
            "load html is load": Job(["--load", "s.json", "--html", "s.json"], root),
            "diff html is A": Job(["diff", "s.json", "s.json", "--html", "s.json"], root),
            "diff html device": Job(["diff", "s.json", "s.json", "--html", "node.html"], root),
        }
    )
    return {"root": root, "kind": kind, "results": {**first, **second}}


def test_html_through_a_symlink_writes_its_target(outputs_env: dict) -> None:
    root: Path = outputs_env["root"]
    r: Result = outputs_env["results"]["html link"]
    assert r.rc == 0 and "wrote HTML report to link.html" in r.err, r.err
    assert (root / "link.html").is_symlink() and os.readlink(root / "link.html") == "real.html"
    assert (root / "real.html").read_text().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize(
    "name, message",
    [
        ("html device", "--html node.html: is {kind}; dlpt writes HTML reports to regular files only"),
        ("export dir", "--export folded adir: is a directory; dlpt writes folded exports to regular files"),
        ("html is -o", "--html ./same.json: the same file as -o"),
        ("load html is load", "--html s.json: the same file as --load"),
        ("diff html is A", "diff: --html s.json: is one of the sessions compared"),
        ("diff html device", "diff: --html node.html: is {kind}; dlpt writes HTML reports"),
    ],
)
def test_outputs_that_would_destroy_a_file_are_refused_before_the_run(
    outputs_env: dict, name: str, message: str
) -> None:
    r: Result = outputs_env["results"][name]
    assert r.rc == 2 and "ran" not in r.out, (r.rc, r.out, r.err)
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and message.format(kind=outputs_env["kind"]) in lines[0], r.err
    root: Path = outputs_env["root"]
    mode = (root / "node.html").lstat().st_mode
    assert stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)
    assert not (root / "same.json").exists()
    assert json.loads((root / "s.json").read_text())["version"] == VERSION
