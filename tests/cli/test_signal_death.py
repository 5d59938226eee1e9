"""A signal always ends the process as it ends plain python, after a bounded save: SIGTERM to a
program stuck in native code (where no Python-level handler ever runs) saves and dies of
SIGTERM; a large profile being stopped is saved within the grace; the grace is an option;
rank 0 waits for no other rank after SIGTERM; a shell loop stops on Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dlpt.model.session import Session

from .helpers import MANY_SITES, STUCK_IN_C, Job, env, popen, run_many, signal_after, write

# Stuck in a C wait after some profiled ops (helpers.STUCK_IN_C).
STUCK = (
    """\
import torch
x = torch.ones(16, 16)
for _ in range(20):
    x = (x @ x).clamp(-1, 1)  # @ops
"""
    + STUCK_IN_C
)

BIG = MANY_SITES

LOOP = """\
import time, torch
print("iteration", flush=True)
x = torch.ones(4)
t0 = time.time()
while time.time() - t0 < 60:
    x = x + 1
"""


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("signal_death")
    write(root / "stuck.py", STUCK)
    write(root / "big.py", BIG)
    write(root / "loop.py", LOOP)
    return root


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_a_process_stuck_in_native_code_saves_and_kills_it(root: Path, signum: int) -> None:
    plain, _ = signal_after(popen(["stuck.py"], root), "stuck", signum)
    name = f"stuck{signum}.json"
    r, took = signal_after(popen(["-m", "dlpt", "-o", name, "stuck.py"], root), "stuck", signum)
    assert plain.rc == -signum
    assert r.rc == -signum, (r.rc, r.err)  # died of the signal (WIFSIGNALED), as plain python
    assert took < 10, took  # within the default grace
    assert f"dlpt: saved profile to {name}" in r.err and "Traceback" not in r.err
    assert "Top-down" in r.out  # the report too
    assert any(n["name"] == "aten::matmul" for n in Session.load(root / name).nodes)


def test_a_large_profile_is_saved_on_sigterm_while_it_stops(root: Path) -> None:
    # ~50k call sites (a 15 MB session): stopping and saving takes seconds here, longer than the
    # one-second grace dlpt used to give; SIGTERM arrives just after the program's last line.
    r, took = signal_after(
        popen(["-m", "dlpt", "-o", "big.json", "--no-report", "big.py", "50000"], root),
        "done",
        signal.SIGTERM,
        0.3,
    )
    assert r.rc == -signal.SIGTERM, (r.rc, r.err)
    assert "skipped" not in r.err and "dlpt: saved profile to big.json" in r.err, r.err
    assert took < 10, took
    nodes = Session.load(root / "big.json").nodes
    assert sum(n["kind"] == "frame" for n in nodes) >= 50_000  # one per generated line


@pytest.mark.parametrize("how", ["option", "env"])
def test_the_grace_bounds_the_save_and_is_configurable(root: Path, how: str) -> None:
    Session().save(root / f"grace-{how}.json")  # an earlier session there: it must survive intact
    before = (root / f"grace-{how}.json").read_text()
    args = ["-m", "dlpt", "-o", f"grace-{how}.json", "--no-report"]
    extra = {}
    if how == "option":
        args += ["--signal-grace", "0.2"]
    else:
        extra = {"DLPT_SIGNAL_GRACE": "0.2"}
    r, took = signal_after(popen([*args, "big.py", "50000"], root, extra), "done", signal.SIGTERM)
    assert r.rc == -signal.SIGTERM, (r.rc, r.err)
    assert took < 5, took
    assert "dlpt: SIGTERM: ending now, after 0.2 s; skipped: " in r.err, r.err
    assert (root / f"grace-{how}.json").read_text() == before
    assert not list(root.glob(f".grace-{how}.json.*")), "the temporary file is removed"


@pytest.mark.parametrize(
    ("args", "extra", "says"),
    [
        (["--signal-grace", "0"], {}, "--signal-grace must be a number of seconds > 0, got 0"),
        (["--signal-grace", "soon"], {}, "--signal-grace must be a number of seconds, got 'soon'"),
        ([], {"DLPT_SIGNAL_GRACE": "inf"}, "DLPT_SIGNAL_GRACE must be a number of seconds > 0, got inf"),
    ],
)
def test_a_bad_grace_is_a_usage_error(root: Path, args: list[str], extra: dict[str, str], says: str) -> None:
    (r,) = run_many({"x": Job([*args, "loop.py"], root, env=dict(extra))}).values()
    assert r.rc == 2 and r.err.strip() == f"dlpt: error: {says}", r.err


def test_rank_0_waits_for_no_rank_after_sigterm(root: Path) -> None:
    ranks = {"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0"}
    args = ["-m", "dlpt", "-o", "ranked.json", "--rank-timeout", "60", "stuck.py"]
    r, took = signal_after(popen(args, root, ranks), "stuck", signal.SIGTERM)
    assert r.rc == -signal.SIGTERM, (r.rc, r.err)
    assert took < 10, (took, r.err)  # not the 60 s --rank-timeout
    assert "waiting up to" not in r.err
    assert "rank 1 missing" in r.out and "across ranks" in r.out  # the report of what rank 0 has
    assert any(n["name"] == "aten::matmul" for n in Session.load(root / "ranked.rank0.json").nodes)


def test_a_shell_loop_stops_on_ctrl_c(root: Path) -> None:
    """Ctrl-C in a terminal signals the foreground process group: the shell waits, sees its
    child die of SIGINT and stops the loop (a child that exits with 130 would not stop it)."""
    results = {}
    for who, cmd in (("python", ""), ("dlpt", "-m dlpt --no-report -o loop.json ")):
        loop = f"for i in 1 2 3; do {sys.executable} {cmd}loop.py; echo next $i; done"
        p = subprocess.Popen(
            ["bash", "-c", loop],
            cwd=root,
            env=env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        assert p.stdout is not None and p.stdout.readline() == "iteration\n"
        time.sleep(0.5)
        os.killpg(p.pid, signal.SIGINT)
        try:
            out, err = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:  # the loop went on: end it, the assertions say why
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
        results[who] = (p.returncode, out, err)
    assert results["python"][1] == "", results["python"]  # the reference: plain python stops it
    rc, out, err = results["dlpt"]
    assert out == "" and rc == -signal.SIGINT, (rc, out, err)
    assert "dlpt: saved profile to loop.json" in err
