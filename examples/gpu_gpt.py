"""A GPT-style transformer training loop (AdamW, bf16 autocast on the GPU).

Self-contained: token + position embedding, pre-LayerNorm blocks with causal self-attention
through `F.scaled_dot_product_attention` and a GELU MLP, a tied LM head and cross-entropy.
Random tokens, random init: nothing is downloaded. Small by default; `--layers/--width/
--seq/--batch` scale it (GPT-2 124M is `--layers 12 --width 768 --seq 1024 --vocab 50257`).
Uses CUDA when available, else the CPU with a tiny config.

    python examples/gpu_gpt.py [--steps 20] [--layers 4 --width 256 --seq 256 --batch 8]
"""

import argparse
import math
import time

import torch
import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        qkv = self.qkv(x)
        q, k, v = qkv.view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).reshape(b, t, c)
        return self.proj(y)


class MLP(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.fc = nn.Linear(width, 4 * width)
        self.out = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        h = F.gelu(h, approximate="tanh")
        return self.out(h)


class Block(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.attn = Attention(width, heads)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = MLP(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return x


class GPT(nn.Module):
    def __init__(self, vocab: int, seq: int, layers: int, width: int, heads: int):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(seq, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.tok.weight  # tied, as in GPT-2
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.normal_(p, std=0.02)

    def forward(self, ids: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.tok(ids) + self.pos(pos)
        for block in self.blocks:
            x = block(x)
        x = self.ln_f(x)
        logits = self.head(x)
        return F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten())


GPU_CFG = dict(layers=4, width=256, seq=256, batch=8, vocab=8192)
CPU_CFG = dict(layers=2, width=64, seq=32, batch=2, vocab=512)


def make_step(device: str = "auto", amp: bool = True, seed: int = 0, **overrides):
    """Build model, optimizer and a fixed batch; return (step, cfg)."""
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    cuda = device.startswith("cuda")
    cfg = dict(GPU_CFG if cuda else CPU_CFG, **{k: v for k, v in overrides.items() if v})
    heads = max(1, cfg["width"] // 64)
    torch.manual_seed(seed)
    model = GPT(cfg["vocab"], cfg["seq"], cfg["layers"], cfg["width"], heads).to(device)
    # fused=True on CUDA: one kernel per step for the update, as real training scripts use.
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, fused=cuda or None)
    ids = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["seq"] + 1), device=device)
    inputs, targets = ids[:, :-1], ids[:, 1:]
    use_amp = amp and cuda  # bf16 autocast on the GPU only (slow on most CPUs)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cuda" if cuda else "cpu", dtype=torch.bfloat16, enabled=use_amp):
            loss = model(inputs, targets)
        loss.backward()
        opt.step()
        return loss

    return step, dict(cfg, heads=heads, device=device, amp=use_amp)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--device", default="auto", help="auto (cuda if available), cuda or cpu")
    for k in ("layers", "width", "seq", "batch", "vocab"):
        ap.add_argument(
            f"--{k}", type=int, default=None, help=f"default {GPU_CFG[k]} on GPU, {CPU_CFG[k]} on CPU"
        )
    ap.add_argument("--no-amp", action="store_true", help="disable bf16 autocast")
    args = ap.parse_args(argv)
    step, cfg = make_step(
        args.device,
        not args.no_amp,
        layers=args.layers,
        width=args.width,
        seq=args.seq,
        batch=args.batch,
        vocab=args.vocab,
    )
    t0 = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    last = loss.item()  # waits for the GPU, so the timing below is honest
    dt = (time.perf_counter() - t0) / max(args.steps, 1)
    ppl = math.exp(min(last, 20.0))
    print(
        f"gpu_gpt: {args.steps} steps on {cfg['device']}, loss {last:.4f} (ppl {ppl:.0f}), "
        f"{dt * 1e3:.1f} ms/step"
    )


if __name__ == "__main__":
    main()
