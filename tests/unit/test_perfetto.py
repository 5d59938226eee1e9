"""The Perfetto export of a timeline window (synthetic session): a valid Chrome trace, slices
nested per track with their source lines in args, sampled stacks merged into frame slices, a
flow from each launch to its kernel; no timeline is a clear usage error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dlpt.analysis.timeline import timeline_view
from dlpt.errors import UsageError
from dlpt.model.session import Session
from dlpt.renderers.exports import perfetto, write_export
from tests.timeline_sessions import timeline_meta
from tests.trace_format import check_trace


def session(h: Any, tl: dict[str, Any] | None) -> Session:
    meta = h.gpu_meta(2)
    if tl is not None:
        meta["timeline"] = tl
    return h.Builder().session(meta)


def test_the_trace_is_valid_and_carries_lines_and_flows(h: Any) -> None:
    trace = perfetto(session(h, timeline_meta()))
    slices = check_trace(json.loads(json.dumps(trace)))
    xs = [e for evs in slices.values() for e in evs]
    op = next(e for e in xs if e["name"] == "aten::linear")
    assert op["ts"] == 100.0 and op["dur"] == 50.0  # µs
    assert op["args"]["line"] == "train.py:40 step" and op["args"]["lineno"] == 40
    kernel = next(e for e in xs if e["name"] == "gemm_kernel")
    assert kernel["args"]["correlation"] == 7 and kernel["args"]["line"] == "train.py:40 step"
    flows = [e for e in trace["traceEvents"] if e["ph"] in ("s", "f")]
    assert {(e["ph"], e["ts"]) for e in flows} == {("s", 110.0), ("f", 200.0)}
    # Samples: <module> spans all four, step() the first three, merged into one slice.
    python = [e for e in xs if e["cat"] == "frame"]
    assert sorted((e["name"], e["ts"], e["dur"]) for e in python) == [
        ("<module>", 0.0, 4000.0),
        ("step", 0.0, 3000.0),
    ]
    step = next(e for e in python if e["name"] == "step")
    assert step["args"]["gil_share"] == pytest.approx(2 / 3, abs=1e-3)
    steps = [e for e in xs if e["cat"] == "step"]
    assert [(e["name"], e["dur"]) for e in steps] == [("step 1", 2000.0), ("step 2", 2000.0)]
    assert trace["otherData"]["events_dropped"] == 3


def test_overlapping_host_events_are_cut_to_nest(h: Any) -> None:
    tl = timeline_meta()
    tl["events"].append([2, 140_000, 20_000, 1, 8, 1, 0, 0])  # runs past the op's end at 150 µs
    check_trace(perfetto(session(h, tl)))
    view = timeline_view(session(h, tl).meta)
    assert view is not None
    late = [s for s in view.slices if s.start_ns == 140_000]
    assert late and late[0].end_ns == 150_000


def test_no_timeline_is_a_usage_error(h: Any, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--timeline N"):
        perfetto(session(h, None))
    tl = timeline_meta()
    write_export(session(h, tl), "perfetto", tmp_path / "t.json")
    check_trace(json.loads((tmp_path / "t.json").read_text()))


def test_hostile_indices_read_as_nothing(h: Any) -> None:
    tl = timeline_meta()
    tl["events"].append([1, 5, 5, 1, 999, 999, 0, 0])  # name and frame out of range
    tl["events"].append([99, 5, 5, 1, 1, 1, 0, 0])  # unknown kind
    tl["frames"].append([57, 0, 999, 999, 1])  # parent out of range
    trace = perfetto(session(h, tl))
    check_trace(trace)
    odd = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["ts"] == 0.005]
    assert odd and odd[0]["name"] == "" and "line" not in odd[0]["args"]


@pytest.mark.parametrize(
    "key,value",
    [
        ("events", [[1, 2, 3]]),
        ("events", [[1, -5, 0, 0, 0, 0, 0, 0]]),
        ("frames", [[-2, 0, 0, 0, 0]]),
        ("strings", [1]),
    ],
)
def test_malformed_timelines_are_format_errors(h: Any, key: str, value: Any) -> None:
    from dlpt.errors import SessionFormatError

    d = session(h, timeline_meta()).to_dict()
    d["meta"]["timeline"][key] = value
    with pytest.raises(SessionFormatError, match=r"meta\.timeline"):
        Session.from_dict(d)


def test_samples_out_of_order_still_nest(h: Any) -> None:
    """A sample stamped before the end of the previous one (seen on a loaded 2-core machine:
    '<module> overlaps its parent') opens its slices after the closed ones, never inside them."""
    meta = timeline_meta()
    ms = 1_000_000
    events = [e for e in meta["events"] if e[0] != 7]
    # A long sample of step() (the sampler was late to stamp its end), then a short one that
    # starts inside it, of another stack: the first sample's slices end after the second starts.
    step, module = meta["strings"].index("step"), meta["strings"].index("<module>")
    events += [
        [7, 0, 3 * ms, 1, step, 1, 0, 1],
        [7, 1 * ms, 500_000, 1, module, 0, 0, 1],
        [7, 1_600_000, 500_000, 1, step, 1, 0, 0],
        [7, 3 * ms, 1 * ms, 1, step, 1, 0, 0],
    ]
    meta["events"] = events
    slices = check_trace(json.loads(json.dumps(perfetto(session(h, meta)))))
    frames = [e for evs in slices.values() for e in evs if e["cat"] == "frame"]
    assert len(frames) >= 3 and all(e["ts"] >= 0 for e in frames)
