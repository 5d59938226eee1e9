"""The timeline window (``timeline=N`` / ``--timeline N``) keeps N counted steps, after the
warm-up: not the first N steps of the run, set-up and warm-up included (issue 33). The warm-up
steps run one op (aten::add), the counted steps another (aten::mul), so the window's ops say which
steps it holds."""

from __future__ import annotations

import time
from typing import Any

import torch

import dlpt


def _ops(session: Any) -> set[str]:
    tl = session.meta["timeline"]
    names = tl["strings"]
    return {names[e[4]] for e in tl["events"] if e[0] == 1}  # KIND_CODE["op"]


def _steps(session: Any) -> list[str]:
    tl = session.meta["timeline"]
    names = tl["strings"]
    return [names[e[4]] for e in tl["events"] if e[0] == 0]


def test_skip_first_then_n_counted_steps() -> None:
    x = torch.ones(8)
    with dlpt.profile(skip_first=3, timeline=2, sample_hz=0) as prof:
        for i in range(8):
            if i < 3:
                x.add(1)  # warm-up
            else:
                x.mul(2)  # counted
            time.sleep(0.001)  # boundaries closer than 20 µs are one (csrc/host/host_capture.cpp)
            prof.step()
    s = prof.session
    assert s is not None
    assert s.meta["steps"]["profiled"] == 5
    tl = s.meta["timeline"]
    assert tl["steps"] == 2 and tl["steps_requested"] == 2
    ops = _ops(s)
    assert "aten::mul" in ops, ops
    assert "aten::add" not in ops, f"the window holds warm-up steps: {sorted(ops)}"
    assert len(_steps(s)) == 3  # the marks that open and close the window's two steps


def test_automatic_warm_up_then_n_counted_steps() -> None:
    x = torch.ones(8)
    with dlpt.profile(timeline=2, sample_hz=0) as prof:
        for i in range(110):  # the automatic warm-up waits for a steady state (33 steps at least)
            if i == 0:
                time.sleep(0.05)
                x.add(1)  # the first step is always warm-up (it holds the set-up)
            else:
                x.mul(2)
            time.sleep(0.001)
            prof.step()
    s = prof.session
    assert s is not None
    warm = s.meta["steps"]["warmup"]["steps"]
    assert 1 <= warm < 110 and s.meta["steps"]["profiled"] >= 2
    ops = _ops(s)
    assert s.meta["timeline"]["steps"] == 2
    assert "aten::mul" in ops and "aten::add" not in ops, sorted(ops)


def test_a_timeline_longer_than_the_first_calibration_window_is_kept_whole() -> None:
    """Tracing stops for the first untraced window after 10 counted steps; the window would close
    there: the schedule keeps tracing until the timeline's steps are recorded."""
    x = torch.ones(8)
    with dlpt.profile(skip_first=1, timeline=14, sample_hz=0) as prof:
        for _ in range(30):
            x.mul(2)
            time.sleep(0.001)  # boundaries closer than 20 µs are one (csrc/host/host_capture.cpp)
            prof.step()
    s = prof.session
    assert s is not None
    assert s.meta["timeline"]["steps"] == 14
