"""Numbers a user can act on, on a real GPU (written for an H100 with torch 2.11 CUDA):

- a small GPT training script that times its own steps with ``perf_counter``, run under
  ``python -m dlpt``: dlpt's untraced step agrees with the script's own timing of the steps dlpt
  ran untraced within 10%, its traced step with the script's timing of the traced ones, and the
  untraced steps left no trace in the tree;
- a Hugging Face GPT-2 ``generate()`` loop under ``--step-on generate``: the first call's lazy
  start-up is warm-up, the model's construction is work outside steps, and no per-step
  suggestion is built from it or promises more than a step.

The calibration's error against a run without dlpt is measured paired in bench/paired.py
(``dlpt_calibrated``); separate processes on these machines differ too much to test it here.
"""

from __future__ import annotations

import itertools
import json
import os
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dlpt.analysis.inputs import analyze
from dlpt.analysis.suggest import findings
from dlpt.model.calibration import MAX_RELATIVE_WIDTH, Calibration, calibration
from dlpt.model.session import Session
from tests.query import Q

pytestmark = pytest.mark.gpu
REPO = Path(__file__).resolve().parents[2]

GPT_SCRIPT = """
import json, sys, time
import torch
sys.path.insert(0, {examples!r})
import gpu_gpt

torch.manual_seed(0)
model = gpu_gpt.GPT(65, 256, 6, 384, 6).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
if {compiled!r}:
    model = torch.compile(model)
ids = torch.randint(0, 65, (64, 257), device="cuda")
x, y = ids[:, :-1], ids[:, 1:]
ends = [time.perf_counter()]
for _ in range({steps}):
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x, y)
    loss.backward()
    opt.step()
    ends.append(time.perf_counter())
torch.cuda.synchronize()
json.dump(ends, open({out!r}, "w"))
"""


