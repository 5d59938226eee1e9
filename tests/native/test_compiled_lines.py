"""torch.compile: ops launched from Inductor's generated code land on the model's own lines,
forward and compiled backward, under the compiled region and CompiledFunction's phases."""

from __future__ import annotations

import os

import torch
import torch._functorch.config
import torch._inductor.config

import dlpt
from tests.query import Q, line_of

HERE = os.path.abspath(__file__)


def mm_model(x, w):
    return x @ w  # @mm


def test_compiled_matmul_forward_and_backward_on_the_model_line():
    torch._dynamo.reset()
    # No on-disk caches: a graph cached by another checkout of this file carries that
    # checkout's paths in its line map.
    no_cache = {"fx_graph_cache": False}
    with torch._inductor.config.patch(no_cache), torch._functorch.config.patch(enable_autograd_cache=False):
        compiled = torch.compile(mm_model)  # Inductor; a lone matmul is an extern aten::mm (no C++ build)
        x = torch.randn(32, 32)
        w = torch.randn(32, 32, requires_grad=True)
        compiled(x, w).sum().backward()  # compile outside the profile
        with dlpt.profile() as prof:
            for _ in range(3):
                compiled(x, w).sum().backward()
    q = Q(prof.session)
    under = q.under_line(HERE, line_of("mm", mm_model))
    mms = [n for n in under if n["kind"] == "op" and n["name"] == "aten::mm"]
    phases = {q.phase_of(n["id"]) for n in mms}
    assert phases == {"<forward>", "<backward>"}
    assert sum(n["m"]["calls"] for n in mms) == 3 * 2  # forward mm + grad_w mm per step
    # The backward one sits under CompiledFunctionBackward, grafted under CompiledFunction.
    bwd = next(n for n in mms if q.phase_of(n["id"]) == "<backward>")
    names = [a["name"] for a in q.ancestors(bwd["id"])]
    assert "CompiledFunctionBackward" in names and "CompiledFunction" in names
    assert any(a["name"].startswith("Torch-Compiled Region") for a in q.ancestors(bwd["id"]))
    # The generated wrapper frames are marked and folded away in reports.
    assert any(n.get("x", {}).get("generated") == "inductor" for n in prof.session.nodes)
