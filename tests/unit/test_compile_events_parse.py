"""Compile events from Dynamo's compilation metrics (synthetic records, no compiler needed)."""

from types import SimpleNamespace

from dlpt.capture.compile.events import events_from_metrics
from dlpt.model.compile_events import graph_breaks, recompilations

REASON = (
    "Failed to trace builtin operator\n  Explanation: Dynamo does not know how to trace builtin "
    "operator `print`\n  Hint: ..."
)


def metric(compile_id, name, line, **kw):
    base = dict(
        compile_id=compile_id,
        frame_key="k",
        co_name=name,
        co_filename="/m/model.py",
        co_firstlineno=line,
        entire_frame_compile_time_s=0.5,
        backend_compile_time_s=0.1,
        inductor_compile_time_s=0.05,
        graph_op_count=3,
        restart_reasons=set(),
        recompile_reason=None,
        fail_type=None,
        start_time=1.0,
    )
    base.update(kw)
    return SimpleNamespace(**base)


def test_graph_break_is_located_at_the_resume_line_with_its_reason():
    events = events_from_metrics(
        [
            metric("0/0", "forward", 10, restart_reasons={REASON}),
            metric("1/0", "torch_dynamo_resume_in_forward_at_14", 14),
        ]
    )
    assert events[1]["resume_of"] == {"function": "forward", "line": 14}
    (b,) = graph_breaks(events)
    assert (b["file"], b["line"], b["function"]) == ("/m/model.py", 14, "forward")
    assert b["reason"].startswith("Failed to trace builtin operator (Dynamo does not know")


def test_a_break_whose_resume_was_not_compiled_is_shown_at_the_frame():
    (b,) = graph_breaks(events_from_metrics([metric("0/0", "forward", 10, restart_reasons={REASON})]))
    assert (b["line"], b["function"]) == (10, "forward")


def test_recompilations_carry_the_failed_guard_first_line():
    events = events_from_metrics(
        [
            metric("0/0", "forward", 10),
            metric("0/1", "forward", 10, recompile_reason="0/0: tensor 'x' size mismatch at index 0.\n more"),
            metric("1/1", "torch_dynamo_resume_in_forward_at_14", 14, recompile_reason="1/0: n   ==   1"),
        ]
    )
    rec = recompilations(events)
    assert [r["reason"] for r in rec] == ["0/0: tensor 'x' size mismatch at index 0.", "1/0: n == 1"]
    assert rec[1]["function"] == "forward (after the graph break at line 14)"
    assert sum(e["compile_s"] for e in events) == 1.5


def test_cache_hits_are_counted_and_said_as_cached():
    """A compile served from Inductor's FX graph cache or AOTAutograd's takes Inductor no time:
    the summary says "cached" instead of "Inductor 0.00 s"."""
    from dlpt.analysis.report.compile_summary import compile_summary

    hit = metric(
        "0/0",
        "forward",
        10,
        inductor_compile_time_s=0.0,
        inductor_fx_local_cache_hit_count=1,
        aotautograd_local_cache_hit_count=1,
        inductor_fx_remote_cache_hit_count=None,
    )
    (ev,) = events_from_metrics([hit])
    assert ev["cache_hits"] == 2
    summary = compile_summary({"compile": [ev]})
    assert (
        summary is not None and "0.50 s compiling (Inductor: cached, 2 graphs from its cache)" in summary.text
    )
    assert "Inductor 0.00 s" not in summary.text
    # A compile that ran Inductor keeps its time.
    (fresh,) = events_from_metrics([metric("0/0", "forward", 10)])
    assert fresh["cache_hits"] == 0
    assert "(Inductor 0.05 s of it)" in compile_summary({"compile": [fresh]}).text
