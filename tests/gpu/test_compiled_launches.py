"""Issue 48: a nanoGPT-shaped compiled training run (shakespeare-char's size: 6 layers, 384 wide,
256 tokens, batch 64, dropout 0.2, bf16 autocast, fused AdamW, gradient clipping) leaves at most
1% of the compiled code's kernel launches on the compiled call: the rest are on model lines.

A launch counts as the compiled code's when a ``Torch-Compiled Region``, ``CompiledFunction`` or
Inductor-generated frame is above it; it is on a model line when the innermost frame above it that
is neither library code nor generated code is a line of the model's classes below. The test prints
the figures (``pytest -s``) with the launches left over, so one device run says what is left.
"""

from __future__ import annotations

import inspect
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import dlpt
from tests.gpu.test_compiled import keep, user_frame

pytestmark = pytest.mark.gpu
HERE = __file__
VOCAB, SEQ, LAYERS, WIDTH, HEADS, BATCH, DROPOUT = 65, 256, 6, 384, 6, 64, 0.2


class LayerNorm(nn.Module):
    def __init__(self, ndim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim))

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(WIDTH, 3 * WIDTH)
        self.c_proj = nn.Linear(WIDTH, WIDTH)
        self.resid_dropout = nn.Dropout(DROPOUT)

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(WIDTH, dim=2)
        q, k, v = (z.view(b, t, HEADS, c // HEADS).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=DROPOUT if self.training else 0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(b, t, c)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_fc, self.gelu = nn.Linear(WIDTH, 4 * WIDTH), nn.GELU()
        self.c_proj, self.dropout = nn.Linear(4 * WIDTH, WIDTH), nn.Dropout(DROPOUT)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.attn, self.ln_2, self.mlp = (
            LayerNorm(WIDTH),
            CausalSelfAttention(),
            LayerNorm(WIDTH),
            MLP(),
        )

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class NanoGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe, self.drop = (
            nn.Embedding(VOCAB, WIDTH),
            nn.Embedding(SEQ, WIDTH),
            nn.Dropout(DROPOUT),
        )
        self.h = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = LayerNorm(WIDTH)
        self.lm_head = nn.Linear(WIDTH, VOCAB, bias=False)
        self.wte.weight = self.lm_head.weight
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * LAYERS))

    def forward(self, idx, targets):
        pos = torch.arange(0, idx.size(1), dtype=torch.long, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)


MODEL_LINES = [
    range(start, start + len(lines))
    for lines, start in (
        inspect.getsourcelines(c) for c in (LayerNorm, CausalSelfAttention, MLP, Block, NanoGPT)
    )
]


def training():
    torch.manual_seed(0)
    model = NanoGPT().cuda()
    compiled = torch.compile(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.99), fused=True)
    data = torch.randint(0, VOCAB, (BATCH * 4, SEQ + 1), device="cuda")

    def step(i):
        rows = data[(i % 4) * BATCH : (i % 4 + 1) * BATCH]
        x, y = rows[:, :-1].contiguous(), rows[:, 1:].contiguous()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = compiled(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def _compiled(q, n) -> bool:
    for a in q.ancestors(n["id"]):
        if (a.get("x") or {}).get("generated") or a["name"].startswith(
            ("Torch-Compiled Region", "CompiledFunction")
        ):
            return True
    return False


def test_nanogpt_compiled_launches_are_on_model_lines():
    step = training()
    with dlpt.profile(skip_first=8, calibrate=False) as prof:
        for i in range(20):
            step(i)
        torch.cuda.synchronize()
    q = keep(prof.session, "nanogpt_compiled_launches")
    kernels = [n for n in q.nodes if n["kind"] == "kernel" and _compiled(q, n)]
    launches = sum(n["m"].get("kernels", 0) for n in kernels)
    left: dict[str, int] = {}
    for n in kernels:
        f = user_frame(q, n["id"])
        if f is None or f["file"] != HERE or not any(f["line"] in r for r in MODEL_LINES):
            where = (
                f"{n['name'][:60]} under {f['file'].rsplit('/', 1)[-1]}:{f['line']}" if f else n["name"][:60]
            )
            left[where] = left.get(where, 0) + n["m"].get("kernels", 0)
    off = sum(left.values())
    capture = prof.session.meta["capture"]
    steps = prof.session.meta["steps"]["profiled"]
    print(
        f"\nnanoGPT compiled: {launches:,} compiled-code launches in {steps} steps; "
        f"{off:,} ({100 * off / max(launches, 1):.2f}%) not on model lines; header: "
        f"{capture.get('inductor_unmapped_kernels', 0):,} Inductor launches unmapped from "
        f"{capture.get('inductor_unmapped_frames', 0)} generated lines (whole run); "
        f"compile failures {capture.get('compile_failures')}"
    )
    for where, count in sorted(left.items(), key=lambda kv: -kv[1])[:10]:
        print(f"  {count:6,}  {where}")
    assert steps > 0 and launches > 0
    assert off <= 0.01 * launches, left
