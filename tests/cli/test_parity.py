"""The profiled program sees exactly what plain ``python`` would give it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .helpers import Job, Result, run_many, write

# Prints everything a program can observe about how it was started. The class round-trips
# through pickle, which finds it via sys.modules['__main__'] (as multiprocessing does).
PROBE = """\
import json, os, pickle, sys
class Point:
    pass
state = {
    "argv": sys.argv, "name": __name__, "file": globals().get("__file__"),
    "cached": globals().get("__cached__"), "cwd": os.getcwd(), "path0": sys.path[0],
    "package": __package__, "spec": getattr(__spec__, "name", None),
    "loader": type(__loader__).__name__, "code_file": sys._getframe().f_code.co_filename,
    "dunders": sorted(k for k in globals() if k.startswith("__")),
    "main_is_me": sys.modules["__main__"].__dict__ is globals(),
    "pickle": type(pickle.loads(pickle.dumps(Point()))) is Point,
}
print("PROBE " + json.dumps(state), flush=True)
"""

# Arguments that look like dlpt's own options: they belong to the program all the same.
CASES = ["script", "module", "package", "code", "directory"]
ARGS = ["--lr", "3", "-o", "x.json", "--view", "flat", "-m", "-c", "--", "--version"]


def _probe(r: Result) -> dict:
    lines = [ln for ln in r.out.splitlines() if ln.startswith("PROBE ")]
    assert r.rc == 0 and len(lines) == 1, (r.rc, r.out, r.err)
    return json.loads(lines[0][len("PROBE ") :])


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Result]:
    root = tmp_path_factory.mktemp("parity")
    work = root / "work"  # the cwd; differs from the script's directory on purpose
    work.mkdir()
    # The script is reached through a symlink: python's sys.path[0] is the target's directory.
    write(root / "real" / "probe.py", PROBE)
    (root / "scripts").mkdir()
    (root / "scripts" / "link.py").symlink_to(root / "real" / "probe.py")
    write(work / "mypkg" / "__init__.py", "")
    write(work / "mypkg" / "probe.py", PROBE)
    write(work / "mypkg" / "__main__.py", PROBE)
    write(root / "app" / "__main__.py", PROBE)  # `python DIR` runs DIR/__main__.py
    # A non-normalised relative path: python keeps it in argv and makes only __file__ absolute.
    script = "../scripts/./link.py"
    cases = {
        "script": [script, *ARGS],
        "module": ["-m", "mypkg.probe", *ARGS],
        "package": ["-m", "mypkg", *ARGS],
        "code": ["-c", PROBE, *ARGS],
        "directory": ["../app", *ARGS],
    }
    jobs = {}
    for name, args in cases.items():
        jobs[name + "/python"] = Job(args, work, dlpt=False)
        # dlpt's own options go first; -o also proves the split at the program is right.
        jobs[name + "/dlpt"] = Job(["--threshold", "0", "-o", str(root / f"{name}.json"), *args], work)
    results = run_many(jobs)
    results["root"] = root  # type: ignore[assignment]
    return results


@pytest.mark.parametrize("case", CASES)
def test_program_sees_what_python_gives_it(runs: dict[str, Result], case: str) -> None:
    plain, profiled = _probe(runs[case + "/python"]), _probe(runs[case + "/dlpt"])
    assert profiled == plain
    assert plain["main_is_me"] and plain["pickle"] and plain["name"] == "__main__"
    assert plain["argv"][1:] == ARGS


@pytest.mark.parametrize("case", CASES)
def test_profile_saved_with_programs_argv(runs: dict[str, Result], case: str) -> None:
    root: Path = runs["root"]  # type: ignore[assignment]
    r = runs[case + "/dlpt"]
    assert f"dlpt: saved profile to {root / (case + '.json')}" in r.err
    data = json.loads((root / f"{case}.json").read_text())
    assert data["format"] == "dlpt-session"
    assert data["meta"]["argv"] == _probe(runs[case + "/python"])["argv"]
    # The report follows the program's output on stdout.
    assert r.out.index("PROBE ") == 0 and len(r.out.strip().splitlines()) > 1
