"""GPU time lands on the lines that caused it: forward and backward kernels, copies, syncs, streams,
threads, DataLoader workers, several GPUs. Each test fails if attribution breaks."""

from __future__ import annotations

import threading

import pytest
import torch

import dlpt
from tests.query import Q, line_of

pytestmark = pytest.mark.gpu
HERE = __file__
STEPS = 5


def gemm_model(x, w, steps):
    for _ in range(steps):
        y = x @ w  # @gemm
        z = torch.nn.functional.gelu(y)  # @gelu
        loss = z.float().square().mean()
        loss.backward()  # @backward


def test_gemm_line_holds_forward_and_both_backward_gemms():
    x = torch.randn(2048, 2048, device="cuda", requires_grad=True)
    w = torch.randn(2048, 2048, device="cuda", requires_grad=True)
    gemm_model(x, w, 2)  # warm-up: cuBLAS handles, autotuning
    with dlpt.profile() as prof:
        gemm_model(x, w, STEPS)
    q = Q(prof.session)
    assert prof.session.meta["gpu"]["enabled"], prof.session.meta["gpu"]
    under = q.under_line(HERE, line_of("gemm", gemm_model))
    fwd, bwd = q.kernels(under, "<forward>"), q.kernels(under, "<backward>")
    assert sum(k["m"]["kernels"] for k in fwd) >= STEPS
    # dX = dY @ W^T and dW = X^T @ dY: two GEMMs per step, each as long as the forward one.
    assert sum(k["m"]["kernels"] for k in bwd) >= 2 * STEPS
    fwd_ns, bwd_ns = q.total("gpu_ns", fwd), q.total("gpu_ns", bwd)
    assert 1.5 * fwd_ns < bwd_ns < 3 * fwd_ns, (fwd_ns, bwd_ns)
    # The backward GEMMs are not left on the loss.backward() line.
    back_line = q.under_line(HERE, line_of("backward", gemm_model))
    assert q.total("gpu_ns", q.kernels(back_line)) < 0.2 * bwd_ns


def test_elementwise_line_holds_its_forward_and_backward_kernels():
    x = torch.randn(1024, 1024, device="cuda", requires_grad=True)
    w = torch.randn(1024, 1024, device="cuda", requires_grad=True)
    gemm_model(x, w, 1)
    with dlpt.profile() as prof:
        gemm_model(x, w, STEPS)
    q = Q(prof.session)
    under = q.under_line(HERE, line_of("gelu", gemm_model))
    fwd, bwd = q.kernels(under, "<forward>"), q.kernels(under, "<backward>")
    assert sum(k["m"]["kernels"] for k in fwd) == STEPS
    assert sum(k["m"]["kernels"] for k in bwd) == STEPS
    assert all("gemm" not in k["name"].lower() for k in fwd + bwd)


def copy_and_sync(n_bytes, reps):
    host = torch.empty(n_bytes, dtype=torch.uint8)
    total = 0.0
    for _ in range(reps):
        dev = host.to("cuda")  # @h2d
        total += dev.float().sum().item()  # @item
    return total


def test_pageable_copy_bytes_and_item_sync_on_their_lines():
    n = 3 * 1024 * 1024 + 17
    copy_and_sync(n, 1)
    with dlpt.profile() as prof:
        copy_and_sync(n, 4)
    q = Q(prof.session)
    copies = [c for c in q.under_line(HERE, line_of("h2d", copy_and_sync)) if c["kind"] == "memcpy"]
    assert copies, "no copy on the .to('cuda') line"
    assert {c["x"]["direction"] for c in copies} == {"HtoD"}
    assert {c["x"].get("host_mem") for c in copies} == {"pageable"}
    assert q.total("copy_bytes", copies) == 4 * n
    item = q.under_line(HERE, line_of("item", copy_and_sync))
    syncs = [s for s in item if s["kind"] == "sync"]
    assert syncs and q.total("sync_ns", syncs) > 0
    assert q.total("syncs", syncs) >= 4
    dtoh = [c for c in item if c["kind"] == "memcpy"]
    assert {c["x"]["direction"] for c in dtoh} == {"DtoH"}


