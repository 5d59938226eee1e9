"""Sessions written to break dlpt: every one is refused with a one-line SessionFormatError before
anything renders, or (escapes.json, valid but nasty) renders with every control character
escaped. The small fixtures are checked in under fixtures/hostile/; large ones are made here."""

from __future__ import annotations

import builtins
import io
import linecache
import os
from pathlib import Path

import pytest
from rich.console import Console

from dlpt.errors import SessionFormatError
from dlpt.model.session import MAX_FILE_BYTES, Session
from dlpt.renderers.terminal.report import VIEWS, render

FIXTURES = Path(__file__).parent / "fixtures" / "hostile"

# fixture file: what the message must say (besides naming the file)
REFUSED = {
    "meta_compile_not_objects.json": "meta.compile[0] must be an object",
    "meta_compile_event_incomplete.json": "meta.compile[0] lacks the key 'line'",
    "meta_compile_reasons_not_list.json": "meta.compile[0].break_reasons must be a list",
    "meta_compile_resume_bad.json": "meta.compile[0].resume_of.line must be a non-negative integer",
    "meta_steps_source_list.json": "meta.steps.source must be a string",
    "meta_api_entry_string.json": "meta.api[0] must be an object",
    "meta_api_calls_float.json": "meta.api[0].calls must be a non-negative integer",
    "meta_device_name_int.json": "meta.devices[0].name must be a string",
    "meta_wall_negative.json": "meta.wall_ns must be a non-negative integer",
    "meta_step_walls_mixed.json": "meta.step_wall_ns[1] must be a non-negative integer",
    "meta_busy_not_int.json": "meta.gpu_busy_ns.0 must be a non-negative integer",
    "meta_sources_bad_line.json": "must be a line number",
    "meta_sources_text_not_str.json": "meta.sources./a.py.1 must be a string",
    "meta_capture_failures_bad.json": "meta.capture.compile_failures.line_map must be",
    "meta_gpu_enabled_string.json": "meta.gpu.enabled must be true or false",
    "meta_gpu_steps_row_incomplete.json": "meta.gpu_steps.0[0] lacks the key 'idle_after_ns'",
    "meta_gpu_comm_exposed_negative.json": "meta.gpu_comm_exposed_ns.0 must be a non-negative integer",
    "meta_capture_self_ns_string.json": "meta.capture.self_ns must be a non-negative integer",
    "meta_capture_unsubscribe_error_int.json": "meta.capture.cupti_unsubscribe_error must be a string",
    "collective_world_size_string.json": "node 1.x.world_size must be an integer",
    "collective_name_not_str.json": "node 1.x.collective must be a string",
    "meta_distributed_rank_string.json": "meta.distributed.rank must be a non-negative integer",
    "meta_distributed_backends_not_list.json": "meta.distributed.backends must be a list",
    "meta_distributed_no_rank.json": "meta.distributed lacks the key 'rank'",
    "kernel_algorithm_list.json": "node 1.x.algorithm must be a string",
    "metric_above_2_64.json": "invalid metric 'gpu_ns'",
    # What an int64 holds, as the analysis does (--load A B crashed past it in ranks/lines.py).
    "metric_above_int64.json": "9223372036854775808 (metrics are non-negative integers below 2**63)",
    "metric_nan.json": "invalid metric 'gpu_ns'",
    "line_above_2_64.json": "invalid line",
    "kernel_grid_string.json": "node 1.x.grid must be a list",
    "kernel_fuses_nested.json": "node 1.x.fuses[0] must be a string",
    "version_true.json": "invalid session version True",
    # What --flops and the suggestions add (dlpt.analysis.suggest): a saved suggestion is shown as it is.
    "meta_suggestions_gain_string.json": "meta.suggestions[0].gain_ns must be a non-negative integer",
    "meta_suggestions_title_missing.json": "meta.suggestions[0] lacks the key 'title'",
    "meta_suggestions_evidence_list.json": "meta.suggestions[0].evidence must be a string",
    "meta_suggestions_not_list.json": "meta.suggestions must be a list",
    "meta_flops_unevaluated_string.json": "meta.flops.unevaluated.aten::mm must be a non-negative integer",
    "meta_host_link_probe_ns_float.json": "meta.host_link_probe.ns must be a non-negative integer",
    "op_flop_dtype_int.json": "node 1.x.flop_dtype must be a string",
    "op_flops_negative.json": "invalid metric 'flops'",
    "int_5000_digits.json": "Exceeds the limit",
}


def _refusal(path: str | Path) -> str:
    with pytest.raises(SessionFormatError) as e:
        Session.load(path)
    msg = str(e.value)
    assert msg.startswith(f"{path}: ") and "\n" not in msg
    return msg


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_hostile_file_is_refused_with_one_line(name: str) -> None:
    assert REFUSED[name] in _refusal(FIXTURES / name)


def test_every_fixture_has_an_expectation() -> None:
    assert {p.name for p in FIXTURES.glob("*.json")} == {*REFUSED, "escapes.json"}


def test_nesting_beyond_the_parser_is_refused(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"format": "dlpt-session", "meta": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert "nested too deeply" in _refusal(deep)


def test_a_file_over_the_size_cap_is_refused_unread(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)  # sparse: takes no disk, and is never read
    assert "more than the 1.0 GiB dlpt reads" in _refusal(big)


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_devices_are_refused_unread(device: str) -> None:
    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    assert "is a character device, not a regular file" in _refusal(device)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)  # nobody writes to it: opening it for reading would block forever
    assert "is a FIFO (named pipe), not a regular file" in _refusal(fifo)


def _render_all(session: Session) -> str:
    out = io.StringIO()
    console = Console(file=out, width=140, color_system=None, force_terminal=False)
    for view in VIEWS:
        console.print(render(session, view=view, threshold=0.0, show_all=True, verbose=True))
    return out.getvalue()


