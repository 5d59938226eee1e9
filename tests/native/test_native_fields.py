"""Each native result's fields are defined once, in csrc/ (as the counters are: test_counters.py):
the sampler's stats (csrc/host/sampler.h, DLPT_SAMPLER_STATS) and a counted step's memory peak
(csrc/memory/tracker.h, DLPT_MEMORY_STEP_PEAK). dlpt/_C.pyi, the saved names
(dlpt.model.meta.SAMPLER_STATS, MEMORY_STEP_PEAK), the typed meta and what the extension
returns must all follow those lists."""

from __future__ import annotations

import ast
import dataclasses
import os
import re
from typing import Any

import pytest
import torch

from dlpt.capture.host_session import host_meta
from dlpt.capture.native import core, to_nodes
from dlpt.model import meta as typed
from dlpt.model.schema import SchemaError, check_extras, check_meta

C = core()
PYI = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "dlpt", "_C.pyi")
STATS = [name for name, doc in C._testing.sampler_stat_fields() if doc]
PEAK = [name for name, doc in C._testing.memory_step_fields() if doc]


def _pyi() -> ast.Module:
    with open(PYI, encoding="utf-8") as f:
        return ast.parse(f.read())


def pyi_fields(cls_name: str) -> list[tuple[str, str]]:
    cls = next(n for n in _pyi().body if isinstance(n, ast.ClassDef) and n.name == cls_name)
    return [
        (st.target.id, ast.unparse(st.annotation))
        for st in cls.body
        if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)
    ]


def pyi_alias(name: str) -> str:
    node = next(
        n for n in _pyi().body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == name
    )
    return ast.unparse(node.value)


# -- the sampler's stats -------------------------------------------------------------------------


def _sampled_step(ops: int, size: int, *host_args: int) -> tuple[Any, Any]:
    """One counted step of ``ops`` small ops under the core and the host sampler (started with
    ``host_args``): what host_start and host_result returned."""
    C.start(False, [], False)
    started = C.host_start(*host_args)
    try:
        C.set_collecting(True)
        for _ in range(ops):
            torch.ones(size).add(1)
        C.mark_step()
        C.set_collecting(False)
    finally:
        C.host_stop()
        C.stop()
    return started, C.host_result()


def test_the_sampler_stats_are_one_list_in_the_core_the_stub_and_the_saved_names():
    assert len(STATS) == len(C._testing.sampler_stat_fields())  # every field documented
    assert pyi_fields("SamplerStats") == [(name, "int") for name in STATS]
    assert list(typed.SAMPLER_STATS) == STATS
    host_fields = [f.name for f in dataclasses.fields(typed.Host)]
    assert [n for n in host_fields if n in STATS] == STATS  # typed in meta.host, in order


def test_the_host_result_exports_every_stat_of_the_list_and_meta_host_saves_each():
    _, raw = _sampled_step(50, 64, 1000)
    stats = raw["stats"]
    assert list(stats) == STATS
    assert all(type(v) is int for v in stats.values())
    saved = host_meta([], dict(raw))
    assert {k: saved[k] for k in STATS} == stats  # saved under the native names, unchanged
    check_meta({"host": saved})


@pytest.mark.parametrize("name", typed.SAMPLER_STATS)
def test_each_saved_stat_is_typed(name):
    assert getattr(check_meta({"host": {name: 3}}).host, name) == 3
    with pytest.raises(SchemaError, match=rf"meta\.host\.{name} must be a non-negative integer"):
        check_meta({"host": {name: "3"}})


# -- a counted step's memory peak ----------------------------------------------------------------


def test_the_memory_step_peak_is_one_list_in_the_core_the_stub_and_the_saved_names():
    assert list(typed.MEMORY_STEP_PEAK) == PEAK
    assert [f.name for f in dataclasses.fields(typed.MemoryStep)] == PEAK
    assert pyi_alias("MemoryStepPeak") == f"tuple[{', '.join(['int'] * len(PEAK))}]"


def test_the_exported_step_row_is_in_the_lists_order():
    # One counted step on a CUDA device: 50 untraced bytes, then 100 traced (the peak, 150
    # allocated with 1000 reserved), freed, then more reserved (3000) after the peak.
    out = C._testing.memory_events(
        [
            ("step_begin", 0, 0, 0, 0, 0, 0, -1),
            ("alloc", 1, 0, 0x10, 50, 50, 1000, -1),
            ("alloc", 1, 0, 0x20, 100, 150, 1000, 1),
            ("free", 1, 0, 0x20, 0, 50, 1000, -1),
            ("alloc", 1, 0, 0x30, 10, 60, 3000, -1),
            ("step_end", 0, 0, 0, 1, 0, 0, -1),
        ]
    )
    (row,) = out["devices"][0]["steps"]
    assert dict(zip(PEAK, row, strict=True)) == {
        "peak_allocated": 150,
        "reserved_at_peak": 1000,
        "peak_reserved": 3000,
        "traced_at_peak": 100,
    }


