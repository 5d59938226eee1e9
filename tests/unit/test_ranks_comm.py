"""Communication as a cost of its own: NCCL kernel names, operation families, NCCL's bus
bandwidth, the marks the session assembly adds, the collectives table, the header's split of
compute and communication and a rank's report (golden)."""

from __future__ import annotations

from typing import Any

import pytest

from dlpt.analysis.communication import collective_rows, comm_facts
from dlpt.capture.ranks.annotate import annotate_comm
from dlpt.model.comm_names import (
    bus_bandwidth,
    bus_factor,
    family,
    is_collective_op,
    is_comm_kernel,
    parse_nccl_kernel,
)
from dlpt.model.units import Units
from dlpt.renderers.terminal.report import render
from tests import rank_sessions as R


@pytest.mark.parametrize(
    ("name", "op", "red", "dtype", "algo", "proto"),
    [
        (
            "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            "AllReduce",
            "Sum",
            "bf16",
            "RING",
            "LL",
        ),
        (
            "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
            "AllReduce",
            "Sum",
            "float",
            "RING",
            "LL",
        ),
        ("ncclDevKernel_ReduceScatter_Sum_f32_RING_SIMPLE", "ReduceScatter", "Sum", "f32", "RING", "SIMPLE"),
        (
            "ncclDevKernel_AllReduce_Sum_f32_NVLS_TREE_SIMPLE",
            "AllReduce",
            "Sum",
            "f32",
            "NVLS_TREE",
            "SIMPLE",
        ),
        ("ncclDevKernel_AllGather_RING_LL128", "AllGather", "", "", "RING", "LL128"),
        ("ncclDevKernel_SendRecv", "SendRecv", "", "", "", ""),
        ("ncclDevKernel_Generic_4", "", "", "", "", ""),
    ],
)
def test_nccl_kernel_names(name: str, op: str, red: str, dtype: str, algo: str, proto: str) -> None:
    k = parse_nccl_kernel(name)
    assert k is not None and is_comm_kernel(name)
    assert (k.op, k.reduction, k.dtype, k.algorithm, k.protocol) == (op, red, dtype, algo, proto)


def test_other_kernels_are_not_communication() -> None:
    for name in ("sm90_xmma_gemm_bf16", "vectorized_elementwise_kernel<4, nccl_like>", "triton_poi_fused_0"):
        assert not is_comm_kernel(name) and parse_nccl_kernel(name) is None


@pytest.mark.parametrize(
    ("names", "fam"),
    [
        (
            (
                "c10d::allreduce_",
                "all_reduce",
                "AllReduce",
                "allreduce_coalesced",
                "_c10d_functional::all_reduce_",
            ),
            "allreduce",
        ),
        (
            (
                "c10d::_allgather_base_",
                "all_gather_into_tensor",
                "all_gather_single",
                "AllGather",
                "allgather_into_tensor_coalesced",
            ),
            "allgather",
        ),
        (
            (
                "c10d::_reduce_scatter_base_",
                "reduce_scatter_tensor",
                "ReduceScatter",
                "reduce_scatter_tensor_coalesced",
            ),
            "reduce_scatter",
        ),
        (("c10d::alltoall_base_", "all_to_all_single", "all_to_allv"), "alltoall"),
        (("c10d::barrier", "monitored_barrier"), "barrier"),
        (("_c10d_functional::wait_tensor",), "wait"),
        (("isend", "c10d::send"), "send"),
    ],
)
def test_every_name_of_an_operation_is_one_family(names: tuple[str, ...], fam: str) -> None:
    assert {family(n) for n in names} == {fam}


def test_collective_ops() -> None:
    assert is_collective_op("c10d::allreduce_") and is_collective_op(
        "_c10d_functional::all_gather_into_tensor"
    )
    assert is_collective_op("torch.distributed.all_reduce")
    assert not is_collective_op("_c10d_functional::_wrap_tensor_autograd")
    assert not is_collective_op("aten::mm")


def test_bus_bandwidth_follows_nccl_tests() -> None:
    # nccl-tests, PERFORMANCE.md: allreduce busbw = algbw * 2(n-1)/n; allgather/reducescatter (n-1)/n.
    assert bus_factor("allreduce", 8) == pytest.approx(1.75)
    assert bus_factor("allgather", 8) == pytest.approx(0.875)
    assert bus_factor("reduce_scatter", 4) == pytest.approx(0.75)
    assert bus_factor("broadcast", 8) == 1.0
    assert bus_factor("barrier", 8) is None and bus_factor("allreduce", 1) is None
    alg, bus = bus_bandwidth("allreduce", 1_000_000_000, 10_000_000, 8) or (0, 0)
    assert alg == pytest.approx(100.0) and bus == pytest.approx(175.0)  # GB/s
    assert bus_bandwidth("allreduce", 0, 10, 8) is None


def _node(i: int, parent: int, kind: str, name: str, x: Any = None, **m: int) -> dict[str, Any]:
    n: dict[str, Any] = {"id": i, "parent": parent, "kind": kind, "name": name, "file": "", "line": 0, "m": m}
    if x:
        n["x"] = x
    return n


