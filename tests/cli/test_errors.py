"""Bad input gets one clear line from dlpt and exit status 2, never a dlpt traceback, never a
hang, and nothing is run, written or replaced. A program that cannot be launched ends as plain
python ends it: its one line and its status (1 for a missing module, 2 for a missing file)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from .helpers import Job, Result, run_many, write

GOOD = {
    "format": "dlpt-session",
    "version": 1,
    "meta": {"argv": ["x.py"]},
    "nodes": [{"id": 0, "parent": -1, "kind": "root", "name": "<root>", "file": "", "line": 0, "m": {}}],
}

# name: (dlpt arguments, text the message must contain)
CASES: dict[str, tuple[list[str], str]] = {
    "unknown option": (["--bogus", "marker.py"], "--bogus"),
    "bad option value": (["--view", "sideways", "marker.py"], "sideways"),
    "no program": (["--threshold", "5"], "program"),
    "-m without module": (["-m"], "-m"),
    "output dir missing": (["-o", "no/such/dir/p.json", "marker.py"], "no/such/dir"),
    "output empty": (["-o", "", "marker.py"], "the path is empty"),
    "output directory": (["-o", "adir", "marker.py"], "-o adir: is a directory"),
    "output device": (["-o", "/dev/full", "marker.py"], "-o /dev/full: is a character device"),
    "output link to device": (["-o", "null.json", "marker.py"], "-o null.json: is a character device"),
    "output fifo": (["-o", "pipe.json", "marker.py"], "-o pipe.json: is a FIFO"),
    "output in /proc": (["-o", "/proc/x.json", "marker.py"], "-o /proc/x.json: is under /proc"),
    "load fifo": (["--load", "pipe.json"], "pipe.json: is a FIFO (named pipe), not a regular file"),
    "load device": (["--load", "/dev/zero"], "/dev/zero: is a character device"),
    "load deep nesting": (["--load", "deep.json"], "nested too deeply"),
    "load huge integer": (["--load", "digits.json"], "Exceeds the limit"),
    "load bad compile events": (["--load", "compile5.json"], "meta.compile[0] must be an object"),
    "load missing": (["--load", "missing.json"], "missing.json"),
    "load not json": (["--load", "garbage.json"], "garbage.json"),
    "load truncated": (["--load", "truncated.json"], "truncated.json"),
    "load foreign json": (["--load", "foreign.json"], "foreign.json"),
    "load with program": (["--load", "good.json", "marker.py"], "--load"),
    "load a script": (  # issue 33: was "expected at least one argument"
        ["--load", "marker.py"],
        "--load marker.py: a Python script, not a saved session; to profile it: dlpt marker.py",
    ),
    "load with --flops": (["--load", "good.json", "--flops"], "--flops"),
    "peak not positive": (["--peak-tflops", "0", "marker.py"], "--peak-tflops"),
    "peak not a number": (["--peak-tflops", "lots", "marker.py"], "--peak-tflops"),
}


# Programs python cannot start: dlpt says what python says, with python's status.
LAUNCH: dict[str, list[str]] = {
    "missing script": ["nope.py", "a"],
    "missing module": ["-m", "no_such_module_dlpt", "a"],
    "package without __main__": ["-m", "plainpkg"],
    "directory without __main__": ["adir"],
}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("errors")
    write(root / "marker.py", "open('marker.ran', 'w').write('ran')\n")
    write(root / "plainpkg" / "__init__.py", "")
    write(root / "garbage.json", "this is not json at all\n")
    good = json.dumps(GOOD, indent=1)
    write(root / "good.json", good)
    write(root / "truncated.json", good[: len(good) // 2])
    write(root / "foreign.json", json.dumps({"traceEvents": [], "displayTimeUnit": "ms"}))
    (root / "adir").mkdir()
    os.mkfifo(root / "pipe.json")
    (root / "null.json").symlink_to("/dev/null")
    write(root / "deep.json", '{"format": "dlpt-session", "meta": ' + "[" * 100_000 + "]" * 100_000 + "}")
    hostile = Path(__file__).parents[1] / "unit" / "fixtures" / "hostile"
    shutil.copy(hostile / "int_5000_digits.json", root / "digits.json")
    shutil.copy(hostile / "meta_compile_not_objects.json", root / "compile5.json")
    jobs = {name: Job(args, root) for name, (args, _) in CASES.items()}
    for name, args in LAUNCH.items():
        jobs[f"dlpt {name}"] = Job(args, root)
        jobs[f"python {name}"] = Job(args, root, dlpt=False)
    jobs["version"] = Job(["--version"], root)
    jobs["load render options"] = Job(
        [
            "--load",
            "good.json",
            "--view",
            "bottom-up",
            "--metric",
            "cpu",
            "--threshold",
            "0",
            "--depth",
            "3",
            "--show-all",
            "--ascii",
            "--peak-tflops",
            "500",
        ],
        root,
    )
    return {"root": root, "results": run_many(jobs)}


@pytest.mark.parametrize("name", CASES)
def test_bad_input_one_line_exit_2(env: dict, name: str) -> None:
    r: Result = env["results"][name]
    lines = r.err.strip().splitlines()
    assert r.rc == 2, r.err
    assert len(lines) == 1 and lines[0].startswith("dlpt: "), r.err
    assert CASES[name][1] in lines[0]
    assert "Traceback" not in r.err + r.out
    assert not (env["root"] / "marker.ran").exists(), "the program ran despite bad input"


@pytest.mark.parametrize("name", LAUNCH)
def test_launch_failures_end_as_python_ends_them(env: dict, name: str) -> None:
    r: Result = env["results"][f"dlpt {name}"]
    plain: Result = env["results"][f"python {name}"]
    assert plain.rc in (1, 2) and r.rc == plain.rc, (r.rc, plain.rc, r.err)
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dlpt: "), r.err
    # python prefixes its own path ("/usr/bin/python3: No module named x") and makes the
    # program's absolute; the rest is the same
    unquoted = re.sub(r" '[^']*'", " ''", lines[0].removeprefix("dlpt: "))
    assert unquoted in re.sub(r" '[^']*'", " ''", plain.err), (r.err, plain.err)
    assert "Traceback" not in r.err + r.out


def test_nothing_was_replaced(env: dict) -> None:
    root: Path = env["root"]
    assert (root / "null.json").is_symlink() and os.readlink(root / "null.json") == "/dev/null"
    assert (root / "pipe.json").is_fifo() and (root / "adir").is_dir()
    assert not [p for p in root.iterdir() if p.name.endswith(".tmp")]


def test_version(env: dict) -> None:
    r: Result = env["results"]["version"]
    assert r.rc == 0 and r.out.startswith("dlpt "), r.err


def test_load_accepts_render_options(env: dict) -> None:
    r: Result = env["results"]["load render options"]
    assert r.rc == 0 and r.err == "", r.err
    assert r.out.strip() and r.out.isascii()
