"""``--flops`` through the command line: the run records FLOPs and saves its suggestions, and a
saved session re-renders ``--view suggestions`` with ``--peak-tflops``."""

from __future__ import annotations

import json
import re

from .helpers import Job, run, run_many, write

SCRIPT = """\
import torch
x = torch.randn(64, 128, requires_grad=True)
w = torch.randn(128, 32, requires_grad=True)
opt = torch.optim.SGD([x, w], lr=0.1)
for _ in range(4):
    y = x @ w
    y.sum().backward()
    opt.step()
    opt.zero_grad()
"""


def flat(out: str) -> str:
    """The report's words without panel borders and line wrapping."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", out).split())


def test_flops_run_saves_work_and_suggestions_and_reloads(tmp_path) -> None:
    write(tmp_path / "mm.py", SCRIPT)
    r = run(
        Job(
            [
                "--flops",
                "--no-gpu",
                "--skip-first",
                "0",
                "-o",
                "s.json",
                "--view",
                "suggestions",
                "--verbose",
                "mm.py",
            ],
            tmp_path,
        )
    )
    assert r.rc == 0, r.err
    saved = json.loads((tmp_path / "s.json").read_text())
    assert saved["meta"]["flops"]["flops"] == 4 * 3 * 2 * 64 * 128 * 32  # forward + 2 backward mm, 4 steps
    assert isinstance(saved["meta"]["suggestions"], list)
    assert "Work per line" in r.out and "mm.py:6" in r.out and "1.57 MFLOP" in r.out
    assert "MFU: no GPU in this run (give a peak with --peak-tflops)" in flat(r.out)
    r = run(Job(["--load", "s.json", "--view", "suggestions", "--peak-tflops", "1", "--verbose"], tmp_path))
    assert r.rc == 0, r.err
    assert "MFU " in r.out and "/ 1 TFLOP/s (--peak-tflops)" in flat(r.out)


# Input shapes that change every step (a sequence length), with memory the program frees each
# step: --flops keeps one record per distinct signature, and these must not pin the freed memory
# (their own arena: csrc/cct/mapped_arena.h). 400 steps took 1.18 GB against 0.36 GB without.
SHAPES = """\
import resource, torch
m = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256))
opt = torch.optim.SGD(m.parameters(), lr=0.01)
for i in range(400):
    x = torch.randn(17 + (i * 7919) % 1500, 256)
    m(x).pow(2).mean().backward()
    opt.step()
    opt.zero_grad()
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, flush=True)
"""


def test_changing_shapes_cost_flops_no_memory(tmp_path) -> None:
    write(tmp_path / "shapes.py", SHAPES)
    runs = run_many(
        {
            flag: Job(
                [*([flag] if flag else []), "--no-gpu", "--no-report", "-o", f"s{i}.json", "shapes.py"],
                tmp_path,
            )
            for i, flag in enumerate(["", "--flops"])
        }
    )
    plain, flops = (int(runs[k].out.split()[-1]) for k in ("", "--flops"))
    assert flops < 1.25 * plain + 40, (flops, plain)  # megabytes at the program's end
