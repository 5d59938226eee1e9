"""Benchmark-only switches of the native core (csrc/options.h, BenchSwitches): read from the
environment once, at start, and nowhere else."""

from __future__ import annotations

import pytest
import torch

from dlpt.capture.native import core

C = core()


def ops(n: int) -> None:
    x = torch.ones(2)
    for _ in range(n):
        x = torch.add(x, 1)


def test_the_op_callback_floor_counts_records_and_records_nothing(monkeypatch):
    monkeypatch.setenv("DLPT_FLOOR", "op_callback")
    C.start(False, [], True)
    monkeypatch.delenv("DLPT_FLOOR")  # read at start: removing it now changes nothing
    try:
        before = C.floor_records()
        ops(50)
        counted = C.floor_records() - before
    finally:
        raw = C.stop()
    assert counted >= 50
    assert raw["counters"]["op_records"] == 0  # dlpt's own callback was never installed
    assert [n[2] for n in raw["nodes"]] == ["root"]


def test_real_capture_without_the_switch(monkeypatch):
    monkeypatch.delenv("DLPT_FLOOR", raising=False)
    C.start(False, [], True)
    ops(5)
    raw = C.stop()
    assert raw["counters"]["op_records"] >= 5
    assert any(n[3] == "aten::add" for n in raw["nodes"])


def test_an_unknown_floor_is_refused_before_anything_starts(monkeypatch):
    monkeypatch.setenv("DLPT_FLOOR", "cuptii")
    with pytest.raises(ValueError, match="DLPT_FLOOR"):
        C.start(False, [], True)
    assert not C.running()


def test_floor_is_no_longer_a_start_argument():
    with pytest.raises(TypeError):
        C.start(False, [], True, floor=1)
