"""Lean op starts (csrc/options.h, OpMode::Lean; docs/overhead.md, issue 50): an outermost op's start
walks no Python stack; its first launch finds its path from the op's caller's frame (frozen while
the op runs), nested records and later launches reuse it, an op that made an autograd node finds
it at its end (its backward is grafted under its line), and an op that does neither costs no walk
and gets no node. Forced on the CPU with exact_ops=False; launches and kernel records through the
testing seams (no GPU needed). Each test compares with the exact mode, which walks at every start."""

from __future__ import annotations

import pytest
import torch

import dlpt
from dlpt.capture.native import core
from dlpt.errors import UsageError
from tests.query import Q, line_of

HERE = __file__
C = core()
T = C._testing


@torch.library.custom_op("dlpt_lean::inner_launch", mutates_args=())
def inner_launch(x: torch.Tensor, corr: int) -> torch.Tensor:
    T.launch(corr)  # a kernel launched inside the nested op
    return x + 1


def launching_impl(x: torch.Tensor, corr: int) -> torch.Tensor:
    # Python inside the op: frames above the op's caller, which the op's path must leave out.
    y = x * 2  # a nested aten op (not recorded): launches go to the outermost op
    y = inner_launch(y, corr)  # a nested custom op (not recorded) that launches
    T.launch(corr + 1)  # a second launch of the same outermost op
    return y


@torch.library.custom_op("dlpt_lean::outer_launch", mutates_args=())
def outer_launch(x: torch.Tensor, corr: int) -> torch.Tensor:
    return launching_impl(x, corr)


def decode_like(x: torch.Tensor, corr: int, steps: int) -> None:
    with torch.no_grad():
        for i in range(steps):
            y = x.view(2, 2)  # @view
            y = torch.add(y, 1.0)  # @add
            outer_launch(x, corr + 2 * i)  # @launch


def profiled(exact: bool, steps: int = 5, corr: int = 1_000):
    x = torch.ones(4)
    with dlpt.profile(gpu=False, exact_ops=exact, sample_hz=0) as prof:
        decode_like(x, corr, steps)
        for k in range(2 * steps):
            T.kernel_record(corr + k, 0, 10 + k, 0, "k")
    return prof.session


def kernel_paths(q: Q) -> list[tuple[str, ...]]:
    """Each kernel's ancestors as (kind, name, line), innermost first, and its GPU ns."""
    out = []
    for n in q.kernels(q.nodes):
        path = tuple(f"{a['kind']}:{a['name']}:{a.get('line', 0)}" for a in q.ancestors(n["id"]))
        out.append((path, n["m"]["gpu_ns"]))
    return sorted(out)


def test_a_launch_inside_an_op_lands_as_in_the_exact_mode():
    exact, lean = profiled(True), profiled(False)
    assert exact.meta["capture"]["op_mode"] == "exact" and lean.meta["capture"]["op_mode"] == "lean"
    assert kernel_paths(Q(lean)) == kernel_paths(Q(exact))
    q = Q(lean)
    launch = q.frames(HERE, line_of("launch", decode_like))
    assert launch
    kernels = q.kernels(q.under_line(HERE, line_of("launch", decode_like)))
    assert len(kernels) == 1 and kernels[0]["m"]["gpu_ns"] == sum(10 + k for k in range(10))
    chain = list(q.ancestors(kernels[0]["id"]))
    # kernel > <forward> > dlpt_lean::outer_launch > the caller's frames: none of the op's own
    # Python (launching_impl, inner_launch) between the op and its line.
    assert [a["name"] for a in chain[:2]] == ["<forward>", "dlpt_lean::outer_launch"]
    names = {a["name"] for a in chain}
    assert "launching_impl" not in names and "inner_launch" not in names


def test_ops_that_launch_nothing_take_no_walk_and_get_no_node():
    steps = 5
    exact, lean = profiled(True, steps), profiled(False, steps)
    e, c = exact.meta["capture"], lean.meta["capture"]
    assert e["outermost_ops"] == c["outermost_ops"] == 3 * steps
    # Exact: a walk per outermost op. Lean: one per op that launched (a walk for two launches and
    # a nested op's launch), none for the view and the add.
    assert e["python_walks"] == 3 * steps and e["deferred_ops"] == 0
    assert c["python_walks"] == steps
    assert c["deferred_ops"] == 3 * steps and c["deferred_at_launch"] == steps and c["deferred_at_end"] == 0
    q = Q(lean)
    for tag in ("view", "add"):
        assert not [n for n in q.under_line(HERE, line_of(tag, decode_like)) if n["kind"] == "op"], tag
    # The op that launched keeps its calls and CPU time, as in the exact mode.
    ops = [n for n in q.under_line(HERE, line_of("launch", decode_like)) if n["kind"] == "op"]
    assert [n["name"] for n in ops] == ["dlpt_lean::outer_launch"] and ops[0]["m"]["calls"] == steps
    assert q.total("cpu_ns", q.under_line(HERE, line_of("launch", decode_like))) > 0
    qe = Q(exact)
    for tag in ("view", "add"):
        assert [n["name"] for n in qe.under_line(HERE, line_of(tag, decode_like)) if n["kind"] == "op"]


