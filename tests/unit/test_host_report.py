"""The host sampler's facts in the report model: host time per step by line, GPU idle blamed on
the lines the host was in, the data-loading and launch-bound suggestions citing those lines, and
the schema of meta.host (synthetic sessions; the capture itself is tests/native/test_host_*)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dlpt.analysis.host import idle_blame, step_host
from dlpt.analysis.inputs import analyze
from dlpt.analysis.report import build_report
from dlpt.analysis.rules.dataloader import data_loader_stall
from dlpt.analysis.rules.launch import launch_bound
from dlpt.errors import SessionFormatError
from dlpt.model.session import Session
from dlpt.renderers.html.data import build_model
from dlpt.renderers.terminal.report import render

STEPS = 4
TRAIN = "/home/user/proj/train.py"
DATA = "/home/user/proj/data.py"
MODEL = "/home/user/proj/model.py"
QUEUE = "/usr/lib/python3.11/queue.py"


def share(lines: list[tuple[str, int, str, int, int]], extra: int = 0, inner: str = "") -> dict[str, Any]:
    rows = [{"file": f, "line": n, "function": fn, "ns": ns, "gil_ns": gil} for f, n, fn, ns, gil in lines]
    if inner:
        rows[0]["inner"] = inner
    total = sum(r["ns"] for r in rows) + extra
    return {"ns": total, "gil_ns": sum(r["gil_ns"] for r in rows), "lines": rows, "other_ns": extra}


def host_meta(before: dict[str, Any] | None = None, between: dict[str, Any] | None = None) -> dict[str, Any]:
    """meta.host of 4 steps: 40 ms of sampled time per step on the step's thread."""
    idle = {
        "before": before or share([]),
        "between": between or share([]),
        "after": share([]),
        "busy": share([(MODEL, 20, "forward", 4_000_000 * STEPS, 4_000_000 * STEPS)]),
    }
    return {
        "sample_hz": 1000,
        "sampling": True,
        "method": "process_vm_readv",
        "ticks": 160,
        "samples": 160,
        "torn": 2,
        "missed": 0,
        "sampler_cpu_ns": 3_200_000,
        "sampled_wall_ns": 160_000_000,
        "steps": STEPS,
        "step_thread": share(
            [
                (DATA, 41, "load_batch", 28_000_000 * STEPS, 27_000_000 * STEPS),
                (TRAIN, 43, "train_step", 10_000_000 * STEPS, 2_000_000 * STEPS),
            ],
            extra=2_000_000 * STEPS,
        ),
        "idle": {"0": idle},
    }


def steps_meta(span: int, busy: int, before: int, after: int) -> dict[str, list[dict[str, int]]]:
    row = {"span_ns": span, "busy_ns": busy, "idle_before_ns": before, "idle_after_ns": after}
    return {"0": [dict(row) for _ in range(STEPS)]}


def session(
    h: Any, host: dict[str, Any], gpu_steps: dict[str, Any], kernels: int = 10, kernel_ns: int = 2_000_000
) -> Session:
    b = h.Builder()
    step = b.frame(b.frame(0, TRAIN, 60, "<module>"), TRAIN, 80, "main")
    b.frame(step, DATA, 41, "load_batch", host_ns=28_000_000 * STEPS)
    n = kernels * STEPS
    b.kernel(
        b.op(b.frame(step, MODEL, 20, "forward"), "aten::add"),
        "vectorized_elementwise_kernel",
        n,
        kernel_ns * n,
    )
    meta = h.gpu_meta(STEPS)
    meta.update(host=host, gpu_steps=gpu_steps)
    return b.session(meta)


def stalled(h: Any) -> Session:
    """12 ms of each 40 ms step before the first kernel; the host in load_batch for 10.5 ms of it
    (inside queue.get), collate 1 ms."""
    before = share(
        [
            (DATA, 41, "load_batch", 10_500_000 * STEPS, 500_000 * STEPS),
            (DATA, 30, "collate", 1_000_000 * STEPS, 1_000_000 * STEPS),
        ],
        inner="queue.py:171 Queue.get",
    )
    return session(h, host_meta(before=before), steps_meta(40_000_000, 20_000_000, 12_000_000, 1_000_000))


