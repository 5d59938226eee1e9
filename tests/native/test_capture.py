"""The native core on the CPU: aten ops on their exact lines, backward under the forward line,
threads kept apart, scopes, steps. Real capture through dlpt._C, no GPU needed."""

from __future__ import annotations

import os
import sys
import threading

import pytest
import torch

import dlpt
from dlpt.errors import ProfilerBusyError, UsageError
from dlpt.model.session import Session
from tests.query import Q, line_of

HERE = __file__


def ops_under(q: Q, fn, tag: str) -> dict[str, dict]:
    """Op nodes in the subtree of the line tagged `tag` in `fn`, by name (first of each)."""
    out: dict[str, dict] = {}
    for n in q.under_line(HERE, line_of(tag, fn)):
        if n["kind"] == "op":
            out.setdefault(n["name"], n)
    return out


def mlp(x, w1, w2, steps):
    for _ in range(steps):
        h = x @ w1  # @matmul
        h = torch.relu(h)  # @relu
        loss = (h @ w2).square().mean()  # @loss
        loss.backward()  # @backward


@pytest.fixture
def weights():
    torch.manual_seed(0)
    return (
        torch.randn(32, 64),
        torch.randn(64, 128, requires_grad=True),
        torch.randn(128, 8, requires_grad=True),
    )


def test_ops_land_on_their_exact_lines(weights):
    with dlpt.profile() as prof:
        mlp(*weights, 3)
    q = Q(prof.session)
    matmul = ops_under(q, mlp, "matmul")
    # Nested ops (aten::mm inside aten::matmul) are not recorded by default.
    assert "aten::matmul" in matmul and "aten::mm" not in matmul
    assert matmul["aten::matmul"]["m"]["calls"] == 3
    assert "aten::relu" in ops_under(q, mlp, "relu")
    assert "aten::relu" not in matmul and "aten::mm" not in ops_under(q, mlp, "relu")
    assert q.total("cpu_ns", q.under_line(HERE, line_of("matmul", mlp))) > 0


def test_backward_ops_are_grafted_under_the_forward_line(weights):
    with dlpt.profile() as prof:
        mlp(*weights, 2)
    q = Q(prof.session)
    matmul = ops_under(q, mlp, "matmul")
    assert "MmBackward0" in matmul
    assert q.phase_of(matmul["MmBackward0"]["id"]) == "<backward>"
    assert "ReluBackward0" in ops_under(q, mlp, "relu")
    # ... and not on the loss.backward() line
    assert not any(name.endswith("Backward0") for name in ops_under(q, mlp, "backward"))


def setup_then_train(w_shape):
    w = torch.randn(*w_shape) * 0.5  # @nograd_setup
    w.requires_grad_(True)
    x = torch.randn(4, w_shape[0])
    y = x @ w  # @first_grad_op
    y.sum().backward()


def test_ops_without_grad_before_forward_do_not_capture_its_backward():
    # Ops that create no autograd node share the next sequence number; the op that really
    # created the node (the matmul) must win.
    with dlpt.profile() as prof:
        setup_then_train((16, 16))
    q = Q(prof.session)
    assert "MmBackward0" in ops_under(q, setup_then_train, "first_grad_op")
    assert "MmBackward0" not in ops_under(q, setup_then_train, "nograd_setup")


def sin_loop(a, n):
    for _ in range(n):
        torch.sin(a)  # @sin


def cos_loop(a, n):
    for _ in range(n):
        torch.cos(a)  # @cos


def test_two_threads_do_not_mix():
    a = torch.randn(64, 64)
    with dlpt.profile() as prof:
        t = threading.Thread(target=sin_loop, args=(a, 50))
        t.start()
        cos_loop(a, 50)
        t.join()
    q = Q(prof.session)
    sin_ops, cos_ops = ops_under(q, sin_loop, "sin"), ops_under(q, cos_loop, "cos")
    assert sin_ops["aten::sin"]["m"]["calls"] == 50 and "aten::cos" not in sin_ops
    assert cos_ops["aten::cos"]["m"]["calls"] == 50 and "aten::sin" not in cos_ops


@dlpt.scope("decorated")
def decorated(a):
    return torch.tanh(a)  # @tanh


def scoped(a):
    with dlpt.scope("block"):
        b = torch.exp(a)  # @exp
    return torch.log(b.abs() + 1)  # @log


