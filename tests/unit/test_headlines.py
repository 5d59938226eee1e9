"""A flag that asks for something puts its answer in the compact header (issue 48): ``--flops``
its FLOPs per step, achieved FLOP/s and MFU (or why there is none), ``--memory`` its peak and
the line holding most of it, ``--pc-sampling`` what it sampled or why nothing; the HTML page
leads with the same lines. A CPU run, as a machine without a GPU records it."""

from __future__ import annotations

from typing import Any

from dlpt.analysis.report import build_report
from dlpt.model.session import Session
from dlpt.renderers.html.data import build_model
from dlpt.renderers.terminal.report import render
from tests import sessions as S

MIB = 1 << 20
TRAIN = "/home/u/proj/train.py"
STEPS = 4
STEP_NS = 10_000_000
MM_FLOPS = 2 * 64 * 512 * 512  # per step, forward


def cpu_session(flops: bool = True, memory: bool = True, pc: dict[str, Any] | None = None) -> Session:
    """A CPU run of ``STEPS`` steps of ``STEP_NS``: a matmul line (with its FLOPs as --flops
    records them) and an add line; memory on the CPU with 3 MiB held by the matmul line."""
    b = S.Builder(steps=STEPS)
    top = b.frame(0, TRAIN, 50, "<module>")
    mm = b.op(
        b.frame(top, TRAIN, 33, "forward"), "aten::mm", cpu_ns=2_000_000, flops=MM_FLOPS if flops else 0
    )
    add = b.op(b.frame(top, TRAIN, 34, "forward"), "aten::add", cpu_ns=500_000)
    if memory:
        b.nodes[mm]["m"].update(mem_peak_bytes=3 * MIB * STEPS, mem_alloc_bytes=3 * MIB * STEPS)
        b.nodes[add]["m"].update(mem_peak_bytes=MIB * STEPS, mem_alloc_bytes=MIB * STEPS)
    b.nodes[mm]["x"] = {"flop_dtype": "Float"}
    meta: dict[str, Any] = {
        "argv": ["train.py"],
        "wall_ns": 2 * STEPS * STEP_NS,
        "devices": [],
        "gpu": {"enabled": False, "reason": "no CUDA GPU available"},
        "steps": {"profiled": STEPS, "seen": STEPS, "skip_first": 0, "active": None, "source": "optimizer"},
        "step_wall_ns": [STEP_NS] * STEPS,
        "sources": {TRAIN: {"33": "    h = x @ self.w1", "34": "    h = h + self.b1"}},
    }
    if flops:
        meta["flops"] = {"ops": 1, "flops": MM_FLOPS * STEPS, "unevaluated": {}}
    if memory:
        step = {
            "peak_allocated": 6 * MIB,
            "reserved_at_peak": 0,
            "peak_reserved": 0,
            "traced_at_peak": 4 * MIB,
        }
        meta["memory"] = {
            "enabled": True,
            "reason": None,
            "tracks_cpu": True,
            "devices": {"cpu": {"allocated": 2 * MIB, "reserved": 0, "steps": [step] * STEPS}},
            "events": 100,
            "missed_frees": 0,
        }
    if pc is not None:
        meta["pc_sampling"] = pc
    return Session.from_dict(b.session(meta))


def _compact_header(h: Any, session: Session, width: int = 80) -> list[str]:
    text = h.render_text(render(session), width=width)
    lines = text.splitlines()
    end = next(i for i, ln in enumerate(lines) if ln.startswith("╰"))
    return [ln.strip("│ ") for ln in lines[: end + 1]]


def test_flops_memory_and_pc_sampling_headlines_in_the_compact_header(h: Any) -> None:
    session = cpu_session(pc={"steps": 3, "reason": "GPU capture is off"})
    head = _compact_header(h, session)
    flops = next(ln for ln in head if ln.startswith("FLOPs "))
    # 2*64*512*512 = 33.6 MFLOP per step over a 10 ms step: 3.36 GFLOP/s.
    assert "33.6 MFLOP/step" in flops and "3.36 GFLOP/s" in flops
    assert "MFU: no GPU peak known" in flops
    memory = next(ln for ln in head if ln.startswith("memory peak "))
    assert "6.0 MiB/step (cpu)" in memory and "3.0 MiB train.py:33 forward" in memory
    assert "PC sampling: off - GPU capture is off" in head
    # Each stays on one row at 80 columns, and the warnings and --verbose stay too.
    assert all(len(ln) <= 76 for ln in head[1:-1])  # inside the box's borders
    assert any("GPU capture: off" in ln for ln in head) and "--verbose" in head[-2]


def test_no_flag_no_headline(h: Any) -> None:
    head = "\n".join(_compact_header(h, cpu_session(flops=False, memory=False), width=200))
    assert "FLOPs" not in head and "memory peak" not in head and "PC sampling" not in head


def test_pc_sampling_says_what_was_sampled(h: Any) -> None:
    kernels = [{"name": "k1", "samples": 900}, {"name": "k2", "samples": 100}]
    pc = {
        "steps": 3,
        "reason": None,
        "first_step": 12,
        "last_step": 14,
        "total_samples": 1000,
        "kernels": kernels,
    }
    head = _compact_header(h, cpu_session(pc=pc), width=200)
    line = next(ln for ln in head if ln.startswith("PC sampling"))
    assert "1,000 samples in 2 kernels over steps 12-14" in line
    # The verbose header says it too: it has no longer form.
    verbose = h.render_text(render(cpu_session(pc=pc), verbose=True), width=200)
    assert "1,000 samples in 2 kernels" in verbose.split("╯")[0]


def test_the_html_page_leads_with_the_same_headlines() -> None:
    session = cpu_session(pc={"steps": 3, "reason": "GPU capture is off"})
    facts = build_model(session)["header"]["facts"]
    headlines = build_report(session).headlines
    assert [f[0] for f in facts[: len(headlines)]] == ["FLOPs", "memory peak", "PC sampling"]
    assert [f[1] for f in facts[: len(headlines)]] == [f.value for f in headlines]
    assert "3.36 GFLOP/s" in facts[0][1] and "off - GPU capture is off" in facts[2][1]


def test_gflops_per_line_on_a_cpu_run(h: Any) -> None:
    """A CPU run's work tables give each line's rate over its ops' CPU time (they said "-")."""
    text = h.render_text(render(cpu_session(), view="suggestions"), width=200)
    table = text.split("Work per line", 1)[1].split("Work per op", 1)[0]
    header = next(ln for ln in table.splitlines() if "GFLOP/s" in ln)
    row = next(ln for ln in table.splitlines() if "train.py:33" in ln)
    cells = dict(zip(header.split(), row.split(), strict=False))
    # 33.6 MFLOP per step in 2 ms of the matmul's CPU time per step: 16.8 GFLOP/s.
    assert cells["CPU"] == "2.00ms" and cells["GFLOP/s"] == "16.8"