def test_step_host_is_per_step_by_line(h: Any) -> None:
    s = step_host(analyze(stalled(h)))
    assert s is not None and s.ns == 40_000_000 and s.lines[0].label == "data.py:41 load_batch"
    assert s.lines[0].ns == 28_000_000 and s.lines[0].gil_ns == 27_000_000


def test_idle_blame_divides_like_the_idle_split(h: Any) -> None:
    blame = idle_blame(analyze(stalled(h)))
    before = blame["0"]["before"]
    assert before.ns == 11_500_000 and before.lines[0].ns == 10_500_000
    assert before.lines[0].inner == "queue.py:171 Queue.get"


def test_header_names_the_lines_the_gpu_waited_for(h: Any) -> None:
    r = build_report(stalled(h))
    texts = [f.text for f in r.header]
    assert any(
        t.startswith("GPU 0 idle 12.00ms/step before its first kernel: host in data.py:41 load_batch 10.50ms")
        and "data.py:30 collate 1.00ms" in t
        for t in texts
    ), texts
    host = [t for t in texts if t.startswith("host per step")]
    assert host and "40.00ms on the step's thread" in host[0] and "data.py:41 load_batch 28.00ms" in host[0]
    cost = [f for f in r.header if f.kind == "cost" and f.label == "host sampler"]
    assert cost and "2.0% of a core" in cost[0].value and "2 stacks dropped" in cost[0].value


def test_terminal_and_page_show_the_same_host_facts(h: Any) -> None:
    s = stalled(h)
    text = render_text(s)
    assert "host in data.py:41 load_batch 10.50ms" in text
    model = build_model(s)
    assert any(
        "host in data.py:41 load_batch 10.50ms" in line for line in model["header"]["insights"]["lines"]
    )


def render_text(s: Session) -> str:
    from rich.console import Console

    console = Console(width=300, color_system=None, record=True)
    console.print(render(s, view="summary", verbose=True))
    return console.export_text()


def test_data_loading_suggestion_cites_the_blamed_line(h: Any) -> None:
    f = data_loader_stall(analyze(stalled(h)))[0]
    assert (f.file, f.line, f.function) == (DATA, 41, "load_batch")
    assert (
        "the host was in data.py:41 load_batch 10.50ms (in queue.py:171 Queue.get, 5% Python)" in f.evidence
    )
    assert f.numbers["host_line_ns"] == 10_500_000 and f.gain_ns == 12_000_000


def test_data_loading_suggestion_without_samples_keeps_the_whole_step(h: Any) -> None:
    s = session(h, host_meta(), steps_meta(40_000_000, 20_000_000, 12_000_000, 1_000_000))
    f = data_loader_stall(analyze(s))[0]
    assert f.file == "" and "host was in" not in f.evidence


def test_launch_bound_cites_the_lines_between_kernels(h: Any) -> None:
    between = share([(MODEL, 20, "forward", 5_000_000 * STEPS, 4_500_000 * STEPS)])
    s = session(
        h, host_meta(between=between), steps_meta(10_000_000, 2_000_000, 300_000, 200_000), 400, 5_000
    )
    f = launch_bound(analyze(s))[0]
    assert (f.file, f.line) == (MODEL, 20)  # the step_line that launches the kernels, as before
    assert "meanwhile the host was in model.py:20 forward 5.00ms (90% Python)" in f.evidence


def test_sampler_off_is_a_warning(h: Any) -> None:
    s = session(
        h, {"sample_hz": 1000, "sampling": False, "off": "no process_vm_readv"}, steps_meta(1, 1, 0, 0)
    )
    warnings = [f.text for f in build_report(s).warnings]
    assert "host sampling: off - no process_vm_readv" in warnings


@pytest.mark.parametrize(
    "path,value",
    [
        (("host", "step_thread", "lines", 0, "ns"), -1),
        (("host", "step_thread", "lines", 0, "file"), 3),
        (("host", "idle", "0", "before"), []),
        (("host", "sampling"), "yes"),
    ],
)
def test_bad_host_meta_is_a_format_error(h: Any, path: tuple[Any, ...], value: Any) -> None:
    d = stalled(h).to_dict()
    d = copy.deepcopy(d)
    target: Any = d["meta"]
    for k in path[:-1]:
        target = target[k]
    target[path[-1]] = value
    with pytest.raises(SessionFormatError, match=r"meta\.host"):
        Session.from_dict(d)
