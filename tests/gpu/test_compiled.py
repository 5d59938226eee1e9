"""torch.compile on the GPU: Inductor's fused Triton kernels on the model's own lines (forward
and compiled backward), CUDA graph replays on their capture lines, user Triton kernels and
compiled optimizers on their calling lines.

The model is defined in this file so "the model's own lines" can be checked exactly: a kernel
counts as attributed when the innermost frame above it that is neither library code nor
Inductor's generated wrapper is a line inside TinyGPT's classes.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import dlpt
from dlpt.model.source_files import is_library_file
from tests.query import GPU_KEYS, Q, line_of

pytestmark = pytest.mark.gpu
HERE = __file__


class Attention(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = Attention(width, heads)
        self.fc, self.out = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class TinyGPT(nn.Module):
    def __init__(self, vocab=4096, seq=128, layers=2, width=256, heads=4):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, width), nn.Embedding(seq, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)

    def forward(self, ids, targets):
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten())


def _model_line_ranges() -> list[range]:
    out = []
    for cls in (Attention, Block, TinyGPT):
        lines, start = inspect.getsourcelines(cls)
        out.append(range(start, start + len(lines)))
    return out


MODEL_LINES = _model_line_ranges()


@pytest.fixture(autouse=True)
def fresh_dynamo(monkeypatch):
    """Each test compiles from scratch; the on-disk FX cache could hand back line maps made by
    another checkout of this file."""
    import torch._inductor.config as inductor_config

    monkeypatch.setattr(inductor_config, "fx_graph_cache", False)
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def keep(session, name: str) -> Q:
    """Save the session where DLPT_KEEP_SESSIONS points (for looking at failures offline)."""
    import os

    where = os.environ.get("DLPT_KEEP_SESSIONS")
    if where:
        os.makedirs(where, exist_ok=True)
        session.save(os.path.join(where, f"{name}.json"))
    return Q(session)


def user_frame(q: Q, nid: int) -> dict | None:
    """Innermost frame above `nid` that is the user's: not library, not generated code."""
    for a in q.ancestors(nid):
        x = a.get("x") or {}
        if (
            a["kind"] == "frame"
            and not x.get("generated")
            and not x.get("library")
            and not is_library_file(a["file"])
        ):
            return a
    return None


class Share(float):
    """A fraction whose repr lists the biggest misses, so a failing assertion says where the
    time went instead."""

    misses: list[str]

    def __repr__(self) -> str:
        return f"{float(self):.3f}; biggest misses:\n" + "\n".join(self.misses)


def describe(q: Q, n: dict) -> str:
    chain = [n, *q.ancestors(n["id"])]
    parts = [
        f"{a['kind']}:{a['name']}" + (f"@{a['file'].rsplit('/', 1)[-1]}:{a['line']}" if a["file"] else "")
        for a in reversed(chain[:14])
    ]
    return f"  {sum(n['m'].get(k, 0) for k in GPU_KEYS) / 1e3:.0f}us " + " > ".join(parts)


def on_model_lines(q: Q, nodes) -> Share:
    total = hit = 0
    missed = []
    for n in nodes:
        ns = sum(n["m"].get(k, 0) for k in GPU_KEYS)
        if not ns:
            continue
        total += ns
        f = user_frame(q, n["id"])
        if f is not None and f["file"] == HERE and any(f["line"] in r for r in MODEL_LINES):
            hit += ns
        else:
            missed.append((ns, n))
    assert total > 0
    share = Share(hit / total)
    share.misses = [describe(q, n) for _, n in sorted(missed, key=lambda t: -t[0])[:6]]
    return share


def gpu_leaves(q: Q) -> list[dict]:
    return [n for n in q.nodes if n["kind"] in ("kernel", "memcpy", "memset")]


