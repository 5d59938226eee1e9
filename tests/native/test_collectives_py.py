"""Python-level collectives on a gloo process group, profiled for real (one process, world size 1):
each call becomes an op named after its function, with its bytes and its wait; an asynchronous
collective's ``wait()`` too; torch's functions are back after the profile; the program's errors
and results pass through unchanged; the session says its rank and backend."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

import dlpt

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not available")


@pytest.fixture
def gloo(tmp_path: Path) -> Iterator[None]:
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def _ops(session: dlpt.Session, name: str) -> list[dict]:
    return [n for n in session.nodes if n["kind"] == "op" and n["name"] == name]


def _under(s: dlpt.Session, node: dict, top: dict) -> bool:
    i = node["parent"]
    while i >= 0:
        if i == top["id"]:
            return True
        i = s.nodes[i]["parent"]
    return False


def test_collectives_become_ops_with_bytes_and_waits(gloo: None) -> None:
    originals = (dist.all_reduce, dist.distributed_c10d.all_reduce, dist.distributed_c10d.Work.wait)
    t = torch.ones(1000)
    with dlpt.profile() as prof:
        for _ in range(3):
            dist.all_reduce(t)  # 4000 bytes of float32
            work = dist.all_gather_into_tensor(torch.empty(500), torch.ones(500), async_op=True)
            work.wait()
            dist.barrier()
        got = dist.all_reduce(torch.ones(2), async_op=True)
    assert (dist.all_reduce, dist.distributed_c10d.all_reduce, dist.distributed_c10d.Work.wait) == originals
    assert got is not None and got.wait()  # an asynchronous call still returns torch's work
    s = prof.session
    [ar] = [n for n in _ops(s, "torch.distributed.all_reduce") if n["m"]["calls"] == 3]
    assert ar["x"]["collective"] == "allreduce" and ar["x"]["dtype"] == "Float"
    assert ar["x"]["backend"] == "gloo" and ar["x"]["world_size"] == 1
    assert ar["m"]["comm_calls"] == 3 and ar["m"]["comm_in_bytes"] == 3 * 4000
    assert ar["m"].get("comm_wait_ns", 0) > 0
    # The c10d op torch dispatches is beneath its call.
    assert any(n["name"] == "c10d::allreduce_" and _under(s, n, ar) for n in s.nodes)
    [ag] = _ops(s, "torch.distributed.all_gather_into_tensor")
    assert ag["m"]["comm_in_bytes"] == 3 * 2000 and ag["m"]["comm_out_bytes"] == 3 * 2000
    [wait] = _ops(s, "torch.distributed.Work.wait")
    assert wait["x"]["collective"] == "allgather" and wait["m"]["calls"] == 3
    assert _ops(s, "torch.distributed.barrier")
    assert s.meta["distributed"]["rank"] == 0 and "gloo" in s.meta["distributed"]["backends"]
    assert not any(n["name"].startswith("c10d::_dlpt_") for n in s.nodes)  # all renamed


def test_errors_pass_through_unchanged(gloo: None) -> None:
    with pytest.raises(Exception) as plain:
        dist.all_reduce("not a tensor")  # type: ignore[arg-type]  # the error under test
    with dlpt.profile(), pytest.raises(type(plain.value)) as wrapped:
        dist.all_reduce("not a tensor")  # type: ignore[arg-type]
    assert str(wrapped.value) == str(plain.value)


def test_a_compiled_function_calls_torch_directly(gloo: None) -> None:
    # Dynamo traces torch.distributed's own functions; the wrapper steps aside while compiling.
    @torch.compile(backend="eager", fullgraph=False)
    def f(x: torch.Tensor) -> torch.Tensor:
        y = x * 2
        dist.all_reduce(y)
        return y

    with dlpt.profile():
        out = f(torch.ones(4))
    assert torch.equal(out, torch.full((4,), 2.0))


def test_a_wait_inside_a_scope_inside_backward_counts_once() -> None:
    from dlpt.capture.ranks.pycomm import timed

    sleep_s = 0.05  # 10x more than the other work of a step here

    def hook(grad: torch.Tensor) -> torch.Tensor:
        with torch.profiler.record_function("FSDP::pre_backward"):
            timed("call", 0, time.sleep, (sleep_s,), {})
        return grad

    x = torch.ones(16, requires_grad=True)
    with dlpt.profile() as prof:
        for _ in range(3):
            h = x * 2
            h.register_hook(hook)
            h.sum().backward()
    cpu = sum(n["m"].get("cpu_ns", 0) for n in prof.session.nodes)
    assert cpu < 1.5 * 3 * sleep_s * 1e9, cpu


def test_the_backend_is_named_when_the_group_is_destroyed_before_the_profile_stops(tmp_path: Path) -> None:
    # As a torchrun script run under `python -m dlpt` ends: no Python-level collective (DDP's run
    # in C++), and the group is gone by the time the profile stops.
    with dlpt.profile() as prof:
        dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
        torch.ones(4).sum()
        dist.destroy_process_group()
    assert not dist.is_initialized()
    assert prof.session.meta["distributed"]["backends"] == ["gloo"]


class _ReduceGradients(torch.autograd.Function):
    """As FSDP2's post-backward: a Python autograd.Function whose backward does plenty of aten
    work (enough nested records for a RecordFunction window) and then a collective."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        for _ in range(12):
            grad = grad * 1.0
        dist.all_reduce(grad)
        return grad


def test_a_collective_in_a_python_autograd_function_is_seen_on_every_call(gloo: None) -> None:
    x = torch.ones(8, requires_grad=True)
    calls = 8  # more than the calls a name is watched for before it may get a window
    with dlpt.profile() as prof:
        for _ in range(calls):
            _ReduceGradients.apply(x).sum().backward()
    reduces = _ops(prof.session, "torch.distributed.all_reduce")
    assert sum(n["m"]["calls"] for n in reduces) == calls
    assert sum(n["m"]["comm_in_bytes"] for n in reduces) == calls * 8 * 4
