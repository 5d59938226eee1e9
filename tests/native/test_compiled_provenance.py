"""torch.compile on the CPU with Inductor's C++ kernels: every generated line that runs with the
graph gets a model line (issue 48), through Inductor's kernel provenance (recorded for a fresh
compile and for one served from the FX graph cache), the line that reads a buffer (the RNG seeds
of a graph with dropout) and, for the module's loading code, a scope that says what it is."""

from __future__ import annotations

import os

import torch
import torch._functorch.config
import torch._inductor.config

import dlpt
from dlpt.capture.compile import provenance
from dlpt.capture.compile.inductor_lines import LOADING
from dlpt.model.source_files import is_library_file
from tests.query import Q, line_of

HERE = os.path.abspath(__file__)


def dropout_model(x, w):
    h = torch.nn.functional.dropout(x @ w, p=0.5, training=True)  # @drop
    return torch.tanh(h).sum()  # @sum


def _profile(compiled, x, w):
    with dlpt.profile(gpu=False) as prof:
        for _ in range(3):
            compiled(x, w).backward()
    assert prof.session is not None
    return prof.session


def test_seeds_loading_code_and_kernels_all_land_somewhere_said():
    torch._dynamo.reset()
    # No on-disk cache (a graph cached by another checkout names its files); one compile thread
    # (Inductor's thread pool would outlive the test, a thread running at later profiles' stop).
    no_cache = {"fx_graph_cache": False, "compile_threads": 1}
    with torch._inductor.config.patch(no_cache), torch._functorch.config.patch(enable_autograd_cache=False):
        x, w = torch.randn(16, 16), torch.randn(16, 16, requires_grad=True)
        session = _profile(torch.compile(dropout_model), x, w)  # compiled inside the profile
    assert torch._inductor.config.trace.provenance_tracking_level == 0  # the program's again
    capture = session.meta["capture"]
    assert capture["inductor_unmapped_kernels"] == 0
    q = Q(session)
    # Every generated line that ran an op or a kernel maps to a model line. One left unmapped
    # may hold host samples only: the sampler can land on the wrapper's own bookkeeping (a
    # line with no model line) when the machine is loaded (seen twice in the full suite on 2
    # cores, never alone); the count says as many.
    unmapped = _unmapped_generated_frames(q.nodes)
    assert capture["inductor_unmapped_frames"] == len(unmapped)
    assert not [n for n in unmapped if _holds_work(q.nodes, n["id"])], unmapped
    model_lines = {line_of("drop", dropout_model), line_of("sum", dropout_model)}
    # The seeds of the graph's RNG (aten.randint.low_out, one per run) go where their reader goes.
    seeds = [n for n in q.nodes if n["kind"] == "op" and n["name"] == "aten::randint"]
    assert seeds
    for op in seeds:
        frame = next(
            a
            for a in q.ancestors(op["id"])
            if a["kind"] == "frame"
            and not is_library_file(a["file"])
            and not (a.get("x") or {}).get("generated")
        )
        assert (frame["file"], frame["line"] in model_lines) == (HERE, True), frame
    # The wrapper's module-level lines (kernel definitions, async_compile.wait) carry the scope.
    loading = [n for n in q.nodes if n["kind"] == "scope" and n["name"] == LOADING]
    assert loading and all(q.nodes[n["parent"]]["x"]["generated"] == "inductor" for n in loading)
    mapped = {n["line"] for n in q.nodes if (n.get("x") or {}).get("mapped_from") and n["file"] == HERE}
    assert mapped <= model_lines and mapped


def _children(nodes: list[dict]) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for n in nodes:
        out.setdefault(n["parent"], []).append(n)
    return out


def _unmapped_generated_frames(nodes: list[dict]) -> list[dict]:
    """Generated frames with no model frame or loading scope under them that call no generated
    code (dlpt.capture.compile.inductor_lines counts these)."""
    kids = _children(nodes)

    def generated(n: dict) -> bool:
        return n["kind"] == "frame" and (n.get("x") or {}).get("generated") == "inductor"

    def below(nid: int) -> list[dict]:
        out, stack = [], list(kids.get(nid, []))
        while stack:
            n = stack.pop()
            out.append(n)
            stack += kids.get(n["id"], [])
        return out

    return [
        n
        for n in nodes
        if generated(n)
        and not any(
            (c.get("x") or {}).get("mapped_from") or c["name"] == LOADING for c in kids.get(n["id"], [])
        )
        and not any(generated(d) for d in below(n["id"]))
    ]


def _holds_work(nodes: list[dict], nid: int) -> bool:
    """Whether an op or a kernel runs at or under node ``nid``."""
    kids = _children(nodes)
    stack = [nid]
    while stack:
        n = stack.pop()
        if nodes[n]["kind"] in ("op", "kernel"):
            return True
        stack += [c["id"] for c in kids.get(n, [])]
    return False


def test_provenance_is_recorded_fresh_and_from_the_fx_graph_cache(tmp_path, monkeypatch):
    # A cache of its own: a hit must come from this test's first compile.
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    x, w = torch.randn(8, 8), torch.randn(8, 8, requires_grad=True)
    wrappers = []
    for _ in range(2):  # the second compile is an FX-cache hit: no codegen, no provenance made
        torch._dynamo.reset()
        with (
            torch._functorch.config.patch(enable_autograd_cache=False),
            torch._inductor.config.patch(compile_threads=1),
        ):
            session = _profile(torch.compile(dropout_model), x, w)
        gen = {n["file"] for n in session.nodes if (n.get("x") or {}).get("generated")}
        wrappers.append(gen)
        assert gen and all(provenance.traces_for(f) for f in gen), gen
    assert wrappers[0] == wrappers[1]  # the same wrapper modules, loaded from the cache