def test_annotation_marks_kernels_calls_and_waits() -> None:
    nodes = [
        _node(0, -1, "root", "<root>"),
        _node(1, 0, "frame", "main"),
        _node(2, 1, "op", "c10d::_dlpt_call_1", calls=3),
        _node(3, 2, "phase", "<forward>", cpu_ns=900),
        _node(4, 2, "op", "c10d::allreduce_", calls=3, cpu_ns=60),
        _node(5, 1, "op", "c10d::_dlpt_wait_1", calls=3),
        _node(6, 5, "phase", "<forward>", cpu_ns=500),
        _node(7, 1, "op", "c10d::allreduce_", calls=2),
        _node(
            8,
            7,
            "kernel",
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
            {"full_name": R.ALLREDUCE},
            gpu_ns=70,
            kernels=2,
        ),
        _node(9, 1, "op", "_c10d_functional::wait_tensor", calls=1, cpu_ns=40),
        _node(10, 1, "kernel", "sm90_gemm", gpu_ns=5, kernels=1),
        _node(11, 1, "op", "c10d::_dlpt_call_9", calls=1),  # a number beyond the table: no description
    ]
    sig = {
        "function": "all_reduce",
        "dtype": "Float",
        "in_bytes": 4000,
        "out_bytes": 4000,
        "pg_desc": "default_pg",
        "world_size": 2,
        "backend": "gloo",
    }
    out = annotate_comm(nodes, [{"function": "unknown"}, sig])
    call, wait, kern = out[2], out[5], out[8]
    assert call["name"] == "torch.distributed.all_reduce"
    assert call["x"]["collective"] == "allreduce" and call["x"]["backend"] == "gloo"
    assert call["m"]["comm_calls"] == 3 and call["m"]["comm_in_bytes"] == 12_000
    assert call["m"]["comm_wait_ns"] == 900  # its time outside the c10d op beneath
    assert wait["name"] == "torch.distributed.Work.wait" and "comm_calls" not in wait["m"]
    assert wait["m"]["comm_wait_ns"] == 500
    assert kern["m"]["comm_ns"] == 70 and kern["m"]["gpu_ns"] == 70  # GPU time stays GPU time
    assert (kern["x"]["collective"], kern["x"]["algorithm"], kern["x"]["protocol"]) == (
        "allreduce",
        "RING",
        "LL",
    )
    assert out[9]["m"]["comm_wait_ns"] == 40
    assert "comm_ns" not in out[10]["m"]
    assert out[11]["name"] == "torch.distributed.collective" and "comm_calls" not in out[11]["m"]


def test_wrapped_call_keeps_the_native_bytes() -> None:
    nodes = [
        _node(0, -1, "root", "<root>"),
        _node(1, 0, "op", "c10d::_dlpt_call_1", calls=1),
        _node(2, 1, "op", "c10d::allreduce_", calls=1, comm_calls=1, comm_in_bytes=8),
    ]
    annotate_comm(nodes, [{}, {"function": "all_reduce", "in_bytes": 8, "out_bytes": 8}])
    assert "comm_in_bytes" not in nodes[1]["m"]  # counted once, where the backend said it


def test_collectives_table_rows() -> None:
    rows = {r.family: r for r in collective_rows(R.ddp_gpu(0, world=4, comm_ns=2_000_000).nodes)}
    ar = rows["allreduce"]
    assert ar.calls == R.STEPS and ar.size == 25 * 2**20 * R.STEPS
    assert ar.gpu_ns == 2_000_000 * R.STEPS and ar.algorithms == {"RING LL"} and ar.group == "default_pg"
    bw = ar.bandwidth()
    assert bw is not None and bw[1] == pytest.approx(25 * 2**20 / 2_000_000 * 1.5)
    cpu = {r.family: r for r in collective_rows(R.gloo_cpu(0, wait_ns=1_000_000).nodes)}
    rows_cpu = collective_rows(R.gloo_cpu(0).nodes)
    known = [r for r in rows_cpu if r.bytes_known]
    unknown = [r for r in rows_cpu if not r.bytes_known]
    assert len(known) == 1 and known[0].wait_ns == 1_000_000 * R.STEPS and known[0].in_bytes == 4000 * R.STEPS
    assert len(unknown) == 1 and unknown[0].group == ""  # DDP's reducer: issued from C++
    assert "allreduce" in cpu


def test_header_splits_compute_and_communication() -> None:
    units = Units(steps=4)
    totals = {"gpu_ns": 40_000_000, "comm_ns": 10_000_000}
    meta = {"gpu_comm_ns": {"0": 10_000_000}, "gpu_comm_exposed_ns": {"0": 8_000_000}}
    facts = comm_facts(meta, totals, units)
    text = "\n".join(t for t, _ in facts)
    assert "GPU time: compute 7.50ms, communication 2.50ms (25%) per step" in text
    assert "communication on GPU 0: 2.50ms per step, exposed 2.00ms (80%" in text
    assert [bad for _, bad in facts] == [False, True]  # most of it exposed: bad news
    assert comm_facts({}, {"gpu_ns": 5, "cpu_ns": 9}, units) == []
    cpu = "\n".join(t for t, _ in comm_facts({}, {"cpu_ns": 4_000_000, "comm_wait_ns": 1_000_000}, units))
    assert "waiting for collectives (host): 250.0µs per step, 25% of the CPU op time" in cpu


def test_rank_report_golden(h: Any) -> None:
    text = h.render_text(render(R.ddp_gpu(1), threshold=0.0), width=120)
    h.check_golden("ranks_rank_report", text)
    assert "[rank 1/4 (local 1) on node0, GPU 1, nccl]" in text
    assert "c10d::allreduce_  allreduce BFloat16 25.0 MiB/call group def" in text


def test_cpu_rank_report_golden(h: Any) -> None:
    text = h.render_text(render(R.gloo_cpu(0), threshold=0.0), width=120)
    h.check_golden("ranks_cpu_report", text)
    assert "bytes unknown" in text and "wait" in text


def test_html_header_names_the_rank_and_communication() -> None:
    from dlpt.renderers.html.data import build_model

    facts = dict(reversed(build_model(R.ddp_gpu(1))["header"]["facts"]))
    assert facts["rank"] == "rank 1/4 (local 1) on node0, GPU 1, nccl"
    assert facts["communication"].startswith("GPU time: compute 27.00ms, communication 2.00ms")