def test_control_characters_and_markup_in_every_string_are_escaped() -> None:
    session = Session.load(FIXTURES / "escapes.json")
    text = _render_all(session)
    for raw in ("\x1b", "\x07", "\r", "\u202e", "\ud800"):
        assert raw not in text
    # Each is shown as its escape, rich markup as the text it is.
    assert "\\x1b[2J\\x1b[31m\\x07\\x0d\\u202e\\ud800[/x][bold]" in text
    for where in ("main", "scope", "aten::", "kern", "GPU", "cudaLaunchKernel", "reason", "fn", "worker"):
        assert f"{where}\\x1b[2J" in text, where
    # What the insights print from the session: a saved suggestion, a device with no datasheet
    # peak, the ops whose FLOPs were not counted, a device of meta.gpu_steps.
    for where in ("title", "evidence", "action", "basis", "peaks for 'GPU", "inputs): aten::"):
        assert f"{where}\\x1b[2J" in text, where
    assert "\\ud800[/x][bold] idle per step" in text
    # Communication and ranks: the header's rank, the collectives table, the op's details.
    for where in ("host", "nccl", "allreduce", "dtype", "GPU 0"):
        assert f"{where}\\x1b[2J" in text, where
    text.encode("utf-8")  # no lone surrogate left to break the output stream


def test_the_reason_for_no_gpu_activity_is_escaped() -> None:
    """meta.gpu.reason, shown where a session has no GPU activity at all (the one string of a
    session that reached the terminal raw)."""
    reason = "reason\x1b[2J\x1b[31m\x07\r\u202e"
    nodes = [
        {"id": 0, "parent": -1, "kind": "root", "name": "<root>", "file": "", "line": 0, "m": {}},
        {"id": 1, "parent": 0, "kind": "frame", "name": "main", "file": "/a.py", "line": 3, "m": {}},
        {
            "id": 2,
            "parent": 1,
            "kind": "op",
            "name": "aten::mm",
            "file": "",
            "line": 0,
            "m": {"calls": 1, "cpu_ns": 9},
        },
    ]
    meta = {"gpu": {"enabled": False, "reason": reason}}
    session = Session.from_dict({"format": "dlpt-session", "version": 2, "meta": meta, "nodes": nodes})
    out = io.StringIO()
    console = Console(file=out, width=140, color_system=None, force_terminal=False)
    for view in ("kernels", "summary", "tree"):
        console.print(render(session, view=view, metric="gpu", threshold=0.0))
    text = out.getvalue()
    assert "No GPU activity recorded (reason\\x1b[2J" in text, text
    assert "memsets) recorded (reason\\x1b[2J" in text, text
    for raw in ("\x1b", "\x07", "\r", "\u202e"):
        assert raw not in text


def test_suggestions_derived_from_hostile_strings_are_escaped_too() -> None:
    """Without saved suggestions a report derives them, quoting the session in their text."""
    session = Session.load(FIXTURES / "escapes.json")
    session.meta = {k: v for k, v in session.meta.items() if k != "suggestions"}
    text = _render_all(session)
    assert "Suggestions" in text  # the launch-bound step of meta.gpu_steps
    for raw in ("\x1b", "\x07", "\r", "\u202e", "\ud800"):
        assert raw not in text
    text.encode("utf-8")


def test_the_html_header_escapes_a_saved_suggestions_text() -> None:
    from dlpt.renderers.html.data import build_model

    (found,) = build_model(Session.load(FIXTURES / "escapes.json"))["header"]["insights"]["suggestions"]
    for key in ("where", "title", "evidence", "action", "basis"):
        assert "\x1b" not in found[key] and "\\x1b[2J" in found[key], key
    assert found["file"] == Session.load(FIXTURES / "escapes.json").meta["suggestions"][0]["file"]


def test_the_report_across_ranks_escapes_every_string() -> None:
    from dlpt.renderers.terminal.ranks import render_ranks
    from dlpt.views.ranks import rank_set, ranks_view

    a = Session.load(FIXTURES / "escapes.json")
    b = Session.load(FIXTURES / "escapes.json")
    b.set_meta("distributed", dict(b.meta["distributed"], rank=1))
    out = io.StringIO()
    Console(file=out, width=160, color_system=None, force_terminal=False).print(
        render_ranks(ranks_view(rank_set([("a.json", a), ("b.json", b)]), show_all=True), threshold=0.0)
    )
    text = out.getvalue()
    for raw in ("\x1b", "\x07", "\r", "\u202e", "\ud800"):
        assert raw not in text
    for where in ("main", "host", "nccl", "allreduce"):
        assert f"{where}\\x1b[2J" in text, where
    text.encode("utf-8")


def test_the_renderer_never_opens_a_file_named_in_a_session(h, monkeypatch: pytest.MonkeyPatch) -> None:
    b = h.Builder()
    for i, path in enumerate(["/dev/zero", "/etc/shadow", "/proc/self/environ", "/home/user/proj/gone.py"]):
        b.kernel(b.op(b.frame(0, path, i + 1, "f"), "aten::mm"), "k", 1, 100)
    session = b.session({"sources": {}})

    def refuse(*args: object, **kw: object) -> None:
        raise AssertionError(f"the renderer opened {args[0]!r}")

    monkeypatch.setattr(builtins, "open", refuse)
    monkeypatch.setattr(io, "open", refuse)
    monkeypatch.setattr(os, "open", refuse)
    monkeypatch.setattr(linecache, "getline", refuse)
    monkeypatch.setattr(linecache, "getlines", refuse)
    text = _render_all(session)
    assert "zero:1 f" in text and "shadow:2 f" in text
