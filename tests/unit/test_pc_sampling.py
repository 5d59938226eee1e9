"""PC sampling's CPU-side parts: the fused-kernel split (generated Triton lines -> model lines),
Inductor provenance recording (a real torch.compile on the CPU), the session block's schema,
the kernel-lines table, option checks, and the mode degrading without a GPU. The GPU side:
tests/gpu/test_pc_sampling.py."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch

import dlpt
from dlpt.capture.compile.fused_split import (
    ModelLine,
    ProvenanceRecorder,
    kernel_model_lines,
    line_ops,
    split_kernel_lines,
)
from dlpt.capture.pc_sampling import DEFAULT_STEPS, normalize_rows, pc_sampling_steps, summarize
from dlpt.cli.main import main as cli_main
from dlpt.errors import UsageError
from dlpt.model.schema import SchemaError, check_meta
from dlpt.renderers.terminal.kernel_lines import render_kernel_lines

# What Inductor generates for the fused kernel of a heavy line (sin/exp chain) and a light one (mul).
KERNEL = """\
@triton.jit
def triton_poi_fused_exp_mul_sin_0(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), None)
    tmp1 = tl_math.sin(tmp0)
    tmp2 = tl_math.exp(tmp1)
    tmp3 = tl.load(in_ptr1 + (x0), None)
    tmp4 = tmp2 * tmp3
    tl.store(out_ptr0 + (x0), tmp4, None)