def _run_dlpt(tmp: Path, script: str, *args: str) -> Session:
    path = tmp / "prog.py"
    path.write_text(textwrap.dedent(script))
    out = tmp / "run.json"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    r = subprocess.run(
        [sys.executable, "-m", "dlpt", "--no-report", "-o", str(out), *args, str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return Session.load(out)


def _own_calibration(meta: dict, intervals: list[float]) -> Calibration:
    """The calibration of dlpt's paired windows timed by the script's own clock: each window's
    untraced steps, against the 3 traced steps before it and the 3 after, those that hold a
    switch left out (dlpt.capture.schedule.PairedWindows)."""
    pairs = []
    for p in meta["step_time"]["paired"]:
        a, b = p["steps"]  # its timed untraced steps; a - 1 and b + 1 hold the switches
        neighbours = [n for n in (*range(a - 4, a - 1), *range(b + 2, b + 5)) if n <= len(intervals)]
        pairs.append(
            dict(
                p,
                untraced_ns=round(statistics.median(intervals[n - 1] for n in range(a, b + 1)) * 1e9),
                traced_ns=round(statistics.median(intervals[n - 1] for n in neighbours) * 1e9),
            )
        )
    return calibration({**meta, "step_time": {**meta["step_time"], "paired": pairs}})


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_untraced_and_traced_steps_agree_with_the_scripts_own_timing(tmp_path: Path, compiled: bool) -> None:
    steps = 200  # warm-up (13+ steps; a compiled run's until its steps stop falling) and 4+ windows
    times = tmp_path / "ends.json"
    examples = str(REPO / "examples")
    script = GPT_SCRIPT.format(examples=examples, steps=steps, out=str(times), compiled=compiled)
    session = _run_dlpt(tmp_path, script)
    ends = json.loads(times.read_text())
    intervals = [b - a for a, b in itertools.pairwise(ends)]  # step i+1 took intervals[i]
    meta = session.meta
    st, s = meta["step_time"], meta["steps"]
    assert s["seen"] == steps and st["windows"], (s, st)
    # Each window's first step holds the switch: dlpt times it in neither set.
    untraced_steps = {n for a, b in st["windows"] for n in range(a + 1, b + 1)}
    after_window = {b + 1 for _, b in st["windows"]}
    warm = s["warmup"]["steps"]
    traced_steps = set(range(warm + 1, steps + 1)) - {n for a, b in st["windows"] for n in range(a, b + 1)}
    traced_steps -= after_window
    own_untraced = statistics.median(intervals[n - 1] for n in untraced_steps) * 1e9
    own_traced = statistics.median(intervals[n - 1] for n in traced_steps) * 1e9
    assert st["untraced"]["median_ns"] == pytest.approx(own_untraced, rel=0.05)
    assert st["traced"]["median_ns"] == pytest.approx(own_traced, rel=0.05)
    # dlpt's cost from the paired windows, and whether it is measured well enough: the verdict
    # the script's own clock gives on the same windows, where that one is clear (two device runs
    # on a noisy host: steps of 10-50 ms, windows 0.53-1.33x, said so rightly).
    cal, own = calibration(meta), _own_calibration(meta, intervals)
    assert cal.windows >= 3 and cal.windows == own.windows, (cal, own)
    width = (own.hi - own.lo) / own.ratio
    if width <= 0.8 * MAX_RELATIVE_WIDTH:
        assert cal.measured, (cal, own)
    elif width >= 1.2 * MAX_RELATIVE_WIDTH:
        assert not cal.measured and "disagree" in cal.why_not, (cal, own)
    assert cal.ratio >= 1.0 or cal.text().startswith("within noise"), cal
    # The warm-up ended on steps that no longer fell (its steps depend on the run: an eager one
    # counts from step 2; a compiled one whose steps fall, after the fall; dlpt/capture/warmup.py).
    assert s["warmup"]["settled"] is True and s["warmup"]["steps"] >= 1
    # Untraced steps record nothing: the tree's per-step kernels are those of the counted steps.
    counted = s["profiled"]
    assert counted == steps - warm - s["untraced"]
    kernels = sum(n["m"].get("kernels", 0) for n in session.nodes if n["kind"] == "kernel")
    outside = sum(n.get("o", {}).get("kernels", 0) for n in session.nodes if n["kind"] == "kernel")
    per_step = kernels / counted
    assert outside >= warm * per_step * 0.9  # the warm-up's kernels are outside, not lost
    if not compiled:  # a compiled run's outside work also holds Inductor's autotuning launches
        assert kernels + outside < (counted + warm + 1) * per_step * 1.1  # no untraced step's kernels
    # The report's idle share uses the untraced step.
    a = analyze(session)
    assert a.untraced_step is not None and a.step_wall_ns == st["untraced"]["median_ns"]


GENERATE_SCRIPT = """
import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
cfg = GPT2Config()
model = GPT2LMHeadModel(cfg).cuda().to(torch.bfloat16).eval()  # @build
prompt = torch.randint(0, cfg.vocab_size, (4, 16), device="cuda")
with torch.no_grad():
    # 45 calls: on a busy host 30 once ended with the step time still falling (every call warm-up).
    for _ in range(45):
        model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=32, min_new_tokens=32,
                       do_sample=False, use_cache=True, pad_token_id=cfg.eos_token_id)
"""


def test_generate_loop_keeps_start_up_and_construction_out_of_per_step_figures(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    session = _run_dlpt(tmp_path, GENERATE_SCRIPT, "--step-on", "generate")
    s = session.meta["steps"]
    assert s["source"] == "call" and "GenerationMixin.generate" in (s.get("step_on_chosen") or "")
    first_call = s["warmup"]["walls_ns"][0]
    assert s["warmup"]["steps"] >= 1 and first_call > 2 * session.meta["step_time"]["traced"]["median_ns"]
    build = 1 + next(i for i, ln in enumerate(GENERATE_SCRIPT.splitlines()) if "@build" in ln)
    # The construction's copies are work outside steps, on its line, not per-step work.
    q = Q(session)
    under = q.under_line(str(tmp_path / "prog.py"), build)
    copies = [n for n in under if n["kind"] == "memcpy"]
    assert copies and sum(n.get("o", {}).get("copy_ns", 0) for n in copies) > 0
    assert sum(n["m"].get("copy_ns", 0) for n in copies) == 0
    a = analyze(session)
    step = a.step_wall_ns
    for f in findings(a):
        if f.per_step:
            assert f.gain_ns <= step, f
            assert f.line != build, f  # nothing per step from what ran once