def recorded(a):
    with torch.profiler.record_function("torch_region"):
        return torch.sigmoid(a)  # @sigmoid


def test_scopes_add_named_nodes_above_their_lines():
    a = torch.randn(16)
    # The op path's scopes: no host sampler (a sample can land outside its scope, CHANGELOG
    # "Known problems").
    with dlpt.profile(sample_hz=0) as prof:
        scoped(a)
        decorated(a)
        recorded(a)
    q = Q(prof.session)

    def scopes_above(fn, tag):
        frames = q.frames(HERE, line_of(tag, fn))
        assert frames
        return {tuple(n["name"] for n in q.ancestors(f) if n["kind"] == "scope") for f in frames}

    assert scopes_above(scoped, "exp") == {("block",)}
    assert scopes_above(scoped, "log") == {()}
    assert scopes_above(decorated, "tanh") == {("decorated",)}
    assert scopes_above(recorded, "sigmoid") == {("torch_region",)}


def train_steps(n, prof=None):
    model = torch.nn.Linear(8, 8)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(n):
        opt.zero_grad()
        model(torch.randn(4, 8)).sum().backward()
        opt.step()
        if prof is not None:
            prof.step()


def test_optimizer_steps_are_detected_and_windowed():
    with dlpt.profile(skip_first=2, active=3) as prof:
        train_steps(8)
    steps = prof.session.meta["steps"]
    picked = {k: steps[k] for k in ("profiled", "seen", "skip_first", "active", "source", "untraced")}
    # 2 warm-up, 3 counted, then tracing stops for good: the last 3 steps are untraced measurements
    assert picked == {
        "profiled": 3,
        "seen": 8,
        "skip_first": 2,
        "active": 3,
        "source": "optimizer",
        "untraced": 3,
    }
    assert steps["warmup"]["steps"] == 2 and steps["warmup"]["reason"] == "--skip-first 2"
    assert len(prof.session.meta["step_wall_ns"]) == 3
    linear_calls = sum(n["m"].get("calls", 0) for n in prof.session.nodes if n["name"] == "aten::linear")
    assert linear_calls == 3


def test_manual_steps_take_over_from_optimizer_detection():
    with dlpt.profile(skip_first=0) as prof:
        train_steps(4, prof=prof)
    steps = prof.session.meta["steps"]
    assert steps["source"] == "manual" and steps["profiled"] == 4


def test_second_profile_while_one_runs_is_refused():
    with dlpt.profile(), pytest.raises(ProfilerBusyError, match="already running"):
        dlpt.profile().start()
    with dlpt.profile() as prof:  # and the first one's stop freed the slot
        torch.ones(2) + 1
    assert prof.session.nodes


def test_bad_arguments_are_usage_errors():
    with pytest.raises(UsageError):
        dlpt.profile(skip_first=-1)
    with pytest.raises(UsageError):
        dlpt.profile(active=0)
    with pytest.raises(UsageError):
        dlpt.profile().stop()


def deep(n, a):
    if n == 0:
        return torch.sinh(a)  # @deep
    return deep(n - 1, a)


def test_deep_python_stacks_are_captured_without_crashing():
    a = torch.randn(4)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(5000)
    try:
        with dlpt.profile() as prof:
            deep(1500, a)
    finally:
        sys.setrecursionlimit(old)
    q = Q(prof.session)
    assert "aten::sinh" in ops_under(q, deep, "deep")


def test_session_round_trip(tmp_path, weights):
    with dlpt.profile() as prof:
        mlp(*weights, 1)
    path = tmp_path / "p.json"
    prof.save(path)
    loaded = Session.load(path)
    assert loaded.nodes == prof.session.nodes
    assert loaded.meta["argv"] == sys.argv


def test_without_gpu_the_profile_says_why():
    with dlpt.profile() as prof:
        torch.ones(3) * 2
    gpu = prof.session.meta["gpu"]
    if not torch.cuda.is_available():
        assert gpu == {"enabled": False, "reason": "no CUDA GPU available", "cupti": None}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_runs_ops_safely_while_parent_profiles():
    a = torch.randn(32)
    with dlpt.profile() as prof:
        pid = os.fork()
        if pid == 0:  # child: capture is off there; it must not hang or crash
            torch.cos(a)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        torch.tan(a)  # @parent
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert any(n["name"] == "aten::tan" for n in prof.session.nodes)
