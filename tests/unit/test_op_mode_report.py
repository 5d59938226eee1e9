"""The report says which op mode a session ran (meta.capture.op_mode, issue 50) and, for the lean
mode, how many op calls launched nothing and what their CPU time rests on (the host sampler, or
nothing when it was off): in the verbose terminal header and among the HTML page's facts, never in
the compact header; sessions saved before the modes existed say nothing (synthetic sessions)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import tests.sessions as S
from dlpt.analysis.report import build_report
from dlpt.model.session import Session
from dlpt.renderers.html.data import build_model
from dlpt.renderers.terminal.report import render

HOST = {"sample_hz": 1000, "sampling": True, "samples": 812, "ticks": 812, "sampled_wall_ns": 812_000_000}


def session(mode: str | None, host: dict[str, Any] | None = HOST) -> Session:
    d = copy.deepcopy(S.gpt_eager())
    capture = d["meta"].setdefault("capture", {})
    if mode is not None:
        lean = mode == "lean"  # 20,000 op calls: 7,000 walked at a launch, 1,000 at their end
        capture.update(op_mode=mode, deferred_ops=20_000 * lean, deferred_at_launch=7_000 * lean)
        capture["deferred_at_end"] = 1_000 * lean
    if host is not None:
        d["meta"]["host"] = host
    return Session.from_dict(d)


def ops_facts(s: Session) -> list[Any]:
    return [f for f in build_report(s).header if f.kind == "ops"]


def header(h: Any, s: Session, verbose: bool) -> str:
    text = h.render_text(render(s, view="tree", threshold=0.0, verbose=verbose), width=4000)
    return " ".join(text.split("╯", 1)[0].split())


def test_a_lean_session_says_what_its_cpu_op_time_rests_on(h: Any) -> None:
    s = session("lean")
    (fact,) = ops_facts(s)
    assert fact.text.startswith("ops: lean - kernels, copies, memsets and syncs on their exact lines and ops")
    assert "12,000 of 20,000 op calls (60%) launched nothing" in fact.text
    assert "the host sampler's time per line (1,000 Hz, 812 stacks)" in fact.text
    assert "--exact-ops" in fact.text and fact.level == "dim"
    assert fact.text in header(h, s, verbose=True)
    assert "ops: lean" not in header(h, s, verbose=False)  # a detail: --verbose
    assert ["ops", fact.value] in build_model(s)["header"]["facts"]


def test_a_lean_session_without_the_sampler_says_nothing_measured_that_time() -> None:
    (fact,) = ops_facts(session("lean", host={"sample_hz": 0, "sampling": False}))
    assert "their CPU time is in nothing: the host sampler was off" in fact.text
    assert fact.level == "note"


def test_an_exact_session_says_so_and_an_old_one_says_nothing(h: Any) -> None:
    (fact,) = ops_facts(session("exact"))
    assert fact.text.startswith("ops: exact - every op's CPU time and calls on its line")
    assert ["ops", fact.value] in build_model(session("exact"))["header"]["facts"]
    assert ops_facts(session(None)) == []
    assert "ops:" not in header(h, session(None), verbose=True)


@pytest.mark.parametrize("mode", ["lean", "exact"])
def test_the_mode_is_a_typed_meta_field(mode: str) -> None:
    assert session(mode).typed_meta.capture is not None
    assert session(mode).typed_meta.capture.op_mode == mode
