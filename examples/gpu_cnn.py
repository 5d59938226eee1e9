"""A ResNet-style CNN training loop (bf16 autocast, SGD) with a host-to-device copy every step.

Self-contained (no torchvision). Besides convolutions it deliberately produces the other costs
dlpt attributes to lines: one host-to-device copy of the input batch per step (from pinned
memory by default, `--pageable` for pageable memory) and a `.item()` of the loss every
`--log-every` steps, a device-to-host copy that synchronises the host with the GPU.

Uses CUDA when available, else the CPU with a smaller network and image size.

    python examples/gpu_cnn.py [--steps 20] [--pageable] [--device cpu]
"""

import argparse
import time

import torch
import torch.nn.functional as F
from torch import nn


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with a residual connection (ResNet-18/34 style)."""

    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.down = None
        if stride != 1 or c_in != c_out:
            self.down = nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.conv1(x)
        out = self.bn1(out)
        out = F.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        skip = x if self.down is None else self.down(x)
        out = out + skip
        return F.relu(out)


class ResNet(nn.Module):
    def __init__(self, widths=(64, 128, 256, 512), blocks=(2, 2, 2, 2), classes: int = 1000):
        super().__init__()
        self.stem = nn.Conv2d(3, widths[0], 7, stride=2, padding=3, bias=False)
        self.stem_bn = nn.BatchNorm2d(widths[0])
        stages, c_in = [], widths[0]
        for i, (w, n) in enumerate(zip(widths, blocks, strict=True)):
            for j in range(n):
                stages.append(BasicBlock(c_in, w, stride=2 if (j == 0 and i > 0) else 1))
                c_in = w
        self.stages = nn.Sequential(*stages)
        self.fc = nn.Linear(c_in, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        x = self.stem_bn(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 3, stride=2, padding=1)
        x = self.stages(x)
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)


# Sizes: the GPU one is ResNet-18-like at 128 px; the CPU one finishes in seconds.
GPU_CFG = dict(batch=64, image=128, widths=(64, 128, 256, 512), blocks=(2, 2, 2, 2), classes=1000)
CPU_CFG = dict(batch=8, image=32, widths=(16, 32, 64, 128), blocks=(1, 1, 1, 1), classes=10)


def make_step(
    device: str = "auto",
    pageable: bool = False,
    log_every: int = 10,
    amp: bool = True,
    seed: int = 0,
    **overrides,
):
    """Build everything and return (step, cfg); step() runs one training iteration.

    The batch lives in host memory (a small ring, as a data loader would hand it over) and is
    copied to the device inside step(), so every step has exactly one input copy.
    """
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    cuda = device.startswith("cuda")
    cfg = dict(GPU_CFG if cuda else CPU_CFG, **overrides)
    torch.manual_seed(seed)
    model = ResNet(cfg["widths"], cfg["blocks"], cfg["classes"]).to(device)
    if cuda:
        model = model.to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    # bf16 autocast on the GPU only: CPUs without bf16 units run it far slower than fp32.
    use_amp = amp and cuda
    pin = cuda and not pageable
    host_x = [torch.randn(cfg["batch"], 3, cfg["image"], cfg["image"], pin_memory=pin) for _ in range(2)]
    labels = torch.randint(0, cfg["classes"], (cfg["batch"],), device=device)
    state = {"i": 0, "loss": float("nan")}

    def step():
        i = state["i"]
        state["i"] = i + 1
        x = host_x[i % len(host_x)].to(device, non_blocking=pin)
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cuda" if cuda else "cpu", dtype=torch.bfloat16, enabled=use_amp):
            logits = model(x)
            loss = F.cross_entropy(logits, labels)
        loss.backward()
        opt.step()
        if log_every and (i + 1) % log_every == 0:
            state["loss"] = loss.item()
        return loss

    return step, dict(cfg, device=device, amp=use_amp, pinned=pin, state=state)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--device", default="auto", help="auto (cuda if available), cuda or cpu")
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--image", type=int, default=None)
    ap.add_argument("--pageable", action="store_true", help="copy from pageable, not pinned, memory")
    ap.add_argument("--log-every", type=int, default=10, help="loss.item() every N steps (0: never)")
    ap.add_argument("--no-amp", action="store_true", help="disable bf16 autocast")
    args = ap.parse_args(argv)
    overrides = {k: v for k, v in (("batch", args.batch), ("image", args.image)) if v}
    step, cfg = make_step(args.device, args.pageable, args.log_every, not args.no_amp, **overrides)
    t0 = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    last = loss.item()  # also waits for the GPU, so the timing below is honest
    dt = (time.perf_counter() - t0) / max(args.steps, 1)
    print(f"gpu_cnn: {args.steps} steps on {cfg['device']}, loss {last:.4f}, {dt * 1e3:.1f} ms/step")


if __name__ == "__main__":
    main()