def test_conservation_attributed_equals_delivered():
    x = torch.randn(512, 512, device="cuda", requires_grad=True)
    w = torch.randn(512, 512, device="cuda", requires_grad=True)
    with dlpt.profile() as prof:
        gemm_model(x, w, STEPS)
        copy_and_sync(1 << 20, 2)
    q = Q(prof.session)
    cap = prof.session.meta["capture"]
    assert cap["delivered_gpu_ns"] > 0
    assert q.gpu_total() == cap["delivered_gpu_ns"]
    assert prof.session.meta["unattributed"]["records"] == 0
    assert prof.session.meta["dropped"]["activity_records"] == 0
    assert cap["completed"] >= cap["submitted"] > 0


def two_streams(a, side, reps):
    for _ in range(reps):
        with torch.cuda.stream(side):
            b = a @ a  # @side
        c = torch.sin(a)  # @main
    torch.cuda.synchronize()
    return b, c


def test_kernels_on_a_side_stream_land_on_their_line():
    a = torch.randn(1024, 1024, device="cuda")
    side = torch.cuda.Stream()
    two_streams(a, side, 1)
    with dlpt.profile() as prof:
        two_streams(a, side, STEPS)
    q = Q(prof.session)
    side_k = q.kernels(q.under_line(HERE, line_of("side", two_streams)))
    main_k = q.kernels(q.under_line(HERE, line_of("main", two_streams)))
    assert sum(k["m"]["kernels"] for k in side_k) >= STEPS
    assert sum(k["m"]["kernels"] for k in main_k) == STEPS
    assert all("sin" in k["name"].lower() for k in main_k)


def thread_worker(a, reps):
    for _ in range(reps):
        b = a @ a  # @thread_gemm
    return b


def main_thread_work(a, reps):
    for _ in range(reps):
        c = torch.cos(a)  # @main_cos
    return c


def test_second_python_thread_kernels_do_not_mix():
    a = torch.randn(1024, 1024, device="cuda")
    thread_worker(a, 1)
    main_thread_work(a, 1)
    with dlpt.profile() as prof:
        t = threading.Thread(target=thread_worker, args=(a, 20))
        t.start()
        main_thread_work(a, 20)
        t.join()
    q = Q(prof.session)
    tk = q.kernels(q.under_line(HERE, line_of("thread_gemm", thread_worker)))
    mk = q.kernels(q.under_line(HERE, line_of("main_cos", main_thread_work)))
    assert sum(k["m"]["kernels"] for k in tk) >= 20
    assert sum(k["m"]["kernels"] for k in mk) == 20
    assert all("cos" in k["name"].lower() for k in mk)
    assert not any("cos" in k["name"].lower() for k in tk)


def loader_loop(loader, w):
    out = 0.0
    for (xb,) in loader:
        xb = xb.cuda()  # @dl_copy
        out = out + (xb @ w).sum()  # @dl_gemm
    return out


def test_dataloader_with_worker_processes():
    data = torch.utils.data.TensorDataset(torch.randn(256, 64))
    loader = torch.utils.data.DataLoader(data, batch_size=32, num_workers=2)
    w = torch.randn(64, 64, device="cuda")
    with dlpt.profile() as prof:
        loader_loop(loader, w)
    q = Q(prof.session)
    copies = [c for c in q.under_line(HERE, line_of("dl_copy", loader_loop)) if c["kind"] == "memcpy"]
    assert q.total("copy_bytes", copies) == 256 * 64 * 4
    assert q.kernels(q.under_line(HERE, line_of("dl_gemm", loader_loop)))


def on_device(index):
    a = torch.randn(512, 512, device=f"cuda:{index}")
    return torch.tanh(a)  # @multi


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_two_gpus_record_the_device_of_each_kernel():
    with dlpt.profile() as prof:
        on_device(0)
        on_device(1)
    q = Q(prof.session)
    ks = q.kernels(q.under_line(HERE, line_of("multi", on_device)))
    assert {k["x"]["device"] for k in ks if "tanh" in k["name"].lower()} == {0, 1}
    assert set(prof.session.meta["gpu_busy_ns"]) >= {"0", "1"}
