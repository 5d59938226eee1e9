"""Lean op starts on the GPU (issue 50): the default with GPU capture, and every kernel, copy and
sync on the same line, op and phase as with --exact-ops, in training (views whose backward
launches, optimizer steps) and in a no-grad decode loop, where ops that launch nothing take no walk.
Kernel *counts* per place are compared (GPU times vary between runs). The CPU tests
(tests/native/test_lean_ops.py) force the mode; these check it where it is the default."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

import dlpt
from tests.query import Q

pytestmark = pytest.mark.gpu
STEPS = 4


def train(model, opt, x, steps):
    for _ in range(steps):
        h = model(x)
        head = h[:, : h.shape[1] // 2]  # a view: launches nothing, its backward does
        loss = head.transpose(0, 1).reshape(-1).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)


def decode(model, x, tokens):
    with torch.no_grad():
        for _ in range(tokens):
            y = model(x[:, -1:])  # views, reshapes and launches, as a decode step
            x = torch.cat([x, y.view(y.shape[0], 1, -1)[:, :, : x.shape[2]]], dim=1)
            x.sum().item()  # a sync on its line


def places(session) -> Counter:
    """Kernels, copies, memsets and syncs counted by their place: the frames' (file, line), the op
    and phase nodes above them, and their own name."""
    q = Q(session)
    out: Counter = Counter()
    for n in q.nodes:
        if n["kind"] not in ("kernel", "memcpy", "memset", "sync"):
            continue
        path = tuple(
            (a["kind"], a["name"], a.get("file"), a.get("line"))
            for a in q.ancestors(n["id"])
            if a["kind"] != "thread"
        )
        for m in (n["m"], n.get("o", {})):  # counted steps and the rest
            out[(n["kind"], n["name"], path)] += sum(
                m.get(k, 0) for k in ("kernels", "copies", "memsets", "syncs")
            )
    return out


def profiled(fn, exact: bool | None, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("DLPT_OPS", raising=False)  # the default, whatever the suite runs with
    with dlpt.profile(exact_ops=exact, skip_first=0, calibrate=False) as prof:
        fn()
        torch.cuda.synchronize()
    assert prof.session.meta["gpu"]["enabled"], prof.session.meta["gpu"]
    return prof.session


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 256)).cuda()


def test_training_kernels_land_as_with_exact_ops(monkeypatch: pytest.MonkeyPatch) -> None:
    model = mlp()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(64, 256, device="cuda")
    train(model, opt, x, 2)  # warm-up: cuBLAS handles, the optimizer's state
    # Both from one line: a place is a path of (file, line) frames, the caller's included.
    lean, exact = (profiled(lambda: train(model, opt, x, STEPS), mode, monkeypatch) for mode in (None, True))
    assert lean.meta["capture"]["op_mode"] == "lean" and exact.meta["capture"]["op_mode"] == "exact"
    assert places(lean) == places(exact)
    c = lean.meta["capture"]
    assert c["backward_unresolved"] == 0 and c["deferred_ops"] > 0
    # The view's backward kernels on the view's line, under its op's <backward> phase: found at
    # the view's end (it launched nothing but made an autograd node).
    assert c["deferred_at_end"] >= STEPS


def test_a_decode_loop_walks_only_for_ops_that_launch(monkeypatch: pytest.MonkeyPatch) -> None:
    model = mlp().eval()
    x = torch.randn(8, 4, 256, device="cuda")
    decode(model, x, 2)
    lean, exact = (profiled(lambda: decode(model, x, 16), mode, monkeypatch) for mode in (None, True))
    assert places(lean) == places(exact)
    c, e = lean.meta["capture"], exact.meta["capture"]
    assert c["outermost_ops"] == e["outermost_ops"] > 0
    assert c["deferred_at_end"] == 0  # no autograd: nothing walks at its end
    # Exact: a walk per outermost op; lean: only for those that launched (or synced).
    assert e["python_walks"] >= e["outermost_ops"]
    assert c["python_walks"] < e["python_walks"]
    assert c["deferred_at_launch"] < c["deferred_ops"]
    assert (
        c["python_walks"] - c["deferred_at_launch"] == e["python_walks"] - e["outermost_ops"]
    )  # bare launches
