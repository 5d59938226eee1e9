"""torch.compile events in the profile: graph breaks at their line with their reason,
recompilations with the guard that failed, compile time; shown in the report and saved."""

from __future__ import annotations

import io
import os

import torch
from rich.console import Console

import dlpt
import dlpt.renderers.terminal.report
from dlpt.model.compile_events import graph_breaks, recompilations
from dlpt.model.session import Session
from tests.query import line_of

HERE = os.path.abspath(__file__)


def breaks_here(x, n):
    y = x * 2
    print("dlpt-test: graph break")  # @break
    return y + n  # @after


def test_graph_break_and_recompilation_are_recorded_at_their_lines(tmp_path, capsys):
    torch._dynamo.reset()
    fn = torch.compile(breaks_here, backend="eager")
    with dlpt.profile() as prof:
        fn(torch.randn(3), 1)
        fn(torch.randn(3), 2)  # the int is specialised: a guard fails, the resumed frame recompiles
    events = prof.session.meta["compile"]
    assert events and all(ev["compile_s"] > 0 for ev in events)

    (brk,) = graph_breaks(events)
    assert (brk["file"], brk["line"], brk["function"]) == (HERE, line_of("break", breaks_here), "breaks_here")
    assert "print" in brk["reason"]

    rec = recompilations(events)
    assert rec and "n == 1" in rec[0]["reason"]
    assert rec[0]["function"].startswith("breaks_here (after the graph break")

    # Saved with the session and shown in the report.
    path = tmp_path / "p.json"
    prof.save(path)
    loaded = Session.load(path)
    assert loaded.meta["compile"] == events
    out = io.StringIO()
    dlpt.renderers.terminal.report.print_report(loaded, Console(file=out, width=140, color_system=None))
    text = out.getvalue()
    assert f"test_compile_events.py:{line_of('break', breaks_here)} breaks_here" in text
    assert "Recompilations" in text


def test_compiles_before_the_profile_are_not_reported():
    torch._dynamo.reset()
    fn = torch.compile(lambda x: x.sin() + 1, backend="eager")
    fn(torch.randn(4))
    with dlpt.profile() as prof:
        fn(torch.randn(4))  # cached: no compilation inside the profile
    assert prof.session.meta["compile"] == []


def item_break(x, n):
    y = torch.sin(x) * 2
    z = y.sum().item()  # @item_break
    return y + n + z


def test_tree_rows_carry_compile_markers():
    torch._dynamo.reset()
    fn = torch.compile(item_break, backend="eager")
    with dlpt.profile() as prof:
        fn(torch.randn(3), 1)
        fn(torch.randn(3), 2)
    out = io.StringIO()
    dlpt.renderers.terminal.report.print_report(
        prof.session, Console(file=out, width=160, color_system=None), threshold=0
    )
    line = line_of("item_break", item_break)
    rows = [r for r in out.getvalue().splitlines() if f"test_compile_events.py:{line} " in r]
    assert rows and any("⚠ graph break" in r for r in rows), rows


def first(x):
    return x.sin() * 2


def second(x):
    return x.cos() * 2


def test_a_profile_run_again_reports_only_its_own_compilations():
    torch._dynamo.reset()
    prof = dlpt.profile()  # as @dlpt.profile() does at every call of the function
    with prof:
        torch.compile(first, backend="eager")(torch.randn(3))
    with prof:
        torch.compile(second, backend="eager")(torch.randn(3))
    assert [ev["function"] for ev in prof.session.meta["compile"]] == ["second"]