def make_training(mode=None, compile_optimizer=False):
    torch.manual_seed(0)
    model = TinyGPT().cuda()
    compiled = torch.compile(model, mode=mode)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    opt_step = torch.compile(opt.step) if compile_optimizer else opt.step
    ids = torch.randint(0, 4096, (8, 129), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = compiled(ids[:, :-1], ids[:, 1:])  # @model_call
        loss.backward()
        opt_step()  # @opt_step

    return step


def run_steps(step, n):
    for _ in range(n):
        step()
    torch.cuda.synchronize()


def test_compiled_training_step_fused_kernels_on_model_lines():
    step = make_training()
    with dlpt.profile(skip_first=3) as prof:
        run_steps(step, 6)
    q = keep(prof.session, "compiled_training_step_fused_kernels_on_model_lines")
    opt_line = line_of("opt_step", make_training)
    model_nodes = [
        n
        for n in gpu_leaves(q)
        if not any(
            a["kind"] == "frame" and a["line"] == opt_line and a["file"] == HERE for a in q.ancestors(n["id"])
        )
    ]
    assert on_model_lines(q, model_nodes) >= 0.95

    triton = [n for n in q.kernels(q.nodes) if n["name"].startswith("triton_")]
    assert triton, "no Inductor kernels recorded"
    assert on_model_lines(q, triton) >= 0.95
    graphs = {(n.get("x") or {}).get("graph", "") for n in triton}
    assert any(g.endswith("_forward") for g in graphs) and any(g.endswith("_backward") for g in graphs), (
        graphs
    )
    # Same kernel name in two graphs: two rows, told apart by the graph in their names.
    for n in triton:
        assert n["name"].endswith(f"[{n['x']['graph']}]")
    # Fused kernels name the ATen ops they came from.
    assert sum(1 for n in triton if (n.get("x") or {}).get("fuses")) >= len(triton) // 2
    assert any("aten.native_layer_norm" in n["x"].get("fuses", []) for n in triton)
    # The compiled backward is grafted under the forward call: its kernels sit in <backward>.
    bwd = [n for n in triton if n["x"]["graph"].endswith("_backward")]
    assert all(q.phase_of(n["id"]) == "<backward>" for n in bwd)
    assert q.gpu_total(q.kernels(q.nodes, "<backward>")) > 0.3 * q.gpu_total(model_nodes)


def test_reduce_overhead_replays_on_capture_lines():
    step = make_training(mode="reduce-overhead")
    # Graphs are recorded in the skipped warm-up steps; the profiled steps only replay them.
    with dlpt.profile(skip_first=4, calibrate=False) as prof:
        run_steps(step, 7)
    q = keep(prof.session, "reduce_overhead_replays_on_capture_lines")
    graphs = prof.session.meta["cuda_graphs"]
    model = [n for n in gpu_leaves(q) if q.phase_of(n["id"]) == "<cuda graph replay>"]
    assert graphs["nodes_captured"] > 0
    assert graphs["replay_gpu_ns"] > 0 and graphs["uncaptured_gpu_ns"] == 0
    # The replay counter covers every traced replay; the warm-up's are on the same lines, in "o".
    outside = sum((n.get("o") or {}).get("gpu_ns", 0) for n in model)
    assert q.gpu_total(model) + outside == pytest.approx(graphs["replay_gpu_ns"], rel=0.01)
    # Forward and backward graphs both replay, and both land on the model's lines.
    assert any(
        n["name"].startswith("triton_") and n["x"].get("graph", "").endswith("_backward") for n in model
    )
    assert on_model_lines(q, model) >= 0.95
    # Nearly all of the step's model work replays from graphs.
    opt_line = line_of("opt_step", make_training)
    not_opt = [
        n
        for n in gpu_leaves(q)
        if not any(a["kind"] == "frame" and a["line"] == opt_line for a in q.ancestors(n["id"]))
    ]
    assert q.gpu_total(model) >= 0.9 * q.gpu_total(not_opt)


def capture_and_replay(replays: int, profile_capture: bool):
    a = torch.randn(512, 512, device="cuda")
    b = torch.randn(512, 512, device="cuda")
    g = torch.cuda.CUDAGraph()
    torch.mm(a, b)  # warm up cuBLAS outside the capture
    torch.cuda.synchronize()
    prof = dlpt.profile()
    if profile_capture:
        prof.start()
    with torch.cuda.graph(g):
        c = torch.mm(a, b)  # @capture
        c.relu_()  # @capture2
    if not profile_capture:
        prof.start()
    for _ in range(replays):
        g.replay()  # @replay
    prof.stop()
    return prof.session


def test_manual_cuda_graph_replays_on_capture_lines():
    session = capture_and_replay(5, profile_capture=True)
    q = keep(session, "manual_cuda_graph_replays_on_capture_lines")
    cap, cap2, rep = (line_of(t, capture_and_replay) for t in ("capture", "capture2", "replay"))
    mm = [n for n in q.kernels(q.under_line(HERE, cap)) if q.phase_of(n["id"]) == "<cuda graph replay>"]
    relu = [n for n in q.kernels(q.under_line(HERE, cap2)) if q.phase_of(n["id"]) == "<cuda graph replay>"]
    # Each kernel of the graph (cuBLAS may use two for the GEMM) ran once per replay.
    assert mm and all(n["m"]["kernels"] == 5 for n in mm)
    assert relu and all(n["m"]["kernels"] == 5 for n in relu)
    assert q.kernels(q.under_line(HERE, rep)) == []
    # The replay call itself is host work at its own line.
    assert sum(n["m"].get("api_ns", 0) for n in q.under_line(HERE, rep)) > 0
    assert session.meta["cuda_graphs"]["uncaptured_gpu_ns"] == 0


def test_graph_captured_before_profiling_falls_back_to_replay_line():
    session = capture_and_replay(4, profile_capture=False)
    q = keep(session, "graph_captured_before_profiling_falls_back_to_replay_line")
    rep = line_of("replay", capture_and_replay)
    replayed = [n for n in q.kernels(q.under_line(HERE, rep)) if q.phase_of(n["id"]) == "<cuda graph replay>"]
    assert len(replayed) >= 2 and all(n["m"]["kernels"] == 4 for n in replayed)
    g = session.meta["cuda_graphs"]
    assert g["uncaptured_gpu_ns"] == g["replay_gpu_ns"] > 0


def test_user_triton_kernel_on_calling_line_with_launch_config():
    triton = pytest.importorskip("triton")
    import triton.language as tl

    @triton.jit
    def scaled_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(
            out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2 + tl.load(y_ptr + offs, mask=mask), mask=mask
        )

    def launch(x, y, out):
        n = x.numel()
        scaled_add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024, num_warps=4)  # @launch

    x, y = torch.randn(1 << 20, device="cuda"), torch.randn(1 << 20, device="cuda")
    out = torch.empty_like(x)
    launch(x, y, out)  # compile outside the profile
    torch.cuda.synchronize()
    with dlpt.profile() as prof:
        for _ in range(3):
            launch(x, y, out)
    q = keep(prof.session, "user_triton_kernel_on_calling_line_with_launch_config")
    ks = [
        n
        for n in q.kernels(q.under_line(HERE, line_of("launch", launch)))
        if n["name"] == "scaled_add_kernel"
    ]
    assert sum(n["m"]["kernels"] for n in ks) == 3
    assert ks[0]["x"]["grid"] == [1024, 1, 1] and ks[0]["x"]["block"] == [128, 1, 1]
    assert torch.allclose(out, x * 2 + y)