"""
NAME = "triton_poi_fused_exp_mul_sin_0"


def test_line_ops_names_compute_not_data_movement() -> None:
    assert line_ops("    tmp1 = tl_math.sin(tmp0)") == {"sin"}
    assert line_ops("    tmp2 = libdevice.exp(tmp1)") == {"exp"}
    assert line_ops("    tmp4 = tmp2 * tmp3") == {"mul"}
    assert line_ops("    tmp0 = tl.load(in_ptr0 + (x0), None)") == set()
    assert line_ops("    tl.store(out_ptr0 + (x0), tmp4, None)") == set()


def test_split_shares_samples_by_the_ops_each_model_line_names(tmp_path: Path) -> None:
    kernel = tmp_path / "cabc.py"
    kernel.write_text(KERNEL)
    heavy, light = ModelLine("m.py", 10, "y = x.sin().exp()"), ModelLine("m.py", 11, "return y * w")
    rows = [
        {"function": NAME, "file": str(kernel), "line": 7, "samples": 600},  # sin
        {"function": NAME, "file": str(kernel), "line": 8, "samples": 300},  # exp
        {"function": NAME, "file": str(kernel), "line": 10, "samples": 100},  # mul
        {"function": NAME, "file": str(kernel), "line": 6, "samples": 50},  # load of x: sin uses it
        {"function": NAME, "file": str(kernel), "line": 9, "samples": 40},  # load of w: mul uses it
        {"function": NAME, "file": str(kernel), "line": 11, "samples": 30},  # store of mul's value
        {"function": NAME, "file": str(kernel), "line": 4, "samples": 20},  # index math: unassigned
        {"function": NAME, "file": str(kernel), "line": 2, "samples": 10},  # def line: unassigned
        {"function": "other", "file": "", "line": 0, "samples": 9},  # no provenance: left out
    ]
    (split,) = split_kernel_lines(rows, {NAME: [heavy, light]})
    assert split.samples == 1150 and split.unassigned == 30
    shares = {(s["file"], s["line"]): s for s in split.shares()}
    assert shares[("m.py", 10)]["samples"] == 950 and shares[("m.py", 11)]["samples"] == 170
    assert shares[("m.py", 10)]["share"] == pytest.approx(950 / 1120)


def test_a_data_line_follows_its_value_only_inside_its_own_kernel(tmp_path: Path) -> None:
    """Two kernels in one file reuse tmp names: a load follows the users in its own function."""
    other = KERNEL.replace(NAME, "triton_poi_fused_cos_1").replace("tl_math.sin(tmp0)", "tl_math.cos(tmp0)")
    kernel = tmp_path / "two.py"
    kernel.write_text(other + "\n\n" + KERNEL)
    line_of_load = len(other.splitlines()) + 2 + 6
    cos, sin = ModelLine("m.py", 5, "y = x.cos()"), ModelLine("m.py", 6, "y = x.sin()")
    rows = [{"function": NAME, "file": str(kernel), "line": line_of_load, "samples": 70}]
    (split,) = split_kernel_lines(rows, {NAME: [cos, sin]})
    assert split.unassigned == 0 and split.assigned == {("m.py", 6): 70}


def test_provenance_recorder_keeps_model_lines_of_a_real_compile() -> None:
    import torch._inductor.config as ic

    def fused(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        y = x.sin().exp().cos()
        return y * w

    recorder = ProvenanceRecorder()
    with ic.patch({"trace.provenance_tracking_level": 1, "fx_graph_cache": False}):
        assert recorder.install()
        try:
            torch._dynamo.reset()
            torch.compile(fused)(torch.randn(64), torch.randn(64))
        finally:
            recorder.remove()
    lines = [ml for mls in kernel_model_lines().values() for ml in mls if ml.file == __file__]
    codes = {ml.code for ml in lines}
    assert "y = x.sin().exp().cos()" in codes and "return y * w" in codes, lines


def _meta() -> dict[str, Any]:
    rows = [
        {
            "function": "k_loop",
            "file": "/src/k.py",
            "line": 9,
            "samples": 90,
            "stalls": {"math_pipe_throttle": 60, "wait": 30},
        },
        {
            "function": "k_loop",
            "file": "/src/k.py",
            "line": 5,
            "samples": 10,
            "stalls": {"long_scoreboard": 10},
        },
        {"function": "sm90_gemm", "file": "", "line": 0, "samples": 40, "stalls": {"barrier": 40}},
    ]
    return {
        "pc_sampling": {
            "steps": 2,
            "period_log2": 10,
            "reason": None,
            "first_step": 3,
            "last_step": 4,
            "total_samples": 140,
            "dropped_samples": 0,
            "kernels": summarize(rows),
            "model_lines": [],
            "unresolved": {"sm90_gemm": "cuptiGetSassToSourceCorrelation: CUPTI_ERROR_INVALID_PARAMETER"},
        }
    }


def test_summarize_and_schema_and_table() -> None:
    meta = _meta()
    check_meta(meta)
    kernels = meta["pc_sampling"]["kernels"]
    assert [k["name"] for k in kernels] == ["k_loop", "sm90_gemm"]
    assert kernels[0]["samples"] == 100 and kernels[0]["stalls"]["math_pipe_throttle"] == 60
    table = render_kernel_lines(meta, "loop")
    assert "k.py:9" in table and "90.0%" in table and "math_pipe_throttle 67%" in table
    gemm = render_kernel_lines(meta, "gemm")
    assert "(no line info)" in gemm and "barrier 100%" in gemm
    assert "PCs without a line: cuptiGetSassToSourceCorrelation: CUPTI_ERROR_INVALID_PARAMETER" in gemm
    with pytest.raises(UsageError, match="no sampled kernel"):
        render_kernel_lines(meta, "nothing_like_this")
    with pytest.raises(UsageError, match="no PC samples"):
        render_kernel_lines({}, "")
    bad = json.loads(json.dumps(meta))
    bad["pc_sampling"]["kernels"][0]["lines"][0] = ["/src/k.py", 9]
    with pytest.raises(SchemaError):
        check_meta(bad)


def test_a_sample_counts_once_not_again_for_its_not_issued_variant() -> None:
    """CUPTI lists X_not_issued (a subset of X) and the sample_count/samples_data_dropped counters
    among the stall reasons; the phase-1 H100 GEMM summed to 1.9x its samples that way."""
    native = [
        {
            "function": "nvjet_gemm",
            "file": "",
            "line": 0,
            "samples": 999,  # the native sum over every reason
            "stalls": {
                "barrier": 40,
                "barrier_not_issued": 38,
                "long_scoreboard": 60,
                "long_scoreboard_not_issued": 50,
                "selected": 10,
                "sample_count": 7,
                "samples_data_dropped": 3,
            },
        },
        {"function": "k", "file": "k.py", "line": 3, "samples": 5, "stalls": {"wait_not_issued": 5}},
    ]
    (row,) = normalize_rows(native)  # a row with nothing but not-issued counts has no samples
    assert row["samples"] == 110
    assert row["stalls"] == {"barrier": 40, "long_scoreboard": 60, "selected": 10}
    (kernel,) = summarize([row])
    assert kernel["samples"] == 110 and list(kernel["stalls"]) == ["long_scoreboard", "barrier", "selected"]


def test_pc_sampling_option_values() -> None:
    assert (
        pc_sampling_steps(True) == DEFAULT_STEPS
        and pc_sampling_steps(False) == 0
        and pc_sampling_steps(5) == 5
    )
    for bad in (-1, 1000, "3", 2.5):
        with pytest.raises(UsageError, match="pc_sampling must be"):
            pc_sampling_steps(bad)


def test_without_a_gpu_the_mode_says_why_and_the_profile_stands() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with dlpt.profile(skip_first=1, calibrate=False, pc_sampling=2, gpu=False) as prof:
            for _ in range(3):
                torch.randn(64, 64) @ torch.randn(64, 64)
                prof.step()
    pcs = prof.session.meta["pc_sampling"]
    assert pcs["steps"] == 2 and pcs["reason"] == "GPU capture is off"
    assert prof.session.nodes


def test_cli_option_errors_are_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    script.write_text("pass\n")
    assert cli_main(["--pc-sampling-steps", "2", str(script)]) == 2
    assert "--pc-sampling-steps applies with --pc-sampling" in capsys.readouterr().err
    assert cli_main(["--pc-sampling", "--pc-sampling-steps", "0", str(script)]) == 2
    assert "from 1 to" in capsys.readouterr().err
    assert cli_main(["--kernel-lines", "k", str(script)]) == 2
    assert "give --load FILE" in capsys.readouterr().err


def test_kernel_lines_from_a_saved_session(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with dlpt.profile(skip_first=1, calibrate=False, gpu=False) as prof:
            for _ in range(2):
                torch.randn(8, 8) @ torch.randn(8, 8)
                prof.step()
    session = prof.session
    session.meta.update(_meta())  # the block a GPU run writes (tests/gpu/test_pc_sampling.py)
    session.meta["sources"] = {"/src/k.py": {"9": "    acc = tl.sin(acc)"}}  # saved, never read back
    path = tmp_path / "s.json"
    session.save(str(path))
    assert cli_main(["--load", str(path), "--kernel-lines", "loop"]) == 0
    out = capsys.readouterr().out
    assert "k_loop" in out and "k.py:9" in out and "acc = tl.sin(acc)" in out
    assert cli_main(["--load", str(path), "--kernel-lines", "absent"]) == 2
    assert "no sampled kernel matches 'absent'" in capsys.readouterr().err
