"""Console reports: golden renders of synthetic sessions plus behaviour checks."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import pytest
from rich.console import Console

from dlpt.errors import UsageError
from dlpt.model.session import Session
from dlpt.renderers.terminal.report import VIEWS, print_report, render


def cpu_session(h) -> Session:
    """No GPU capture (another profiler held CUPTI): CPU op times only, records dropped."""
    b = h.Builder()
    mod = b.frame(0, h.TRAIN, 60, "<module>")
    step = b.frame(mod, h.TRAIN, 43, "train_step")
    fwd = b.frame(b.frame(step, h.MODULE, 1762, "_call_impl"), h.MODEL, 20, "forward")
    lin = b.op(fwd, "aten::linear", calls=10, cpu_ns=300_000)
    b.op(b.phase(lin, "<forward>"), "aten::addmm", calls=10, cpu_ns=2_100_000)
    bw = b.phase(lin, "<backward>")
    b.op(b.op(bw, "AddmmBackward0", calls=10, cpu_ns=200_000), "aten::mm", calls=20, cpu_ns=3_000_000)
    b.op(b.frame(mod, h.TRAIN, 47, "train_step"), "aten::item", calls=10, cpu_ns=40_000)
    sc = b.add(mod, "scope", "data_loading", calls=10, cpu_ns=0)
    b.op(sc, "aten::cat", calls=10, cpu_ns=1_500_000)
    b.add(0, "thread", "<thread 140221>")
    return b.session(
        {
            "argv": ["bench.py", "--cpu"],
            "wall_ns": 9_000_000_000,
            "devices": [],
            "gpu": {"enabled": False, "reason": "CUPTI is held by another profiler"},
            "steps": {"profiled": 0, "seen": 0, "skip_first": 0, "active": None, "source": None},
            "dropped": {"activity_records": 12, "correlations": 0},
            "unattributed": {"gpu_ns": 0, "records": 0},
        }
    )


GOLDEN_CASES = {
    "tree_default": lambda h: (h.build_gpu().session(h.gpu_meta()), {}),
    "bottom_up": lambda h: (h.build_gpu().session(h.gpu_meta()), {"view": "bottom-up"}),
    "flat": lambda h: (h.build_gpu().session(h.gpu_meta()), {"view": "flat"}),
    "summary": lambda h: (h.build_gpu().session(h.gpu_meta()), {"view": "summary"}),
    "kernels": lambda h: (h.build_gpu().session(h.gpu_meta()), {"view": "kernels"}),
    "tree_show_all_depth6": lambda h: (h.build_gpu().session(h.gpu_meta()), {"show_all": True, "depth": 6}),
    "tree_sync_metric": lambda h: (h.build_gpu().session(h.gpu_meta()), {"metric": "sync"}),
    "tree_cpu_only": lambda h: (cpu_session(h), {}),
    "tree_ascii_80": lambda h: (
        h.build_gpu(steps=1).session(h.gpu_meta(steps=1)),
        {"ascii": True, "width": 80},
    ),
}


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_golden(h, name: str) -> None:
    session, opts = GOLDEN_CASES[name](h)
    width = opts.pop("width", 100)
    h.check_golden(name, h.render_text(render(session, **opts), width=width))


def test_golden_ascii_is_ascii(h) -> None:
    text = h.render_text(render(h.build_gpu().session(h.gpu_meta()), ascii=True))
    text.encode("ascii")  # raises if anything non-ASCII slipped through
    assert "`- " in text and "|- " in text


def test_non_utf8_console_falls_back_to_ascii(h) -> None:
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="ascii")  # errors='strict': any non-ASCII would raise
    console = Console(file=out, width=100, color_system=None, force_terminal=False)
    for view in VIEWS:
        print_report(h.build_gpu().session(h.gpu_meta()), console, view=view)
    out.flush()
    assert b"`- aten::linear" in raw.getvalue()


@pytest.mark.parametrize("width", [50, 80, 100, 160])
@pytest.mark.parametrize("view", VIEWS)
def test_fits_width(h, view: str, width: int) -> None:
    text = h.render_text(render(h.build_gpu().session(h.gpu_meta()), view=view, show_all=True), width=width)
    assert max(len(line) for line in text.splitlines()) <= width


def test_render_never_prints_and_is_repeatable(h, capsys) -> None:
    session = h.build_gpu().session(h.gpu_meta())
    before = session.to_dict()
    a = h.render_text(render(session, view="all"))
    b = h.render_text(render(session, view="all"))
    assert a == b
    assert session.to_dict() == before
    render(session, view="all")
    assert capsys.readouterr().out == ""


def test_print_report_uses_given_console(h) -> None:
    console = h.make_console()
    print_report(h.build_gpu().session(h.gpu_meta()), console, view="kernels")
    assert "GPU kernels" in console.export_text()


def test_per_step_and_totals_headers(h) -> None:
    per_step = h.render_text(render(h.build_gpu().session(h.gpu_meta(steps=4))))
    assert "per step (mean of 4): GPU 33.98ms" in per_step
    assert "4 steps profiled (optimizer steps; 6 seen, first 2 skipped)" in per_step
    # 15 ms per step of fc1 (2 steps' data would be 30 ms): values are divided by the steps.
    assert "15.00ms  44.1%" in per_step
    totals = h.render_text(render(h.build_gpu(steps=4).session({"wall_ns": 1})))
    assert "totals: GPU 135.93ms" in totals
    assert "60.00ms  44.1%" in totals


def test_trust_lines_never_hidden(h) -> None:
    text = h.render_text(render(cpu_session(h)))
    assert "GPU capture: off - CUPTI is held by another profiler" in text
    assert "dropped: 12 activity records" in text
    gpu = h.render_text(render(h.build_gpu().session(h.gpu_meta())))
    assert "unattributed: 3 records, 30.0µs GPU time per step" in gpu
    assert "dropped" not in gpu  # all zero: nothing to warn about
    assert "GPU 0: busy 77.5%, idle 22.5%" in gpu  # the compact header
    verbose = h.render_text(render(h.build_gpu().session(h.gpu_meta()), verbose=True))
    assert "busy 31.00ms of 40.00ms wall (77.5%), idle 22.5%" in verbose


def test_degraded_torch_compile_attribution_is_said_in_the_header(h) -> None:
    meta = h.gpu_meta()
    meta["capture"] = {
        "compile_failures": {"line_map": 3, "compile_metrics": 1},
        "inductor_unmapped_frames": 2,
        "inductor_unmapped_kernels": 12,
    }
    text = h.render_text(render(h.build_gpu().session(meta), verbose=True), width=200)
    assert (
        "12 Inductor kernel launches could not be mapped to model lines (from 2 generated lines; "
        "they stay with the compiled call)"
    ) in text
    assert (
        "torch.compile attribution incomplete: compile_metrics x1, line_map x3 failed "
        "(details: DLPT_LOG=debug)"
    ) in text
    meta["capture"] = {"inductor_unmapped_frames": 2, "inductor_unmapped_kernels": 0}  # CPU: ops only
    text = h.render_text(render(h.build_gpu().session(meta), verbose=True), width=200)
    assert "2 generated lines of Inductor's code could not be mapped to model lines" in text
    assert "attribution incomplete" not in text
    meta["capture"] = {"compile_failures": {}, "inductor_unmapped_frames": 0, "inductor_unmapped_kernels": 0}
    text = h.render_text(render(h.build_gpu().session(meta)), width=200)
    assert "Inductor" not in text and "attribution incomplete" not in text


def test_the_profilers_own_time_is_said_in_the_header(h) -> None:
    meta = h.gpu_meta(steps=4)  # wall 4 x 40 ms
    meta["capture"] = {"self_ns": 4_000_000}
    text = h.render_text(render(h.build_gpu().session(meta), verbose=True), width=200)
    # 4 ms in all (the callbacks also run outside the steps: no per-step figure), 2.5% of the 160 ms
    # recorded wall time.
    assert "profiling: dlpt's own callbacks took 4.00ms in all (2.5% of the 160.00ms wall time)" in text
    meta["capture"] = {}
    assert "profiling:" not in h.render_text(render(h.build_gpu().session(meta)), width=200)


def test_source_text_comes_from_the_session_only(h, tmp_path: Path) -> None:
    """Source text is what the profile saved (meta.sources), never what the file holds now: a
    file named in the session is not opened, whether it exists, changed or was never saved."""
    real = tmp_path / "real.py"
    real.write_text("import torch\ny = torch.ones(3).cuda()  # today's text\n")
    b = h.Builder()
    b.kernel(b.op(b.frame(0, str(real), 2, "main"), "aten::ones"), "fill", 1, 100)
    b.kernel(b.op(b.frame(0, str(tmp_path / "gone.py"), 2, "other"), "aten::ones"), "fill", 1, 50)
    saved = {str(real): {"2": "y = torch.ones(3).cuda()  # make it"}}
    text = h.render_text(render(b.session({"sources": saved})))
    assert "real.py:2 main  y = torch.ones(3).cuda()  # make it" in text
    assert "today's text" not in text
    gone = next(line for line in text.splitlines() if "gone.py:2" in line)
    assert gone.rstrip().endswith("gone.py:2 other")
    unsaved = h.render_text(render(b.session({"sources": {}})))  # --no-source, or a v1 session
    assert "torch.ones" not in unsaved


def test_long_kernel_names_keep_launch_config(h) -> None:
    b = h.Builder()
    b.kernel(b.op(0, "aten::mm"), "x" * 300, 1, 100, grid=(7, 1, 1), block=(64, 1, 1), regs=99)
    text = h.render_text(render(b.session()))
    line = next(ln for ln in text.splitlines() if "xxxx" in ln and "└─" in ln)  # the tree's row
    assert line.rstrip().endswith("<<<7,64>>> regs 99") and "…" in line
    assert len(line) <= 100


@pytest.mark.parametrize(
    "opts, what",
    [
        ({"view": "sideways"}, "unknown view"),
        ({"metric": "bogus"}, "unknown metric"),
        ({"threshold": 1.5}, "threshold"),
        ({"threshold": -0.1}, "threshold"),
        ({"depth": 0}, "depth"),
        ({"depth": "3"}, "depth"),
    ],
)
def test_bad_options(h, opts: dict, what: str) -> None:
    with pytest.raises(UsageError, match=what):
        render(h.build_gpu().session(), **opts)


def _deep(h, depth: int) -> Session:
    b = h.Builder()
    parent = 0
    for i in range(depth):
        parent = b.frame(parent, h.MODEL, 30 + i % 3, "recurse")
    b.kernel(b.op(parent, "aten::add", calls=1), "add_kernel", 1, 1000)
    b.op(parent, "aten::mul", calls=1, cpu_ns=7)
    return b.session()


@pytest.mark.parametrize("view", ["tree", "bottom-up", "flat", "all"])
def test_10000_deep_tree_renders(h, view: str) -> None:
    """With --depth beyond the chain, every level prints (the default caps it: see
    test_render_scale.py)."""
    assert sys.getrecursionlimit() < 10_000  # would fail if anything recursed per level
    session = _deep(h, 10_000)
    text = h.render_text(render(session, view=view, depth=20_000), width=100)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 100
    if view in ("tree", "all"):
        # Guides of deep rows are capped: the prefix says how many levels are not drawn.
        skipped = [int(m.group(1)) for line in lines if (m := re.search(r" \[\+(\d+) levels\] [│ ]", line))]
        assert skipped and max(skipped) > 9_900
        assert any("add_kernel" in line for line in lines)


@pytest.mark.parametrize("view", VIEWS)
def test_empty_session_renders(h, view: str) -> None:
    text = h.render_text(render(Session(), view=view))
    assert "(no argv)" in text


def test_show_all_keeps_library_frames(h) -> None:
    session = h.build_gpu().session(h.gpu_meta())
    folded = h.render_text(render(session, threshold=0.0))
    shown = h.render_text(render(session, threshold=0.0, show_all=True))
    assert "module.py:1751 _wrapped_call_impl" not in folded
    assert "module.py:1751 _wrapped_call_impl" in shown
    assert "adam.py:213 step" in shown and "adam.py" not in folded
    # Folding changes the shape, never the totals.
    assert "33.98ms 100.0%" in folded and "33.98ms 100.0%" in shown


def test_threshold_and_depth_in_render(h) -> None:
    session = h.build_gpu().session(h.gpu_meta())
    assert "aten::relu" in h.render_text(render(session, threshold=0.01))
    assert "aten::relu" not in h.render_text(render(session, threshold=0.02))
    # The tree's depth (the hottest lines after it are a flat list: any depth).
    shallow = h.render_text(render(session, depth=2)).split("Hottest lines")[0]
    assert "train.py:43 train_step" in shallow and "model.py:20" not in shallow


def test_count_metric(h) -> None:
    text = h.render_text(render(h.build_gpu().session(h.gpu_meta()), metric="kernels"))
    assert "11.8 100.0%" in text  # 47 launches / 4 steps, formatted as a count


def test_source_text_with_tabs_keeps_width(h) -> None:
    src = "/home/user/proj/tabs.py"
    b = h.Builder()
    b.kernel(b.op(b.frame(0, src, 1, "main"), "aten::ones"), "fill", 1, 100)
    sources = {src: {"1": "\tx = 1\t\t\t\t\t\t\t\t\t\t# " + "y" * 200}}
    text = h.render_text(render(b.session({"sources": sources})), width=80)
    assert "tabs.py:1 main  x = 1" in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_cuda_graph_replays_and_fused_kernels_shown(h) -> None:
    b = h.Builder()
    line = b.frame(0, h.MODEL, 21, "forward")
    replay = b.phase(line, "<cuda graph replay>")
    k = b.kernel(replay, "triton_poi_fused_relu_0 [0_forward]", 4, 4_000)
    b.nodes[k]["x"]["fuses"] = ["aten.relu", "aten.add"]
    meta = h.gpu_meta(steps=4)
    meta["cuda_graphs"] = {"replay_gpu_ns": 4_000, "uncaptured_gpu_ns": 1_000, "nodes_captured": 3}
    text = h.render_text(render(b.session(meta), verbose=True), width=160)
    assert "CUDA graph replays: 1.0µs GPU time per step" in text
    assert "250ns per step of it was captured before profiling started" in text
    assert "<cuda graph replay>" in text
    row = next(ln for ln in text.splitlines() if "triton_poi_fused_relu_0 [0_forward]" in ln and "└─" in ln)
    assert "fuses aten.relu+aten.add" in row
    plain = h.render_text(render(h.build_gpu().session(h.gpu_meta())))
    assert "CUDA graph" not in plain


def test_dynamo_resume_functions_read_as_the_function_they_continue(h) -> None:
    b = h.Builder()
    b.kernel(b.frame(0, h.MODEL, 22, "Net.torch_dynamo_resume_in_forward_at_21"), "k", 1, 100)
    text = h.render_text(render(b.session()), width=140)
    assert "model.py:22 Net.forward (resumed after line 21)" in text
