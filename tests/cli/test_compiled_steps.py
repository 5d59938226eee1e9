"""Steps on compiled functions (issue 48): ``--step-on`` counts the calls of a ``torch.compile``d
function and of a compiled module by the name the program wrote, on the CPU with Inductor (its
C++ kernels), without changing what Dynamo compiles."""

from __future__ import annotations

import json

import pytest

from .helpers import Job, Result, run_many, write

# f is compiled as g; Net is compiled as a whole (m) and in place (n); act runs inside the
# compiled f, where Dynamo traces it into f's graph.
PROGRAM = """\
import torch

def act(x):
    return torch.relu(x)

def f(x):
    return act(torch.sin(x) * 2 + 1)

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)

    def forward(self, x):
        return torch.tanh(self.lin(x))

g = torch.compile(f)
m = torch.compile(Net())
n = Net()
n.compile()
x = torch.randn(16, 16)
for _ in range(6):
    g(x)
for _ in range(5):
    m(x)
for _ in range(4):
    n(x)
print("done", flush=True)
"""

# name -> (calls counted, the match that made the steps)
EXPECTED = {
    "f": (6, "__main__:f"),
    "g": (6, "__main__:g"),
    "forward": (9, "__main__:Net.forward"),
    "Net": (9, "__main__:Net.forward"),
    "m": (5, "__main__:m"),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("compiled_steps")
    write(root / "prog.py", PROGRAM)
    jobs = {
        name: Job(["--step-on", name, "--skip-first", "0", "-o", f"{name}.json", "prog.py"], root)
        for name in [*EXPECTED, "act"]
    }
    return {"root": root, **run_many(jobs)}


def _meta(runs: dict, name: str) -> dict:
    r: Result = runs[name]
    assert r.rc == 0, r.err
    assert "done" in r.out
    return json.loads((runs["root"] / f"{name}.json").read_text())["meta"]


@pytest.mark.parametrize("name", list(EXPECTED))
def test_calls_of_a_compiled_function_or_module_are_steps(runs: dict, name: str) -> None:
    steps = _meta(runs, name)["steps"]
    calls, chosen = EXPECTED[name]
    assert (steps["seen"], steps["profiled"], steps["source"]) == (calls, calls, "call"), steps
    assert steps["step_on_chosen"] == chosen
    assert f"{calls} steps profiled (calls of {name}" in " ".join(runs[name].out.split())


def test_dynamo_compiles_the_users_functions_unbroken(runs: dict) -> None:
    # The wrapper dlpt puts around f and forward is not what Dynamo compiles, and adds no break.
    for name in EXPECTED:
        compiled = _meta(runs, name)["compile"]
        assert {e["function"] for e in compiled} == {"f", "forward"}, compiled
        assert all(not e["break_reasons"] for e in compiled)


def test_a_function_inside_compiled_code_is_traced_not_counted(runs: dict) -> None:
    meta = _meta(runs, "act")
    assert meta["steps"]["step_on_matched"] == ["__main__:act"] and meta["steps"]["profiled"] == 0
    assert all(not e["break_reasons"] for e in meta["compile"])
    assert "no call of act returned, so no step was counted" in " ".join(runs["act"].out.split())
