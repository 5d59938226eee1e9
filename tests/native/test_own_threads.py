"""dlpt's own threads (its signal watchdog, its status line) are never sampled as the program's,
not even in their first moments: the thread is marked before its target's first frame exists.

The watchdog's thread used to mark itself after blocking signals; a CI run on a loaded 2-core
machine sampled it in between (stop 58). These tests widen that moment on purpose."""

from __future__ import annotations

import _thread
import signal
import threading
import time
from typing import Any

import dlpt
from dlpt.capture.host import own_thread_target
from dlpt.cli.signal_watchdog import Watchdog
from dlpt.model.session import Session

HERE = __file__


def spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def first_spins(done: threading.Event) -> None:
    spin(0.3)  # the thread's first line: before anything a target could do to mark itself
    done.set()


def program_spins(done: threading.Event) -> None:
    spin(0.3)
    done.set()


def sampled_functions(s: Session) -> dict[str, int]:
    """This file's functions with the host time sampled in them and under them, by name."""
    out: dict[str, int] = {}
    for n in s.nodes:
        host = n["m"].get("host_ns", 0)
        names = set()
        while n["id"] != 0:
            if n["kind"] == "frame" and n["file"] == HERE:
                names.add(n["name"])
            n = s.nodes[n["parent"]]
        for name in names:
            out[name] = out.get(name, 0) + host
    return out


def test_a_thread_of_dlpts_own_is_not_sampled_from_its_first_line() -> None:
    ours, theirs = threading.Event(), threading.Event()
    with dlpt.profile(gpu=False, sample_hz=1000) as prof:
        _thread.start_new_thread(own_thread_target(lambda: first_spins(ours)), ())
        threading.Thread(target=program_spins, args=(theirs,)).start()
        assert ours.wait(10) and theirs.wait(10)
    sampled = sampled_functions(prof.session)
    assert sampled.get("program_spins", 0) > 50_000_000, sampled  # the sampler saw a thread like it
    assert "first_spins" not in sampled, sampled


def test_the_watchdog_is_not_sampled_while_it_blocks_signals(monkeypatch: Any) -> None:
    # The moment before the watchdog waits (blocking signals), made 0.3 s long.
    real = signal.pthread_sigmask

    def slow_sigmask(how: int, mask: Any) -> set[signal.Signals]:
        spin(0.3)
        return real(how, mask)

    monkeypatch.setattr(signal, "pthread_sigmask", slow_sigmask)
    with dlpt.profile(gpu=False, sample_hz=1000) as prof:
        dog = Watchdog(lambda _signum: None, lambda: None)
        spin(0.5)  # the main thread: the program, holding the GIL half of the time
        dog.close()
    nodes = prof.session.nodes
    assert any(n["kind"] == "frame" and n["name"] == "spin" for n in nodes)  # the program's spin
    # The watchdog's own frames (its thread's _loop, what it called); the main thread's calls
    # into the Watchdog (its creation, close() waiting for the thread) are the program's.
    ours = [n for n in nodes if "slow_sigmask" in n["name"] or n["name"].endswith("_loop")]
    assert not ours, ours
