"""Memory in the reports, from synthetic sessions with known bytes: the header's peak per device
(reserved, cached, untraced), the lines held at the peak with their forward share, the
allocation failure leading the header, the activation-checkpointing suggestion at the module call
that holds the activations, the ``mem_*`` metrics in the tree, ``dlpt diff``, the HTML model and
the schema."""

from __future__ import annotations

import io
from typing import Any

import pytest
from rich.console import Console

from dlpt.analysis.diff import diff_sessions
from dlpt.analysis.inputs import analyze
from dlpt.analysis.report import build_report
from dlpt.analysis.rules.activation_checkpointing import activation_checkpointing
from dlpt.errors import SessionFormatError
from dlpt.model.metrics import METRICS
from dlpt.model.session import Session
from dlpt.renderers.html.data import build_model
from dlpt.renderers.terminal.report import render
from tests import sessions as S

MIB = 1 << 20
TRAIN, MODEL = "/home/u/proj/train.py", "/home/u/proj/model.py"
STEPS = 3


def _session(act: int = 24 * MIB, oom: bool = False, steps: int = STEPS) -> dict[str, Any]:
    """train.py:30 calls Net.forward, whose line 21 (``x = b(x)``) calls Block.forward: line 11
    saves ``act`` bytes of activations per step (forward), line 12 holds 2.5 MiB in forward and
    3 MiB of gradients in backward at the peak; line 13's op has no backward (parameters made
    under no_grad): its 1 MiB is not forward work."""
    b = S.Builder(steps=steps)
    top = b.frame(0, TRAIN, 30, "<module>")
    call = b.frame(top, MODEL, 21, "Net.forward")
    up = b.op(b.frame(call, MODEL, 11, "Block.forward"), "aten::linear", cpu_ns=400_000)
    b.add(up, "phase", "<forward>", mem_peak_bytes=act, mem_alloc_bytes=act, mem_allocs=6, cpu_ns=300_000)
    b.op(b.phase(up, "<backward>"), "AddmmBackward0", cpu_ns=0)  # saved for it: not a lone forward
    add = b.op(b.frame(call, MODEL, 12, "Block.forward"), "aten::linear")
    b.add(add, "phase", "<forward>", mem_peak_bytes=5 * MIB // 2, mem_alloc_bytes=3 * MIB, mem_allocs=6)
    bwd = b.phase(add, "<backward>")
    b.op(bwd, "AddmmBackward0", mem_peak_bytes=3 * MIB, mem_alloc_bytes=3 * MIB, mem_allocs=6)
    lone = b.op(b.frame(call, MODEL, 13, "Block.forward"), "aten::empty")
    b.add(lone, "phase", "<forward>", mem_peak_bytes=MIB, mem_alloc_bytes=MIB, mem_allocs=1)
    traced = act + 5 * MIB // 2 + 3 * MIB + MIB
    peak = traced + 12 * MIB  # parameters, allocated before recording
    memory: dict[str, Any] = {
        "enabled": True,
        "reason": None,
        "tracks_cpu": False,
        "devices": {
            "cuda:0": {
                "allocated": 12 * MIB,
                "reserved": 64 * MIB,
                "steps": [
                    {
                        "peak_allocated": peak,
                        "reserved_at_peak": peak + 8 * MIB,
                        "peak_reserved": peak + 8 * MIB,
                        "traced_at_peak": traced,
                    }
                ]
                * steps,
            }
        },
        "events": 1000,
        "missed_frees": 0,
    }
    if oom:
        site = b.frame(top, TRAIN, 31, "<module>")
        # Per-run values: the Builder multiplies by its steps, so divide first.
        b.nodes[b.op(site, "aten::empty")]["m"]["mem_oom_request_bytes"] = 4096 * MIB
        for n in b.nodes:
            if n["m"].get("mem_peak_bytes"):
                n["m"]["mem_oom_bytes"] = n["m"]["mem_peak_bytes"] // steps
        memory["oom"] = {
            "device": "cuda:0",
            "requested": 4096 * MIB,
            "allocated": peak,
            "reserved": peak,
            "count": 2,
        }
    return b.session({"steps": {"profiled": steps, "seen": steps, "source": "optimizer"}, "memory": memory})


def test_header_states_peak_reserved_cached_untraced_and_lines_held():
    r = build_report(Session.from_dict(_session()))
    mem = [f.text for f in r.facts("memory")]
    assert mem[0] == (
        "memory cuda:0: peak 42.5 MiB allocated per step, 50.5 MiB reserved then: 8.0 MiB reserved but not "
        "allocated (the allocator's cache, fragmentation included); of the peak, 30.5 MiB allocated while "
        "recording (on lines), 12.0 MiB before (parameters, optimizer state, inputs)"
    )
    assert mem[1] == (
        "held at the peak: model.py:11 Block.forward 24.0 MiB (24.0 MiB allocated in its forward), "
        "model.py:12 Block.forward 5.5 MiB (2.5 MiB allocated in its forward), "
        "model.py:13 Block.forward 1.0 MiB"
    )
    assert not r.facts("oom")


def test_allocation_failure_leads_the_header_with_what_was_live():
    r = build_report(Session.from_dict(_session(oom=True)))
    first = [f for f in r.header if f.kind not in ("run", "steps")]
    assert [f.kind for f in first[:2]] == ["oom", "oom"] and first[0].level == "error"
    assert first[0].text == (
        "out of memory on cuda:0 at train.py:31 <module>: an allocation of 4.0 GiB failed with 42.5 MiB "
        "allocated and 42.5 MiB reserved (2 allocations failed; the first is shown)"
    )
    assert first[1].text == (
        "live at the failure: model.py:11 Block.forward 24.0 MiB (24.0 MiB allocated in its forward), "
        "model.py:12 Block.forward 5.5 MiB (2.5 MiB allocated in its forward), model.py:13 Block.forward "
        "1.0 MiB; 12.0 MiB allocated before recording started, on no line"
    )
    # The terminal prints it right after the title's run line, before everything else.
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(render(Session.from_dict(_session(oom=True))))
    lines = [ln.strip("│ ") for ln in out.getvalue().splitlines()]
    assert lines[3].startswith("out of memory on cuda:0 at train.py:31")


def test_checkpointing_is_suggested_at_the_blocks_call_not_the_model_call_with_the_bytes():
    a = analyze(Session.from_dict(_session()))
    (f,) = activation_checkpointing(a)
    assert (f.file, f.line, f.function) == (MODEL, 21, "Net.forward")
    assert f.numbers["freed_bytes"] == 24 * MIB + 5 * MIB // 2  # forward bytes only, not the gradients
    # The forward's time beneath (the core puts an op's own time on its <forward> phase).
    assert f.numbers["recompute_ns"] == 300_000
    assert "Block" in f.title and f.per_step
    r = build_report(Session.from_dict(_session()))
    (s,) = [s for s in r.suggestions if s.finding.rule == "activation_checkpointing"]
    assert s.gain == "-26.5 MiB peak"
    # Small activations (under a quarter of the peak) get no suggestion.
    assert activation_checkpointing(analyze(Session.from_dict(_session(act=MIB)))) == []


def _nested(mlp: int, attn: int) -> dict[str, Any]:
    """A GPT's nesting: train.py:30 calls Net.forward, whose line 21 (``x = block(x)``) calls
    Block.forward, whose line 11 calls MLP (``mlp`` bytes at the peak) and line 12 Attention
    (``attn``); Net.forward:22 (the head) holds 4 MiB outside the blocks."""
    b = S.Builder(steps=STEPS)
    top = b.frame(0, TRAIN, 30, "<module>")
    blocks = b.frame(top, MODEL, 21, "Net.forward")
    for line, module, nbytes in ((11, "MLP", mlp), (12, "Attention", attn)):
        inner = b.frame(b.frame(blocks, MODEL, line, "Block.forward"), MODEL, 40 + line, f"{module}.forward")
        op = b.op(inner, "aten::linear")
        b.add(op, "phase", "<forward>", mem_peak_bytes=nbytes, mem_alloc_bytes=nbytes, mem_allocs=1)
        b.op(b.phase(op, "<backward>"), "AddmmBackward0")
    head = b.op(b.frame(b.frame(top, MODEL, 22, "Net.forward"), MODEL, 50, "Head.forward"), "aten::linear")
    b.add(head, "phase", "<forward>", mem_peak_bytes=4 * MIB, mem_alloc_bytes=4 * MIB, mem_allocs=1)
    b.op(b.phase(head, "<backward>"), "AddmmBackward0")
    peak = mlp + attn + 4 * MIB + 12 * MIB
    step = {"peak_allocated": peak, "reserved_at_peak": peak, "peak_reserved": peak, "traced_at_peak": peak}
    memory = {
        "enabled": True,
        "reason": None,
        "tracks_cpu": False,
        "devices": {"cuda:0": {"allocated": 12 * MIB, "reserved": 64 * MIB, "steps": [step] * STEPS}},
        "events": 100,
        "missed_frees": 0,
    }
    return b.session({"steps": {"profiled": STEPS, "seen": STEPS, "source": "optimizer"}, "memory": memory})


@pytest.mark.parametrize(
    ("mlp", "attn", "where"),
    [
        # The blocks hold 20 of the model call's 24 MiB: the model call gives way to them; their
        # MLP holds 60% of a block's bytes: the block is not split.
        (12 * MIB, 8 * MIB, (21, "Net.forward", "Block")),
        # The MLP holds 80% of the block: checkpointing it alone is the finer, nearly as large cut.
        (16 * MIB, 4 * MIB, (11, "Block.forward", "MLP")),
    ],
)
def test_nested_module_calls_give_way_to_the_ones_beneath_only_when_those_hold_most(
    mlp: int, attn: int, where: tuple[int, str, str]
) -> None:
    found = activation_checkpointing(analyze(Session.from_dict(_nested(mlp, attn))))
    line, function, module = where
    assert [(f.line, f.function) for f in found] == [(line, function)]
    assert found[0].title.startswith(f"activations of {module} hold ")


def test_with_a_failure_the_suggestion_rests_on_what_was_live_then():
    (f,) = activation_checkpointing(analyze(Session.from_dict(_session(oom=True))))
    assert f.numbers["freed_bytes"] == 24 * MIB + 5 * MIB // 2 and not f.per_step
    assert "memory live at the failure" in f.title


@pytest.mark.parametrize("metric", ["mem_peak", "mem_alloc", "mem_allocs"])
def test_tree_ranks_lines_by_memory_metrics(metric):
    out = io.StringIO()
    Console(file=out, width=160, color_system=None).print(
        render(Session.from_dict(_session()), metric=metric)
    )
    text = out.getvalue()
    assert METRICS[metric].label in text
    row = next(ln for ln in text.splitlines() if "─ model.py:11 Block.forward" in ln)  # the tree's row
    assert row.split()[0] == {"mem_peak": "24.0", "mem_alloc": "24.0", "mem_allocs": "6"}[metric]


def test_diff_compares_memory_per_line():
    a = Session.from_dict(_session())
    b = Session.from_dict(_session(act=12 * MIB))
    d = diff_sessions(a, b)
    m = METRICS["mem_peak"]
    rows = {(r.a or r.b).line: (d.value(m, r, "a"), d.value(m, r, "b")) for r in d.ranked(m)}
    assert rows[11] == (24 * MIB, 12 * MIB)
    assert rows[12] == (5.5 * MIB, 5.5 * MIB)


def test_html_model_offers_the_memory_metrics_and_header_facts():
    model = build_model(Session.from_dict(_session()))
    names = {m["name"]: m for m in model["metrics"]}
    assert names["mem_peak"]["unit"] == "bytes" and names["mem_peak"]["keys"] == ["mem_peak_bytes"]
    facts = dict(model["header"]["facts"])
    assert facts["memory cuda:0"].startswith("peak 42.5 MiB allocated per step")
    warnings = [w["text"] for w in build_model(Session.from_dict(_session(oom=True)))["header"]["warnings"]]
    assert warnings[0].startswith("out of memory on cuda:0")


def test_capture_off_is_a_warning_and_old_sessions_say_nothing():
    s = _session()
    s["meta"]["memory"] = {"enabled": False, "reason": "torch.profiler is running on this thread"}
    r = build_report(Session.from_dict(s))
    assert [(f.text, f.level) for f in r.facts("memory")] == [
        ("memory capture: off - torch.profiler is running on this thread", "warn")
    ]
    del s["meta"]["memory"]
    assert build_report(Session.from_dict(s)).facts("memory") == []


@pytest.mark.parametrize(
    "bad, where",
    [
        ({"devices": {"cuda:0": {"steps": [{"peak_allocated": 1}]}}}, "lacks the key"),
        ({"oom": {"device": "cuda:0", "requested": -1, "allocated": 0, "reserved": 0}}, "requested"),
        ({"enabled": "yes"}, "meta.memory.enabled"),
    ],
)
def test_schema_rejects_a_malformed_memory_meta(bad, where):
    s = _session()
    s["meta"]["memory"] = bad
    with pytest.raises(SessionFormatError, match=where):
        Session.from_dict(s)