def view_train(x: torch.Tensor) -> torch.Tensor:
    y = x[:, :2]  # @slice
    z = y * 2  # @mul
    return z.sum()  # @sum


@pytest.mark.parametrize("exact", [True, False])
def test_a_view_that_launches_nothing_keeps_its_backward_under_its_line(exact):
    # The slice launches nothing, but its autograd node does run (SliceBackward0): its end finds
    # its line, so the backward is grafted there and not on the op before it or the
    # backward() call.
    x = torch.ones(4, 4, requires_grad=True)
    with dlpt.profile(gpu=False, exact_ops=exact, sample_hz=0) as prof:
        for _ in range(3):
            view_train(x).backward()
    q = Q(prof.session)
    for tag, node in (("slice", "SliceBackward0"), ("mul", "MulBackward0"), ("sum", "SumBackward0")):
        under = q.under_line(HERE, line_of(tag, view_train))
        backward = [n for n in under if n["name"] == node]
        assert backward and backward[0]["m"]["calls"] == 3, (tag, [n["name"] for n in under])
        assert q.phase_of(backward[0]["id"]) == "<backward>"
    c = prof.session.meta["capture"]
    assert c["backward_unresolved"] == 0
    if not exact:
        assert c["deferred_at_end"] == 3 * 3 and c["deferred_at_launch"] == 0


class Twice(torch.autograd.Function):
    """Forward: an op that launches nothing. Backward: a kernel (e.g. a view's backward)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        return x.view(-1)

    @staticmethod
    def backward(ctx, g: torch.Tensor) -> torch.Tensor:
        T.launch(Twice.corr)  # inside the backward node
        Twice.corr += 1
        return g.view(4, 4)


def function_train(x: torch.Tensor) -> None:
    y = x.sin()  # @sin
    z = Twice.apply(y)  # @twice
    (z * 3).sum().backward()  # @backward


@pytest.mark.parametrize("exact", [True, False])
def test_a_backward_kernel_lands_under_a_forward_that_launched_nothing(exact):
    x = torch.ones(4, 4, requires_grad=True)
    Twice.corr = corr = 50_000 + (0 if exact else 100)
    with dlpt.profile(gpu=False, exact_ops=exact, sample_hz=0) as prof:
        for k in range(3):
            function_train(x)
            T.kernel_record(corr + k, 0, 100, 0, "bwd_kernel")
    q = Q(prof.session)
    kernels = q.kernels(q.nodes)
    assert kernels and sum(k["m"]["gpu_ns"] for k in kernels) == 300
    # The backward node's forward is the view inside Twice.forward: its line, not backward()'s.
    for k in kernels:
        assert q.phase_of(k["id"]) == "<backward>"
        lines = [a.get("line") for a in q.ancestors(k["id"]) if a["kind"] == "frame"]
        assert line_of("backward", function_train) not in lines
        assert line_of("twice", function_train) in lines


def test_the_mode_follows_the_option_then_the_environment(monkeypatch):
    def mode(**kw) -> str:
        with dlpt.profile(gpu=False, sample_hz=0, **kw) as prof:
            torch.add(torch.ones(2), 1)
        return prof.session.meta["capture"]["op_mode"]

    monkeypatch.delenv("DLPT_OPS", raising=False)
    assert mode() == "exact"  # auto: exact without GPU capture
    assert mode(exact_ops=False) == "lean" and mode(exact_ops=True) == "exact"
    monkeypatch.setenv("DLPT_OPS", "lean")
    assert mode() == "lean" and mode(exact_ops=True) == "exact"  # the option wins
    monkeypatch.setenv("DLPT_OPS", "exact")
    assert mode(exact_ops=False) == "lean"
    monkeypatch.setenv("DLPT_OPS", "sometimes")
    with pytest.raises(UsageError, match="DLPT_OPS"):
        dlpt.profile(gpu=False)


def test_the_native_core_says_which_mode_ran():
    assert C.start(False, [], True)["op_mode"] == "exact"  # auto, no GPU
    assert C.stop()["op_mode"] == "exact"
    assert C.start(False, [], True, op_mode="lean")["op_mode"] == "lean"
    assert C.stop()["op_mode"] == "lean"
    with pytest.raises(ValueError, match="op_mode"):
        C.start(False, [], True, op_mode="fast")
    assert not C.running()


def generated(x: torch.Tensor, corr: int):
    for i in range(3):
        yield outer_launch(x, corr + 2 * i)  # @yield


def test_a_launch_inside_an_op_a_generator_runs_lands_on_the_generators_line():
    # The op's caller is a generator's frame, alive while the op runs (a generator cannot yield in
    # the middle of an op): its chain is as frozen as a function's.
    x = torch.ones(4)
    sessions = {}
    for exact in (True, False):
        with dlpt.profile(gpu=False, exact_ops=exact, sample_hz=0) as prof:
            with torch.no_grad():
                list(generated(x, 7_000))
            for k in range(6):
                T.kernel_record(7_000 + k, 0, 5, 0, "k")
        sessions[exact] = prof.session
    q = Q(sessions[False])
    kernels = q.kernels(q.under_line(HERE, line_of("yield", generated)))
    assert sum(k["m"]["kernels"] for k in kernels) == 6
    assert kernel_paths(q) == kernel_paths(Q(sessions[True]))
