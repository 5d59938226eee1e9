# Copied from the anchor benchmark's workloads.py (the peer benchmark that produced the anchors'
# numbers, bench/README.md; not part of this repository), so the repo keeps its own
# copy. Keep the builders above the `dlpt additions` marker identical to that file so ratios
# stay comparable with the anchors.
"""Reference training workloads for measuring profilers side by side.

Each builder returns (name, step) where step() runs one full training
iteration (forward, backward, optimizer step) on the GPU. No weights are
downloaded: models are built from configs with random init.
"""
import torch


def resnet50(batch=64, amp=True):
    import torchvision
    m = torchvision.models.resnet50().cuda()
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(batch, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (batch,), device="cuda")
    lossf = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            loss = lossf(m(x), y)
        loss.backward()
        opt.step()
    return "resnet50_b64_bf16", step


def gpt2(batch=8, seq=512, compiled=False):
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(n_positions=1024, vocab_size=50257)
    m = GPT2LMHeadModel(cfg).cuda()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, foreach=True)
    ids = torch.randint(0, cfg.vocab_size, (batch, seq), device="cuda")
    fwd = torch.compile(m) if compiled else m

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = fwd(input_ids=ids, labels=ids)
        out.loss.backward()
        opt.step()
    return ("gpt2_124m_b8_s512" + ("_compiled" if compiled else "")), step


def small_mlp(batch=32, width=256, depth=8):
    """Launch-bound: many tiny kernels, the worst case for per-launch overhead."""
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.GELU(), torch.nn.LayerNorm(width)]
    m = torch.nn.Sequential(*layers).cuda()
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    x = torch.randn(batch, width, device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        m(x).square().mean().backward()
        opt.step()
    return "small_mlp_launch_bound", step


BUILDERS = {"resnet50": resnet50, "gpt2": gpt2, "small_mlp": small_mlp,
            "gpt2_compiled": lambda: gpt2(compiled=True)}


# ---- dlpt additions (not in the anchor benchmark) --------------------------------------------
import os as _os
import sys as _sys

_EXAMPLES = _os.path.join(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))), "examples")


def _example(name):
    """Import an example script as a module (examples/ is not a package)."""
    if _EXAMPLES not in _sys.path:
        _sys.path.insert(0, _EXAMPLES)
    return __import__(name)


def cpu_example():
    """examples/mlp_train.py's training step, always on the CPU (the dlpt-without-GPU case)."""
    return "cpu_example_mlp", _example("mlp_train").make_step()


def ex_cnn():
    """examples/gpu_cnn.py: ResNet-18-like, one pinned HtoD copy per step, .item() every 10."""
    step, _ = _example("gpu_cnn").make_step()
    return "example_gpu_cnn", step


def ex_gpt():
    """examples/gpu_gpt.py at its default (small) config."""
    step, _ = _example("gpu_gpt").make_step()
    return "example_gpu_gpt", step


def gpt2_compiled_reduce_overhead():
    """gpt2(compiled=True) under mode="reduce-overhead" (CUDA graphs). torch.compile is wrapped
    for the call rather than the builder copied, so the model stays the shared one."""
    import functools

    compile_ = torch.compile
    torch.compile = functools.partial(compile_, mode="reduce-overhead")
    try:
        name, step = gpt2(compiled=True)
    finally:
        torch.compile = compile_
    return name + "_reduce_overhead", step


BUILDERS.update(cpu_example=cpu_example, ex_cnn=ex_cnn, ex_gpt=ex_gpt,
                gpt2_compiled_ro=gpt2_compiled_reduce_overhead)

# Workloads that never touch the GPU: overhead.py must not call torch.cuda there.
CPU_ONLY = {"cpu_example"}
# Workloads whose steps are short enough that the default step count would time only a few
# hundred ms; overhead.py multiplies STEPS by this so the timed window is not mostly noise.
STEPS_SCALE = {"cpu_example": 10, "gpt2_compiled": 3, "gpt2_compiled_ro": 3}
