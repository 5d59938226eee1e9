"""The native counters are defined once (csrc/counters.h, DLPT_COUNTERS): the export, the type in
dlpt/_C.pyi and the typed meta (dlpt.model.meta.Capture) must all follow that one list."""

from __future__ import annotations

import ast
import dataclasses
import os

import pytest
import torch

from dlpt.capture.native import core
from dlpt.model import schema as session_schema
from dlpt.model.meta import Capture
from dlpt.model.schema import SchemaError

C = core()
FIELDS = C._testing.counter_fields()  # (name, type, source, doc), in export order
PYI = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "dlpt", "_C.pyi")
PY_TYPE = {"U64": "int", "BOOL": "bool", "STR": "NotRequired[str]"}


def pyi_counters() -> list[tuple[str, str]]:
    with open(PYI, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Counters")
    return [
        (st.target.id, ast.unparse(st.annotation))
        for st in cls.body
        if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)
    ]


def test_the_pyi_types_exactly_the_native_counters_in_order():
    assert pyi_counters() == [(name, PY_TYPE[kind]) for name, kind, _, _ in FIELDS]


def test_the_session_schema_types_every_native_counter():
    captured = [f.name for f in dataclasses.fields(Capture)]
    assert captured[: len(FIELDS)] == [name for name, _, _, _ in FIELDS]  # the typed meta, in order
    good = {"U64": 1, "BOOL": True, "STR": "x"}
    for name, kind, _, _ in FIELDS:
        session_schema.check_meta({"capture": {name: good[kind]}})
        # typed, not passed through: a value of the wrong type is refused
        with pytest.raises(SchemaError):
            session_schema.check_meta({"capture": {name: [1]}})


def test_stop_exports_every_counter_of_the_list_and_nothing_else():
    C.start(False, [], True)
    torch.add(torch.ones(2), 1)
    counters = C.stop()["counters"]
    expected = [name for name, kind, _, _ in FIELDS if kind != "STR"]  # STR: only when not empty
    assert list(counters) == expected
    assert isinstance(counters["tsc"], bool)
    assert counters["op_records"] >= 1
    assert all(type(counters[n]) is int for n, kind, _, _ in FIELDS if kind == "U64")
    for _, _, source, doc in FIELDS:
        assert source in ("live", "stop") and doc


@pytest.mark.parametrize("ops", [1, 9])
def test_the_parts_of_a_callback_are_timed_in_another_callback_than_the_whole(ops):
    # SelfTimer (csrc/context/thread_state.h) times one callback in 32 whole (the first, then
    # every 32nd) and the parts of another, half-way between: the parts' own clock reads must
    # not be counted in the self time they split. The first op's start is timed whole and has no
    # parts timed; the 9th op's start is the 17th callback, the first with its parts timed.
    x = torch.ones(2)
    C.start(False, [], True)
    for _ in range(ops):
        torch.neg(x)  # an outermost op without nested records: two callbacks
    c = C.stop()["counters"]
    assert c["op_records"] == ops and c["self_op_start_ns"] > 0
    parts = (
        "op_start_name_ns",
        "op_start_nodes_ns",
        "op_start_rest_ns",
        "walk_read_ns",
        "walk_site_ns",
        "self_python_ns",
    )
    if ops == 1:
        assert all(c[k] == 0 for k in parts), c
    else:
        assert all(c[k] > 0 for k in parts), c
