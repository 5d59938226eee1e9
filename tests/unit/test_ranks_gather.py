"""Rank 0 waits for the other ranks' sessions on the filesystem, bounded, and takes only this
run's (dlpt.cli.gather); who prints what at the end of a rank's run (dlpt.cli.rank_finish)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from dlpt.cli.gather import CLOCK_SLACK_S, gather
from dlpt.cli.rank_finish import Role
from dlpt.model.session import Session
from tests import rank_sessions as R


class FakeClock:
    """A clock that advances only when the gatherer sleeps; ``on_sleep`` runs at each sleep."""

    def __init__(self, on_sleep=None) -> None:
        self.now = 0.0
        self.sleeps = 0
        self.on_sleep = on_sleep

    def __call__(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.sleeps += 1
        self.now += s
        if self.on_sleep is not None:
            self.on_sleep(self.sleeps)


def _save(path: Path, rank: int, run_id: str = "torchrun:test:0") -> None:
    s = R.ddp_gpu(rank, world=3)
    s.meta["distributed"]["run_id"] = run_id
    s.save(path)


def _gather(tmp_path: Path, clock: FakeClock, timeout: float = 5.0, since: float | None = None) -> object:
    own = R.ddp_gpu(0, world=3)
    return gather(
        str(tmp_path / "run.json"),
        3,
        (0, str(tmp_path / "run.rank0.json"), own),
        timeout,
        time.time() - 10 if since is None else since,
        "torchrun:test:0",
        poll_s=0.5,
        clock=clock,
        sleep=clock.sleep,
    )


def test_all_there_no_wait(tmp_path: Path) -> None:
    for r in (1, 2):
        _save(tmp_path / f"run.rank{r}.json", r)
    clock = FakeClock()
    got = _gather(tmp_path, clock)
    assert sorted(got.sessions) == [0, 1, 2] and got.missing == {} and clock.sleeps == 0


def test_waits_for_a_late_rank_then_names_the_missing_one(tmp_path: Path) -> None:
    _save(tmp_path / "run.rank1.json", 1)
    late = tmp_path / "run.rank2.json"
    clock = FakeClock(lambda n: _save(late, 2) if n == 3 else None)
    got = _gather(tmp_path, clock)
    assert sorted(got.sessions) == [0, 1, 2] and clock.sleeps == 3
    late.unlink()
    clock = FakeClock()
    got = _gather(tmp_path, clock, timeout=2.0)
    assert sorted(got.sessions) == [0, 1]
    assert got.missing[2].startswith("no session written at ") and got.missing[2].endswith("after 2 s")
    assert clock.now == 2.0  # bounded


def test_a_file_of_an_earlier_run_does_not_count(tmp_path: Path) -> None:
    old = tmp_path / "run.rank1.json"
    _save(old, 1)
    past = time.time() - 10 * CLOCK_SLACK_S
    os.utime(old, (past, past))
    _save(tmp_path / "run.rank2.json", 2, run_id="torchrun:another:0")
    got = _gather(tmp_path, FakeClock(), timeout=1.0)
    assert sorted(got.sessions) == [0]
    assert "earlier run" in got.missing[1] and "another run" in got.missing[2]


def test_a_session_of_the_wrong_rank_does_not_count(tmp_path: Path) -> None:
    _save(tmp_path / "run.rank1.json", 2)
    got = _gather(tmp_path, FakeClock(), timeout=0.0)
    assert "rank 2, not 1" in got.missing[1]


def test_the_own_session_is_not_read_again(tmp_path: Path) -> None:
    for r in (1, 2):
        _save(tmp_path / f"run.rank{r}.json", r)
    own = R.ddp_gpu(0, world=3)
    got = gather(str(tmp_path / "run.json"), 3, (0, "nowhere.json", own), 1.0, 0.0, None)
    assert got.sessions[0] == ("nowhere.json", own)
    assert isinstance(got.sessions[1][1], Session)


def test_who_prints() -> None:
    single = Role(None, 1, "0")
    assert single.prints_own and not single.gathers(saved=True) and single.path("r.{rank}.json") == "r.0.json"
    r0, r1 = Role(0, 4, "0"), Role(1, 4, "0")
    assert r0.gathers(saved=True) and not r0.gathers(saved=False) and r0.prints_own
    assert r0.gathers(saved=False, store=True) and not r1.gathers(saved=False, store=True)
    assert not r1.prints_own and not r1.gathers(saved=True) and not r1.chatty
    assert r1.path("run.json") == "run.rank1.json" and r1.prefix == "dlpt[rank 1]"
    assert Role(1, 4, "all").prints_own and not Role(1, 4, "all").gathers(saved=True)
    assert not Role(0, 4, "none").prints_own and not Role(0, 4, "none").gathers(saved=True)
