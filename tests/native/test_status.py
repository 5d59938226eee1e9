"""``Profile.status()``: what a running profile is doing, read the way the status line reads it
(real capture on the CPU, a real optimizer, a real Dynamo compilation)."""

from __future__ import annotations

import itertools
import threading

import torch

import dlpt
from dlpt.capture.status import ProfileStatus


def _step(model: torch.nn.Module, opt: torch.optim.Optimizer) -> None:
    model(torch.ones(4, 8)).sum().backward()
    opt.step()


def test_phases_follow_the_step_window() -> None:
    model = torch.nn.Linear(8, 8)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    prof = dlpt.profile(skip_first=2, active=2)
    before = prof.status()
    assert before == ProfileStatus(0.0, 0, 0, "starting")
    seen: list[ProfileStatus] = []
    with prof:
        seen.append(prof.status())
        for _ in range(6):
            _step(model, opt)
            seen.append(prof.status())
        # The status is read from another thread in real use: no lock, no wait.
        other: list[ProfileStatus] = []
        t = threading.Thread(target=lambda: other.append(prof.status()))
        t.start()
        t.join(5)
    assert [(s.phase, s.steps_seen, s.steps_profiled) for s in seen] == [
        ("warm-up", 0, 0),
        ("warm-up", 1, 0),
        ("tracing", 2, 0),
        ("tracing", 3, 1),
        ("done", 4, 2),
        ("done", 5, 2),
        ("done", 6, 2),
    ]
    assert other and other[0].phase == "done" and other[0].steps_seen == 6
    assert all(b.elapsed_s >= a.elapsed_s for a, b in itertools.pairwise(seen))
    after = prof.status()
    assert after.phase == "stopped" and after.steps_profiled == 2


def test_compiling_while_dynamo_compiles() -> None:
    prof = dlpt.profile(skip_first=0)  # no warm-up: the phase around the compilation is "tracing"
    during: list[str] = []

    def backend(gm: torch.fx.GraphModule, _inputs: list[torch.Tensor]) -> object:
        during.append(prof.status().phase)  # Dynamo calls the backend inside the compilation
        return gm.forward

    fn = torch.compile(lambda x: x.sin() + 1, backend=backend)
    with prof:
        assert prof.status().phase == "tracing"
        fn(torch.ones(3))
        after = prof.status().phase
    assert during == ["compiling"] and after == "tracing"


def test_a_joined_profile_reports_the_running_one() -> None:
    host = dlpt.profile(skip_first=1, joinable=True)
    with host:
        with dlpt.profile() as inner:
            st = inner.status()
        assert (st.phase, st.steps_seen, st.steps_profiled) == ("warm-up", 0, 0)
