"""Workloads of the paired benchmark (bench/paired.py) beyond the shared ones (workloads.py).

Each builder returns (name, step, steps_per_chunk): step() runs one unit of work on the GPU.

- small_gpt: nanoGPT's shakespeare-char size (6 layers, 384 wide, 6 heads, batch 64 x 256,
  vocab 65), bf16 autocast, fused AdamW: the model size people iterate on; launch-bound on an
  H100/H200, where a profiler's per-op and per-launch costs show in full.
- small_gpt_compiled: the same model under torch.compile (default mode).
- decode: Hugging Face GPT-2 124M built from its config (random weights, nothing downloaded),
  bf16, `generate` with KV cache, batch 4, 64 new tokens greedy: one step = one generate call.
- cnn_loader: the examples' ResNet-18-style CNN (bf16 autocast, SGD) fed by a DataLoader in the
  main process (num_workers=0) whose dataset builds each 128x3x96x96 batch on the CPU with a
  little augmentation: the GPU waits for the host at the start of every step, the case the
  data-loading suggestion is about.

The launch microbenchmarks (the DLPT group's overhead suite's shape, issue 50), where the cost per
launch is the whole story; each step is one line of Python run many times, 10 steps a chunk:
- tiny_add: 10,000 launches of `a + b` on two 1-element tensors (100,000 a chunk): an op that
  launches, the launch path at its shortest.
- tiny_triton: 2,000 launches of a one-block Triton add kernel (20,000 a chunk; Triton's Python
  launcher is slower than an aten op's): launches outside any aten op, each found from the Python
  stack (needs triton).
- heavy_mm: 100 launches of a 4096x4096 bf16 matmul (1,000 a chunk): GPU-bound, where a
  profiler's per-launch cost must vanish.
"""

from __future__ import annotations

import os
import sys

import torch

_EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")

SMALL_GPT = dict(layers=6, width=384, seq=256, batch=64, vocab=65)


def small_gpt(compiled: bool = False):
    if _EXAMPLES not in sys.path:
        sys.path.insert(0, _EXAMPLES)
    import gpu_gpt

    torch.manual_seed(0)
    cfg = SMALL_GPT
    model = gpu_gpt.GPT(cfg["vocab"], cfg["seq"], cfg["layers"], cfg["width"], cfg["width"] // 64).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, fused=True)
    ids = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["seq"] + 1), device="cuda")
    inputs, targets = ids[:, :-1], ids[:, 1:]
    fwd = torch.compile(model) if compiled else model

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = fwd(inputs, targets)
        loss.backward()
        opt.step()

    return ("small_gpt_compiled" if compiled else "small_gpt"), step, 20


def decode():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config()
    model = GPT2LMHeadModel(cfg).cuda().to(torch.bfloat16).eval()
    prompt = torch.randint(0, cfg.vocab_size, (4, 16), device="cuda")
    attention = torch.ones_like(prompt)

    @torch.no_grad()
    def step():
        model.generate(prompt, attention_mask=attention, max_new_tokens=64, min_new_tokens=64, do_sample=False,
                       use_cache=True, pad_token_id=cfg.eos_token_id)

    return "hf_gpt2_generate_b4_64tok", step, 2


def cnn_loader():
    if _EXAMPLES not in sys.path:
        sys.path.insert(0, _EXAMPLES)
    import gpu_cnn

    torch.manual_seed(0)
    model = gpu_cnn.ResNet(classes=100).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    class Batches(torch.utils.data.IterableDataset):
        def __iter__(self):
            g = torch.Generator().manual_seed(0)
            while True:
                x = torch.rand(128, 3, 112, 112, generator=g)
                i, j = torch.randint(0, 16, (2,), generator=g).tolist()
                x = x[:, :, i : i + 96, j : j + 96]  # random crop
                x = (x - x.mean(dim=(0, 2, 3), keepdim=True)) / x.std(dim=(0, 2, 3), keepdim=True)
                yield x.contiguous(), torch.randint(0, 100, (128,), generator=g)

    batches = iter(torch.utils.data.DataLoader(Batches(), batch_size=None, num_workers=0, pin_memory=True))

    def step():
        x, y = next(batches)
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    return "cnn_dataloader_b128_96px", step, 20


def tiny_add():
    a, b = torch.ones(1, device="cuda"), torch.ones(1, device="cuda")

    def step():
        for _ in range(10_000):
            a + b  # noqa: B018 - the launch is the point

    return "tiny_add_10k_launches", step, 10


def tiny_triton():
    import triton
    import triton.language as tl

    @triton.jit
    def add(x, y, out, n, block: tl.constexpr):
        i = tl.arange(0, block)
        m = i < n
        tl.store(out + i, tl.load(x + i, mask=m) + tl.load(y + i, mask=m), mask=m)

    a, b, c = (torch.ones(16, device="cuda") for _ in range(3))

    def step():
        for _ in range(2_000):
            add[(1,)](a, b, c, 16, block=16)

    return "tiny_triton_2k_launches", step, 10


def heavy_mm():
    a, b = (torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16) for _ in range(2))

    def step():
        for _ in range(100):
            a @ b  # noqa: B018

    return "heavy_mm_4096_bf16_100_launches", step, 10


#: Kernel launches a step of each launch microbenchmark makes (bench/paired.py's per-launch column).
LAUNCHES_PER_STEP = {"tiny_add": 10_000, "tiny_triton": 2_000, "heavy_mm": 100}

BUILDERS = {
    "cnn_loader": cnn_loader,
    "small_gpt": small_gpt,
    "small_gpt_compiled": lambda: small_gpt(compiled=True),
    "decode": decode,
    "tiny_add": tiny_add,
    "tiny_triton": tiny_triton,
    "heavy_mm": heavy_mm,
}
