"""The typed meta (dlpt.model.meta.Meta): one definition of meta's shape, checked when a session
is loaded, built once per session, and what every stage reads steps, wall time and GPU capture
from (session.typed_meta, or the mapping readers for code without a session)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from dlpt.errors import SessionFormatError
from dlpt.model.meta import (
    Meta,
    Steps,
    gpu_enabled,
    profiled_steps,
    typed_field,
    wall_ns,
)
from dlpt.model.schema import SCHEMA, SchemaError, check_meta
from dlpt.model.session import FORMAT, VERSION, Session

U64 = "must be a non-negative integer below 2**63"
ROOT = {"id": 0, "parent": -1, "kind": "root", "name": "<root>", "file": "", "line": 0, "m": {}}


def doc(meta: dict) -> dict:
    return {"format": FORMAT, "version": VERSION, "meta": meta, "nodes": [dict(ROOT)]}


def test_a_loaded_session_is_typed_once_and_reads_steps_wall_and_gpu(tmp_path):
    meta = {
        "wall_ns": 5_000,
        "steps": {"profiled": 4, "seen": 6, "skip_first": None, "warmup": {"steps": 2, "auto": True}},
        "gpu": {"enabled": False, "reason": "no CUDA device"},
        "compile": [{"function": "f", "file": "a.py", "line": 3, "break_reasons": ["x"], "compile_s": 0.5}],
        "someone_elses": {"kept": [1, 2]},
    }
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc(meta)))
    s = Session.load(path)
    typed = s.typed_meta
    assert typed is s.typed_meta  # built once, at load
    assert (typed.profiled_steps, typed.wall, typed.gpu_enabled) == (4, 5_000, False)
    assert typed.gpu is not None and typed.gpu.reason == "no CUDA device"
    assert typed.steps == Steps(profiled=4, seen=6, warmup=typed.steps.warmup)  # type: ignore[union-attr]
    assert typed.steps is not None and typed.steps.warmup is not None and typed.steps.warmup.auto is True
    assert typed.compile is not None and typed.compile[0].compile_s == 0.5
    # the mapping is what is saved: keys no class names stay, the file round-trips unchanged
    assert s.meta["someone_elses"] == {"kept": [1, 2]}
    s.save(tmp_path / "again.json")
    assert json.loads((tmp_path / "again.json").read_text())["meta"] == meta


@pytest.mark.parametrize(
    ("meta", "message"),
    [
        ({"steps": {"profiled": -1}}, f"meta.steps.profiled {U64}, got -1"),
        ({"steps": {"profiled": True}}, f"meta.steps.profiled {U64}, got True"),
        ({"wall_ns": "5"}, f"meta.wall_ns {U64}, got '5'"),
        ({"gpu": {"enabled": "yes"}}, "meta.gpu.enabled must be true or false, got 'yes'"),
        # null only where a field allows it
        ({"gpu": {"enabled": None}}, "meta.gpu.enabled must be true or false, got None"),
        ({"gpu": []}, "meta.gpu must be an object, got list"),
        ({"compile": [{"function": "f"}]}, "meta.compile[0] lacks the key 'file'"),
        ({"capture": {"flush_s": -1.0}}, "meta.capture.flush_s must be a duration in seconds"),
        ({"sources": {"a.py": {"x": "y"}}}, "meta.sources.a.py key 'x': must be a line number"),
        (
            {"memory": {"devices": {"cuda:0": {"steps": [{"peak_allocated": 1}]}}}},
            "meta.memory.devices.cuda:0.steps[0] lacks the key 'reserved_at_peak'",
        ),
        ({"distributed": {"rank": 0}}, "meta.distributed lacks the key 'world_size'"),
        (
            {"timeline": {"strings": [], "frames": [[0, 1]], "tracks": [], "events": []}},
            "meta.timeline.frames[0] must be a list of 5 integers",
        ),
    ],
)
def test_a_value_of_the_wrong_shape_is_one_line_naming_the_file_and_the_field(meta, message):
    with pytest.raises(SchemaError) as e:
        check_meta(meta)
    assert message in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(SessionFormatError) as e2:
        Session.from_dict(doc(meta), "run.json")
    assert str(e2.value).startswith("run.json: meta.") and message in str(e2.value)


def test_null_reads_as_absent_at_the_top_and_where_a_field_is_nullable():
    typed = check_meta({"steps": None, "gpu": {"enabled": True, "reason": None}, "wall_ns": None})
    assert typed.steps is None and typed.wall == 0 and typed.profiled_steps == 0
    assert typed.gpu is not None and typed.gpu.reason is None and typed.gpu_enabled is True


def test_every_field_of_the_typed_meta_is_a_checked_key():
    assert {f.name for f in dataclasses.fields(Meta)} == SCHEMA
    for name in SCHEMA:  # a list where any key expects something else is refused, naming it
        with pytest.raises(SchemaError, match=rf"^meta\.{name}"):
            check_meta({name: [[]] if name not in ("argv", "threads_running") else [1]})


def test_a_session_made_in_memory_is_never_refused_a_bad_value_reads_as_absent():
    s = Session(None, {"steps": {"profiled": "four"}, "wall_ns": 7, "gpu": {"enabled": True}})
    assert s.typed_meta.steps == Steps() and s.typed_meta.profiled_steps == 0
    assert s.typed_meta.wall == 7 and s.typed_meta.gpu_enabled is True
    assert Session(None, {"wall_ns": "7", "steps": [1]}).typed_meta == Meta()


def test_in_memory_lists_and_records_keep_what_reads():
    """As the defensive reads the typed meta replaced: a list keeps its good items, a record its
    good fields; a record without a required field is left out."""
    good = {"rule": "r", "title": "t", "gain_ns": 5}
    m = Session(
        None, {"suggestions": [good, {"rule": "broken"}, "junk"], "gpu_busy_ns": {"0": 5, "1": -1}}
    ).typed_meta
    assert [x.rule for x in m.suggestions or []] == ["r"] and m.gpu_busy_ns == {"0": 5}
    ev = {"function": "f", "file": "m.py", "line": 1, "break_reasons": [], "compile_s": float("nan")}
    (typed,) = Session(None, {"compile": [ev]}).typed_meta.compile or []
    assert typed.compile_s is None and typed.function == "f"


def test_set_meta_keeps_the_typed_meta_in_step():
    s = Session(None, {"steps": {"profiled": 2}})
    assert s.typed_meta.suggestions is None
    s.set_meta("suggestions", [{"rule": "r", "title": "t", "gain_ns": 5}])
    assert [x.rule for x in s.typed_meta.suggestions or []] == ["r"] and s.meta["suggestions"][0][
        "rule"
    ] == "r"
    s.set_meta("other_tool", {"x": 1})  # a key no class names: kept in the mapping only
    assert s.meta["other_tool"] == {"x": 1} and s.typed_meta.profiled_steps == 2


def test_assigning_meta_types_it_again():
    s = Session(None, {"steps": {"profiled": 2}})
    assert s.typed_meta.profiled_steps == 2
    s.meta = {"steps": {"profiled": 5}}
    assert s.typed_meta.profiled_steps == 5


def test_the_mapping_readers_read_through_the_same_types():
    meta = {"steps": {"profiled": 3}, "wall_ns": 10, "gpu": {"enabled": False}}
    assert (profiled_steps(meta), wall_ns(meta), gpu_enabled(meta)) == (3, 10, False)
    bad = {"steps": {"profiled": -3}, "wall_ns": True, "gpu": {"enabled": 1}}
    assert (profiled_steps(bad), wall_ns(bad), gpu_enabled(bad)) == (0, 0, None)
    assert typed_field({}, "steps") is None and gpu_enabled({}) is None


def test_timeline_rows_allow_minus_one_only_where_the_format_does():
    row = [1, 2, 3, 0, 5, -1, 7, 8]  # [kind, start, dur, track, name, frame (-1: none), corr, flags]
    tl = {"strings": [], "frames": [[-1, 0, 0, 0, 0]], "tracks": [[0, 0, 0, 0]], "events": [row]}
    assert check_meta({"timeline": tl}).timeline is not None
    for i in (0, 4, 7):
        bad = list(row)
        bad[i] = -1
        with pytest.raises(SchemaError, match=rf"^meta\.timeline\.events\[0\]\[{i}\] is out of range: -1$"):
            check_meta({"timeline": dict(tl, events=[bad])})
    with pytest.raises(SchemaError, match=r"events\[0\]\[5\] is out of range: -2"):
        check_meta({"timeline": dict(tl, events=[[1, 2, 3, 0, 5, -2, 7, 8]])})
