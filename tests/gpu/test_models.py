"""Whole models: nearly all GPU time of a training step (backward included) lands on the user's
source lines, not on library frames or "<unknown>"."""

from __future__ import annotations

import pytest
import torch

import dlpt
from tests.query import Q

pytestmark = pytest.mark.gpu
HERE = __file__


def on_user_lines(session) -> float:
    """Fraction of GPU time whose calling context contains a frame of this file."""
    q = Q(session)
    total = attributed = 0
    for n in session.nodes:
        ns = sum(n["m"].get(k, 0) for k in ("gpu_ns", "copy_ns", "memset_ns"))
        if not ns:
            continue
        total += ns
        if any(a["kind"] == "frame" and a["file"] == HERE for a in q.ancestors(n["id"])):
            attributed += ns
    assert total > 0
    return attributed / total


def train(step, steps):
    for _ in range(steps):
        step()
    torch.cuda.synchronize()


def test_resnet50_step_on_user_lines():
    torchvision = pytest.importorskip("torchvision")
    model = torchvision.models.resnet50().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(32, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (32,), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    train(step, 2)
    with dlpt.profile(skip_first=0) as prof:  # warmed up above: every step counts
        train(step, 3)
    assert prof.session.meta["steps"]["profiled"] == 3
    assert on_user_lines(prof.session) >= 0.99
    # backward is grafted: some kernels sit under <backward> phases
    q = Q(prof.session)
    assert q.total("gpu_ns", q.kernels(q.nodes, "<backward>")) > 0.3 * q.total("gpu_ns", q.kernels(q.nodes))


def test_gpt2_step_on_user_lines():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.GPT2Config(n_positions=512, vocab_size=50257)
    model = transformers.GPT2LMHeadModel(cfg).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    ids = torch.randint(0, cfg.vocab_size, (4, 256), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(input_ids=ids, labels=ids)
        out.loss.backward()
        opt.step()

    train(step, 2)
    with dlpt.profile(skip_first=0) as prof:
        train(step, 3)
    assert on_user_lines(prof.session) >= 0.99
    q = Q(prof.session)
    assert q.total("gpu_ns", q.kernels(q.nodes, "<backward>")) > 0.3 * q.total("gpu_ns", q.kernels(q.nodes))
