"""A profile's life in the program (real capture on the CPU): joining a running profile, the
source text it keeps, the threads it did not wait for, steps from ``step_on``, forks, and what
it never imports."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
import torch

import dlpt
from dlpt.errors import ProfilerBusyError, UsageError
from dlpt.model.session import Session
from dlpt.renderers.terminal.report import render

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


# -- joining --------------------------------------------------------------------------------------


def test_a_profile_joins_a_joinable_one_and_its_files_follow(tmp_path: Path) -> None:
    host = dlpt.profile(joinable=True).start()
    try:
        with dlpt.profile() as inner:
            torch.ones(4).sum()
            inner.step()
            inner.step()
        assert inner.stop() is None  # leaving again is harmless
        with pytest.raises(UsageError, match="exists once it stops"):
            inner.session  # noqa: B018
        inner.save(tmp_path / "inner.json")  # written when the host stops
        assert not (tmp_path / "inner.json").exists()
    finally:
        session = host.stop()
    assert session is not None and inner.session is session
    assert session.meta["steps"]["seen"] == 2 and session.meta["steps"]["source"] == "manual"
    assert Session.load(tmp_path / "inner.json").nodes == session.nodes


def test_two_independent_profiles_still_conflict() -> None:
    with dlpt.profile(), pytest.raises(ProfilerBusyError):
        dlpt.profile().start()


@pytest.mark.parametrize("step_on", [None, "train"])
def test_a_running_profile_nobody_can_reach_does_not_block_the_next(step_on: str | None) -> None:
    """A notebook cell run twice: it started a profile by hand and raised before its stop(); the
    name now holds a new profile, and the old one's hooks (optimizer steps, step_on) must not
    keep it running for the rest of the process."""
    m = torch.nn.Linear(4, 4)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)

    def train() -> None:
        m(torch.ones(2, 4)).sum().backward()
        opt.step()
        opt.zero_grad()

    prof = dlpt.profile(gpu=False, sample_hz=0, step_on=step_on)
    prof.start()
    train()
    with pytest.warns(RuntimeWarning, match="nothing refers to it any more"):
        prof = dlpt.profile(gpu=False, sample_hz=0, step_on=step_on)  # the old one is lost
        prof.start()
    train()
    session = prof.stop()
    assert session is not None and any(n["name"] == "aten::linear" for n in session.nodes)


@pytest.mark.parametrize("step_on", [123, b"train", ["train"]])
def test_step_on_that_is_not_a_name_is_a_usage_error(step_on: object) -> None:
    with pytest.raises(UsageError, match=r"^step_on must be a function's name \(a string"):
        dlpt.profile(step_on=step_on)  # type: ignore[arg-type]  # what a user may pass anyway


# -- source text -------------------------------------------------------------------------------


def test_source_text_is_saved_at_stop_and_survives_edits(tmp_path: Path, monkeypatch) -> None:
    lines = [f"# line {i}" for i in range(1, 21)]
    lines[9] = "def work(x):"
    lines[10] = "    return x.sin() + 1  # the profiled line"
    mod = tmp_path / "edited_mod.py"
    mod.write_text("\n".join(lines) + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    work = importlib.import_module("edited_mod").work
    with dlpt.profile(gpu=False) as prof:
        work(torch.ones(3))
    mod.write_text("\n".join("# rewritten" for _ in range(20)) + "\n")
    saved = prof.session.meta["sources"][str(mod)]
    # The profiled line and 2 around it (line 11 is called from line 11 only; the with-block's
    # line in this test file is user code too, but this test only looks at edited_mod.py).
    assert saved == {str(n): lines[n - 1] for n in range(9, 14)}
    text = _text(prof.session)
    assert "edited_mod.py:11 work  return x.sin() + 1  # the profiled line" in text
    with dlpt.profile(gpu=False, sources=False) as bare:
        work(torch.ones(3))
    assert bare.session.meta["sources"] == {}


def _text(session: Session) -> str:
    from tests.unit.conftest import render_text

    return render_text(render(session, threshold=0.0), width=160)


# -- threads -------------------------------------------------------------------------------------


def test_threads_still_running_at_stop_are_named() -> None:
    release = threading.Event()
    worker = threading.Thread(target=release.wait, name="late-worker")
    worker.start()
    try:
        with dlpt.profile(gpu=False) as prof:
            torch.ones(2) + 1
    finally:
        release.set()
        worker.join()
    assert prof.session.meta["threads_running"] == ["late-worker"]
    assert "1 thread was still running when the profile stopped; their later work is not included" in _text(
        prof.session
    )


# -- step_on -------------------------------------------------------------------------------------


class Model:
    def forward(self, x, depth=0):
        return x if depth == 2 else self.forward(torch.tanh(x), depth + 1)


def test_step_on_a_method_counts_outermost_calls_and_restores_it() -> None:
    original = Model.__dict__["forward"]
    with dlpt.profile(gpu=False, step_on="Model.forward", skip_first=1, active=2) as prof:
        assert Model.__dict__["forward"] is not original
        for _ in range(5):
            Model().forward(torch.ones(2))
        torch.optim.SGD([torch.ones(1, requires_grad=True)], lr=0.1).step()  # ignored: step_on decides
    assert Model.__dict__["forward"] is original
    steps = prof.session.meta["steps"]
    assert (steps["seen"], steps["profiled"], steps["source"]) == (5, 2, "call")
    assert steps["step_on_matched"] == [f"{__name__}:Model.forward"]


def test_step_on_waits_for_the_module_to_be_imported(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "late_mod.py").write_text("import torch\ndef serve(x):\n    return x * 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("late_mod", None)
    with dlpt.profile(gpu=False, step_on="late_mod:serve") as prof:
        serve = importlib.import_module("late_mod").serve
        calls = [threading.Thread(target=serve, args=(torch.ones(2),)) for _ in range(3)]
        for t in calls:
            t.start()
        for t in calls:
            t.join()
        serve(torch.ones(2))
    assert prof.session.meta["steps"]["seen"] == 4  # each thread's call is a step
    assert importlib.import_module("late_mod").serve.__name__ == "serve"
    assert not hasattr(sys.modules["late_mod"].serve, "__wrapped__")  # restored at stop


def test_a_bad_step_on_name_fails_at_once() -> None:
    with pytest.raises(UsageError, match="not a function name"):
        dlpt.profile(step_on="a b")


# -- what a profile never does -------------------------------------------------------------------


def test_profiling_never_imports_dynamo_unless_the_program_does(tmp_path: Path) -> None:
    r = _run(
        """
        import sys, torch, dlpt
        with dlpt.profile() as prof:
            torch.ones(2) + 1  # (an optimizer step would: torch 2.13's first step imports Dynamo)
        prof.print()
        print("DYNAMO", "torch._dynamo" in sys.modules, "torch._inductor" in sys.modules)
        with dlpt.profile() as prof:
            import torch._dynamo  # imported while the profile runs: compile events from now on
            f = torch.compile(lambda x: x.sin() + 1, backend="eager")
            f(torch.ones(3))
        print("EVENTS", len(prof.session.meta["compile"]))
        """,
        tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert "DYNAMO False False" in r.stdout
    assert "EVENTS 1" in r.stdout


def test_a_forked_child_leaves_its_parents_profile_alone(tmp_path: Path) -> None:
    r = _run(
        """
        import os, torch, dlpt
        with dlpt.profile(gpu=False) as prof:
            pid = os.fork()
            torch.ones(2) + 1
        if pid == 0:
            try:
                prof.stop()
            except dlpt.UsageError as e:
                print("CHILD", "belongs to process" in str(e), flush=True)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        print("PARENT", os.waitstatus_to_exitcode(status), len(prof.session.nodes) > 1)
        """,
        tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert "CHILD True" in r.stdout and "PARENT 0 True" in r.stdout


# -- the stop step: suggestions, and the pinned-copy probe (a measurement on the GPU) -----------


def _record_stop_steps(monkeypatch) -> list[bool]:
    import dlpt.finish

    probes: list[bool] = []
    real = dlpt.finish.finish_session

    def finish(source: Any, probe: bool = True) -> None:  # the session or the run's view of it
        probes.append(probe)
        real(source, probe=probe)

    monkeypatch.setattr(dlpt.finish, "finish_session", finish)
    return probes


def test_the_stop_step_runs_once_for_the_running_profile_never_for_a_joined_one(monkeypatch) -> None:
    probes = _record_stop_steps(monkeypatch)
    host = dlpt.profile(joinable=True).start()
    try:
        # It joins: its options are the host's, and it says so.
        with pytest.warns(RuntimeWarning, match="flops"), dlpt.profile(flops=True) as inner:
            torch.ones(4).sum()
        assert probes == []  # leaving the host running: nothing built, nothing measured
    finally:
        session = host.stop()
    assert probes == [True] and session is not None and isinstance(session.meta["suggestions"], list)
    assert inner.session is session


def test_no_probe_after_the_gpu_failed_to_synchronise(monkeypatch) -> None:
    import dlpt.capture.profiler

    probes = _record_stop_steps(monkeypatch)
    prof = dlpt.profile(gpu=False).start()
    torch.ones(4).sum()

    def broken() -> None:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(dlpt.capture.profiler, "_synchronize_all", broken)
    with pytest.warns(RuntimeWarning, match="could not synchronise"):
        session = prof.stop()
    assert probes == [False] and session is not None and "suggestions" in session.meta


def test_a_forked_childs_own_profile_makes_no_probe(tmp_path: Path) -> None:
    r = _run(
        """
        import os, torch, dlpt, dlpt.finish as P
        probes = []
        real = P.finish_session
        def finish(source, probe=True):
            probes.append(probe)
            real(source, probe=probe)
        P.finish_session = finish
        pid = os.fork()
        if pid:
            os.waitpid(pid, 0)  # the child profiles and prints first
        with dlpt.profile(gpu=False) as prof:
            torch.ones(2) + 1
        who = "CHILD" if pid == 0 else "PARENT"
        print(who, probes, isinstance(prof.session.meta.get("suggestions"), list), flush=True)
        if pid == 0:
            os._exit(0)
        """,
        tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert "CHILD [False] True" in r.stdout and "PARENT [True] True" in r.stdout