# -- every dict the extension returns has the stub's keys ------------------------------------------


def keys_of(cls_name: str) -> set[str]:
    return {name for name, _ in pyi_fields(cls_name)}


def test_the_host_results_keys_are_the_stubs():
    started, raw = _sampled_step(1, 8, 1000, 1, 100)
    assert set(started) == keys_of("HostStart")
    assert set(raw) == keys_of("HostResult")
    assert raw["timeline"] is not None and set(raw["timeline"]) == keys_of("HostTimeline")
    ops = [("mark", 0, 0, 0, 0), ("sample", 5, 9, 5, 0), ("mark", 10, 1, 0, 0)]
    blame = C._testing.idle_blame(False, ops)
    assert set(blame) == keys_of("HostBlame")


def test_the_memory_exports_keys_are_the_stubs():
    out = C._testing.memory_events(
        [
            ("step_begin", 0, 0, 0, 0, 0, 0, -1),
            ("alloc", 1, 0, 0x10, 50, 50, 1000, 1),
            ("oom", 1, 0, 0, 4096, 50, 1000, 1),
            ("step_end", 0, 0, 0, 1, 0, 0, -1),
        ]
    )
    assert set(out) == keys_of("MemoryExport")
    assert set(out["devices"][0]) == keys_of("MemoryDevice")
    assert out["oom"] is not None and set(out["oom"]) == keys_of("MemoryOom")


# -- a node's extras: what the bindings put, the stub, the saved x -------------------------------

BINDINGS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "csrc", "bindings.cpp")


def native_extras_keys() -> list[str]:
    """The keys csrc/bindings.cpp's to_dict(const NodeExtras&) puts, in order."""
    with open(BINDINGS, encoding="utf-8") as f:
        text = f.read()
    body = re.search(r"py::dict to_dict\(const NodeExtras& e\) \{(.*?)\n\}", text, re.S)
    assert body is not None, "csrc/bindings.cpp lost to_dict(const NodeExtras&)"
    return re.findall(r'x\["(\w+)"\]', body.group(1))


def test_the_stubs_node_extras_are_the_keys_the_bindings_put():
    keys = native_extras_keys()
    assert keys and [name for name, _ in pyi_fields("NodeExtras")] == keys


def test_every_native_extra_is_typed_in_the_saved_x():
    extras = {f.name: f for f in dataclasses.fields(typed.Extras)}
    assert set(native_extras_keys()) <= set(extras)
    # Tuples become lists (dlpt.capture.native): what a session saves passes its check, typed.
    x = {"direction": "HtoD", "host_mem": "pinned", "device": 1, "grid": (8, 2, 1), "block": (256, 1, 1)}
    x |= {"regs": 32, "smem_static": 1024, "smem_dynamic": 0}
    assert set(x) == set(native_extras_keys())
    zeros = (0,) * 9
    raw = [(0, -1, "root", "<root>", "", 0, zeros, zeros, {}, (0.0, 0.0, 0.0))]
    raw.append((1, 0, "kernel", "k", "", 0, (0, 0, 5, 1, 0, 0, 0, 5, 5), zeros, x, (0.0, 25.0, 0.0)))
    (_, node) = to_nodes(raw)
    check_extras(node["x"], "node 1")
    got = typed.Extras.of(node["x"])
    saved = {k: list(v) if isinstance(v, tuple) else v for k, v in x.items()}
    assert {k: getattr(got, k) for k in x} == saved


def test_the_node_tuple_is_the_stubs():
    C.start(False, [], False)
    try:
        C.set_collecting(True)
        torch.ones(8).add(1)
        C.mark_step()
        C.set_collecting(False)
    finally:
        raw = C.stop()
    alias = ast.parse(pyi_alias("RawNodeTuple"), mode="eval").body
    assert isinstance(alias, ast.Subscript) and isinstance(alias.slice, ast.Tuple)
    assert raw["nodes"] and {len(t) for t in raw["nodes"]} == {len(alias.slice.elts)}
    assert all(type(t[8]) is dict for t in raw["nodes"])
