"""``dlpt verify`` runs the new code with the options its base was recorded with, read back from
the session (dlpt.cli.base_flags): what changed the numbers is carried over, outputs are not."""

from __future__ import annotations

from dlpt.capture.host import DEFAULT_SAMPLE_HZ
from dlpt.cli.base_flags import flags_of
from dlpt.model.session import Session


def _meta(meta: dict) -> Session:
    root = {"id": 0, "parent": -1, "kind": "root", "name": "<root>", "file": "", "line": 0, "m": {}}
    return Session.from_dict({"format": "dlpt-session", "version": 3, "meta": meta, "nodes": [root]})


def test_the_options_that_changed_the_numbers_are_read_back() -> None:
    s = _meta(
        {
            "steps": {"profiled": 10, "skip_first": 3, "active": 10, "step_on": "generate"},
            "flops": {"ops": 4},
            "memory": {"enabled": True},
            "host": {"sample_hz": DEFAULT_SAMPLE_HZ + 1},
            "step_time": {"calibrate": False},
            "sources": {"/p/a.py": {"1": "x = 1"}},
        }
    )
    assert flags_of(s.typed_meta) == [
        "--skip-first", "3", "--active", "10", "--step-on", "generate", "--flops", "--memory",
        "--sample-hz", str(DEFAULT_SAMPLE_HZ + 1), "--calibrate", "off",
    ]  # fmt: skip


def test_defaults_add_nothing_but_a_session_without_sources_asks_for_none() -> None:
    plain = {"steps": {"profiled": 10, "skip_first": None}, "host": {"sample_hz": DEFAULT_SAMPLE_HZ}}
    assert flags_of(_meta({**plain, "sources": {"/p/a.py": {"1": "x"}}}).typed_meta) == []
    assert flags_of(_meta(plain).typed_meta) == ["--no-source"]
    gpu_off = {"gpu": {"enabled": False, "reason": "GPU capture disabled (gpu=False / --no-gpu)"}}
    assert "--no-gpu" in flags_of(_meta({**plain, **gpu_off}).typed_meta)
