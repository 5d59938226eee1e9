"""Rules fire on the CPU where their evidence exists there (issue 33: on the CPU no rule fired).
Real capture: AdamW stepping parameter by parameter (``_single_tensor_adam``) gets the
``foreach=True`` suggestion, measured from the sampled Python between its ops; with
``foreach=True`` it gets none."""

from __future__ import annotations

import torch

import dlpt
from dlpt.analysis.inputs import analyze
from dlpt.analysis.suggest import derive


def _findings(foreach: bool) -> list:
    torch.manual_seed(0)
    m = torch.nn.Sequential(*[torch.nn.Linear(8, 8) for _ in range(60)])
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, foreach=foreach)
    x = torch.ones(4, 8)
    with dlpt.profile(gpu=False, sample_hz=2000, skip_first=2) as prof:
        for _ in range(14):
            m(x).sum().backward()
            opt.step()  # @step
            opt.zero_grad()
    assert prof.session is not None
    return [f for f in derive(analyze(prof.session)) if f.rule == "optimizer_loop"]


def test_adamw_per_parameter_on_the_cpu_gets_foreach() -> None:
    (f,) = _findings(foreach=False)
    assert f.action == "torch.optim.AdamW(..., foreach=True)"
    assert f.file == __file__ and f.function == "_findings"
    assert f.gain_ns > 0 and f.numbers["host_ns"] > f.numbers["cpu_ns"]


def test_adamw_with_foreach_on_the_cpu_gets_nothing() -> None:
    assert _findings(foreach=True) == []