def test_compiled_optimizer_on_step_line():
    step = make_training(compile_optimizer=True)
    with dlpt.profile(skip_first=3) as prof:
        run_steps(step, 5)
    q = keep(prof.session, "compiled_optimizer_on_step_line")
    opt_line = line_of("opt_step", make_training)
    under_step = [
        n
        for n in gpu_leaves(q)
        if any(
            a["kind"] == "frame" and a["file"] == HERE and a["line"] == opt_line for a in q.ancestors(n["id"])
        )
    ]
    compiled_opt = [n for n in q.kernels(under_step) if n["name"].startswith("triton_")]
    assert compiled_opt, "no compiled optimizer kernels under the step line"
    # Every kernel of the optimizer's generated code sits under the step line and nowhere else.
    opt_graphs = {n["x"]["graph"] for n in compiled_opt}
    elsewhere = [
        n for n in q.kernels(q.nodes) if (n.get("x") or {}).get("graph") in opt_graphs and n not in under_step
    ]
    assert elsewhere == []
    assert user_frame(q, compiled_opt[0]["id"])["line"] == opt_line


def test_compiled_example_report_names_breaks_recompiles_and_model_lines(tmp_path):
    """What a new user runs: the compiled example under the CLI."""
    import json
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = tmp_path / "s.json"
    env = dict(os.environ, COLUMNS="140", TORCHINDUCTOR_FX_GRAPH_CACHE="0")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "dlpt",
            "--skip-first",
            "6",
            "-o",
            str(out),
            "examples/compiled_gpt.py",
            "--steps",
            "10",
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    text = r.stdout
    assert "Graph breaks" in text and "graph_break()" in text
    assert "Recompilations" in text and "compiled_gpt.py:" in text
    assert "⚠ graph break" in text
    data = json.loads(out.read_text())
    from dlpt.model.session import Session

    q = keep(Session.from_dict(data), "compiled_example")
    triton = [n for n in q.kernels(q.nodes) if n["name"].startswith("triton_")]
    model_file = os.path.join(root, "examples", "gpu_gpt.py")
    example = os.path.join(root, "examples", "compiled_gpt.py")
    total = sum(n["m"].get("gpu_ns", 0) for n in triton)
    # The innermost user frame of each fused kernel is a model line (gpu_gpt.py's modules, or
    # LoggedGPT.forward in the example, including the part Dynamo resumes after the graph
    # break), not the training loop.
    import ast

    tree = ast.parse(Path(example).read_text())
    logged = next(c for c in tree.body if isinstance(c, ast.ClassDef) and c.name == "LoggedGPT")
    in_model = range(logged.lineno, logged.end_lineno + 1)
    on_model = sum(
        n["m"].get("gpu_ns", 0)
        for n in triton
        if (f := user_frame(q, n["id"])) is not None
        and (
            (f["file"] == model_file and "forward" in f["name"])
            or (f["file"] == example and f["line"] in in_model)
        )
    )
    assert total > 0 and on_model / total >= 0.95
    assert any(n["x"].get("graph", "").endswith("_backward") for n in triton)
