"""Synthetic sessions for the HTML report, ``dlpt diff`` and export tests.

Built as plain dicts in the documented v1 format (docs/session-format.md), so the tests go
through validation exactly as a loaded file does. ``meta.sources`` holds the source text of
the profiled lines, as sessions do once dlpt stores it.

- :func:`gpt_eager` / :func:`gpt_compiled`: one training step of ``examples/compiled_gpt.py``
  (4 blocks) on a GPU, without and with torch.compile: forward and grafted backward, fused
  Triton kernels with their graph and fused ops, Dynamo's compiled regions and resume
  function, compile events, an AdamW foreach step and a ``.item()`` sync. Line numbers and
  text are the example's, so the report looks like a real one.
- :func:`hostile`: names built to break an HTML page or a terminal.
- :func:`big`: a profile of about ``n`` nodes, for size and speed checks.
- :func:`moved`: the same session with a file's lines shifted (code inserted above them).
"""

from __future__ import annotations

import copy
import random
from typing import Any

EX = "/home/user/dlpt/examples"
GPT_PY = f"{EX}/gpu_gpt.py"
RUN_PY = f"{EX}/compiled_gpt.py"
SITE = "/opt/venv/lib/python3.11/site-packages"
MODULE_PY = f"{SITE}/torch/nn/modules/module.py"
INDUCTOR_PY = "/tmp/torchinductor_user/ab/cabx7qkz3.py"
STEPS = 12
STEP_FN = "make_step.<locals>.step"
LAYERS = 4

# Source text of the example's profiled lines (verbatim from examples/).
GPT_SOURCE = {
    27: "    def forward(self, x: torch.Tensor) -> torch.Tensor:",
    28: "        b, t, c = x.shape",
    29: "        qkv = self.qkv(x)",
    30: "        q, k, v = qkv.view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)",
    31: "        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)",
    32: "        y = y.transpose(1, 2).reshape(b, t, c)",
    33: "        return self.proj(y)",
    42: "    def forward(self, x: torch.Tensor) -> torch.Tensor:",
    43: "        h = self.fc(x)",
    44: '        h = F.gelu(h, approximate="tanh")',
    45: "        return self.out(h)",
    56: "    def forward(self, x: torch.Tensor) -> torch.Tensor:",
    57: "        x = x + self.attn(self.ln1(x))",
    58: "        x = x + self.mlp(self.ln2(x))",
    59: "        return x",
}
RUN_SOURCE = {
    39: "    def forward(self, ids: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:",
    40: "        pos = torch.arange(ids.shape[1], device=ids.device)",
    41: "        x = self.tok(ids) + self.pos(pos)",
    42: "        for block in self.blocks:",
    43: "            x = block(x)",
    44: "        x = log_norm(x, self.graph_break)",
    45: "        x = self.ln_f(x)",
    46: "        logits = self.head(x)",
    47: "        return torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), targets.flatten())",
    66: "    def step():",
    71: "        opt.zero_grad(set_to_none=True)",
    72: "        with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=cuda):",
    73: "            loss = compiled(inputs, targets)",
    74: "        loss.backward()",
    75: "        opt_step()",
    76: "        return loss",
    94: "    for _ in range(args.steps):",
    95: "        loss = step()",
    96: "    last = loss.item()  # waits for the GPU",
    97: "    dt = (time.perf_counter() - t0) / max(args.steps, 1)",
}

GEMM = (
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_seg"
    "ment_k_off_kernel__5x_cublas"
)
GEMM_BW = (
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x128x64_warpgroupsize1x1x1_execute_seg"
    "ment_k_off_kernel__5x_cublas"
)
FLASH = (
    "pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 64, 4, false, false,"
    " cutlass::bfloat16_t>, true, false>"
)
FLASH_BW = (
    "pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<64,"
    " 128, 128, 8, 2, 4, 2>, true>"
)
LN = "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>"
LN_BW = (
    "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<c10::BFloat16, float>"
)
GELU = (
    "void at::native::vectorized_elementwise_kernel<4,"
    " at::native::GeluCUDAKernelImpl::{lambda()#2}, std::array<char*, 2> >"
)
GELU_BW = (
    "void at::native::vectorized_elementwise_kernel<4,"
    " at::native::GeluBackwardCUDAKernelImpl::{lambda()#2}, std::array<char*, 3> >"
)
ADD = (
    "void at::native::vectorized_elementwise_kernel<4,"
    " at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3> >"
)
COPY = "void at::native::elementwise_kernel<128, 4, at::native::direct_copy_kernel_cuda::{lambda()#3}>"
ADAM = (
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<TensorListMetadata<4>,"
    " FusedAdamMathFunctor<float, 4>>"
)
XENT = (
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float,"
    " LogSoftMaxForwardEpilogue>"
)
XENT_BW = (
    "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, float,"
    " LogSoftMaxBackwardEpilogue>"
)

#: Per-call GPU time of the eager GELU kernels and of the fused Triton kernels that replace
#: them under torch.compile (the diff tests check the line's delta against these).
GELU_FWD_NS, GELU_BWD_NS = 13_000, 21_000
FUSED_GELU_FWD_NS, FUSED_GELU_BWD_NS = 6_500, 9_000


class Builder:
    """Appends nodes to a v1 node table; every method returns the new node's id. Metric
    arguments are per step and multiplied by ``steps``."""

    def __init__(self, steps: int = STEPS) -> None:
        self.steps = steps
        self.nodes: list[dict[str, Any]] = [
            {"id": 0, "parent": -1, "kind": "root", "name": "<root>", "file": "", "line": 0, "m": {}}
        ]

    def add(
        self,
        parent: int,
        kind: str,
        name: str,
        file: str = "",
        line: int = 0,
        x: dict | None = None,
        **m: int,
    ) -> int:
        node: dict[str, Any] = {
            "id": len(self.nodes),
            "parent": parent,
            "kind": kind,
            "name": name,
            "file": file,
            "line": line,
            "m": {k: v * self.steps for k, v in m.items() if v},
        }
        if x is not None:
            node["x"] = x
        self.nodes.append(node)
        return node["id"]

    def frame(self, parent: int, file: str, line: int, func: str, x: dict | None = None, **m: int) -> int:
        return self.add(parent, "frame", func, file, line, x=x, **m)

    def op(self, parent: int, name: str, cpu_ns: int = 5_000, calls: int = 1, **m: int) -> int:
        return self.add(parent, "op", name, calls=calls, cpu_ns=cpu_ns, **m)

    def phase(self, parent: int, name: str) -> int:
        return self.add(parent, "phase", name)

    def kernel(
        self, parent: int, name: str, ns: int, n: int = 1, grid=(132, 1, 1), block=(256, 1, 1), **x: Any
    ) -> int:
        extras = {
            "full_name": f"_Z{len(name)}k",
            "device": 0,
            "grid": list(grid),
            "block": list(block),
            "regs": 64,
            "smem_static": 0,
            "smem_dynamic": 0,
            **x,
        }
        node = self.add(parent, "kernel", name, x=extras, kernels=n, gpu_ns=ns * n)
        self.nodes[node]["m"].update(min_ns=ns * 9 // 10, max_ns=ns * 12 // 10)
        return node

    def memcpy(self, parent: int, direction: str, ns: int, nbytes: int, host_mem: str = "pinned") -> int:
        return self.add(
            parent,
            "memcpy",
            f"[memcpy {direction}]",
            x={"direction": direction, "host_mem": host_mem, "device": 0},
            copies=1,
            copy_ns=ns,
            copy_bytes=nbytes,
        )

    def sync(self, parent: int, name: str, ns: int) -> int:
        return self.add(parent, "sync", f"[sync {name}]", syncs=1, sync_ns=ns)

    def session(self, meta: dict[str, Any]) -> dict[str, Any]:
        return {"format": "dlpt-session", "version": 1, "meta": meta, "nodes": self.nodes}


def _meta(
    argv: list[str], gpu_busy_ns: int, wall_ns: int, compile_events: list | None = None
) -> dict[str, Any]:
    return {
        "argv": argv,
        "python": "3.11.7",
        "torch": "2.11.0+cu130",
        "dlpt": "0.1.0",
        "started_at": "2026-11-21T21:22:39Z",
        "wall_ns": wall_ns,
        "devices": [{"index": 0, "name": "NVIDIA H200", "capability": "9.0"}],
        "gpu": {"enabled": True, "reason": None},
        "steps": {
            "profiled": STEPS,
            "seen": STEPS + 6,
            "skip_first": 6,
            "active": None,
            "source": "optimizer",
        },
        # Steps 40 us apart (less for a tiny wall time: a step's wall time is never negative).
        "step_wall_ns": [
            wall_ns // STEPS + (i % 3 - 1) * min(40_000, wall_ns // STEPS // 10) for i in range(STEPS)
        ],
        "gpu_busy_ns": {"0": gpu_busy_ns},
        "api": [
            {
                "name": "cudaLaunchKernel",
                "calls": 400 * STEPS,
                "total_ns": 1_600_000 * STEPS,
                "min_ns": 2_500,
                "max_ns": 40_000,
            }
        ],
        "dropped": {"activity_records": 0, "correlations": 0},
        "unattributed": {"gpu_ns": 0, "records": 0},
        "compile": compile_events or [],
        "sources": {
            GPT_PY: {str(k): v for k, v in GPT_SOURCE.items()},
            RUN_PY: {str(k): v for k, v in RUN_SOURCE.items()},
        },
    }


def _linear(b: Builder, at: int, ns: int) -> None:
    """aten::linear under a model line: GEMM forward, two GEMMs backward."""
    op = b.op(at, "aten::linear", cpu_ns=9_000, api_ns=4_000)
    b.kernel(b.op(b.phase(op, "<forward>"), "aten::addmm", cpu_ns=6_000), GEMM, ns)
    bw = b.op(b.phase(op, "<backward>"), "AddmmBackward0", cpu_ns=3_000)
    b.kernel(b.op(bw, "aten::mm", cpu_ns=7_000, calls=2), GEMM_BW, ns, n=2)


def _eltwise(b: Builder, at: int, op: str, fwd: tuple[str, int], bwd: tuple[str, str, int] | None) -> None:
    o = b.op(at, op, cpu_ns=4_000, api_ns=2_000)
    b.kernel(b.phase(o, "<forward>"), fwd[0], fwd[1], grid=(2048, 1, 1), block=(128, 1, 1))
    if bwd:
        b.kernel(
            b.op(b.phase(o, "<backward>"), bwd[0], cpu_ns=3_000),
            bwd[1],
            bwd[2],
            grid=(2048, 1, 1),
            block=(128, 1, 1),
        )


def _lib_call(b: Builder, at: int) -> int:
    """The library frames of ``nn.Module.__call__`` under a calling line (folded in reports)."""
    return b.frame(b.frame(at, MODULE_PY, 1751, "_wrapped_call_impl"), MODULE_PY, 1762, "_call_impl")


def _eager_block(b: Builder, at: int) -> None:
    """``x = block(x)``: Block.forward's two residual lines, Attention and MLP below them."""
    call = _lib_call(b, at)
    l57 = b.frame(call, GPT_PY, 57, "forward")
    _eltwise(b, l57, "aten::layer_norm", (LN, 7_000), ("NativeLayerNormBackward0", LN_BW, 11_000))
    attn = _lib_call(b, l57)
    _linear(b, b.frame(attn, GPT_PY, 29, "forward"), 24_000)
    b.op(b.frame(attn, GPT_PY, 30, "forward"), "aten::permute", cpu_ns=2_000)
    sdpa = b.op(b.frame(attn, GPT_PY, 31, "forward"), "aten::scaled_dot_product_attention", cpu_ns=12_000)
    b.kernel(b.op(b.phase(sdpa, "<forward>"), "aten::_scaled_dot_product_flash_attention"), FLASH, 31_000)
    b.kernel(b.op(b.phase(sdpa, "<backward>"), "ScaledDotProductFlashAttentionBackward0"), FLASH_BW, 78_000)
    _eltwise(
        b,
        b.frame(attn, GPT_PY, 32, "forward"),
        "aten::reshape",
        (COPY, 5_000),
        ("CloneBackward0", COPY, 5_000),
    )
    _linear(b, b.frame(attn, GPT_PY, 33, "forward"), 9_000)
    _eltwise(b, l57, "aten::add", (ADD, 4_000), None)
    l58 = b.frame(call, GPT_PY, 58, "forward")
    _eltwise(b, l58, "aten::layer_norm", (LN, 7_000), ("NativeLayerNormBackward0", LN_BW, 11_000))
    mlp = _lib_call(b, l58)
    _linear(b, b.frame(mlp, GPT_PY, 43, "forward"), 33_000)
    _eltwise(
        b,
        b.frame(mlp, GPT_PY, 44, "forward"),
        "aten::gelu",
        (GELU, GELU_FWD_NS),
        ("GeluBackward0", GELU_BW, GELU_BWD_NS),
    )
    _linear(b, b.frame(mlp, GPT_PY, 45, "forward"), 33_000)
    _eltwise(b, l58, "aten::add", (ADD, 4_000), None)


def _step_tail(b: Builder, step: int, main: int) -> None:
    """backward() leftovers, the AdamW step and the loss read-back: the same in both runs."""
    bw = b.op(b.frame(step, RUN_PY, 74, STEP_FN), "aten::ones_like", cpu_ns=6_000)
    b.kernel(
        bw,
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>",
        2_000,
        grid=(1, 1, 1),
    )
    opt = b.frame(b.frame(step, RUN_PY, 75, STEP_FN), f"{SITE}/torch/optim/adamw.py", 230, "step")
    # torch.optim's record_function region; the core gives the outermost op a <forward> phase.
    region = b.add(opt, "scope", "Optimizer.step#AdamW.step", calls=1)
    fe = b.op(region, "aten::_fused_adamw_", cpu_ns=80_000, api_ns=12_000)
    ph = b.phase(fe, "<forward>")
    b.kernel(ph, ADAM, 61_000, n=2, grid=(320, 1, 1), block=(512, 1, 1))
    b.add(ph, "memset", "[memset]", memsets=1, memset_ns=2_000)
    item = b.op(b.frame(main, RUN_PY, 96, "main"), "aten::item", cpu_ns=3_000)
    b.memcpy(b.op(item, "aten::_local_scalar_dense", cpu_ns=2_000), "DtoH", 2_000, 4)
    b.sync(item, "cudaStreamSynchronize", 150_000)


def gpt_eager(steps: int = STEPS) -> dict[str, Any]:
    """``python -m dlpt --skip-first 6 examples/compiled_gpt.py --mode eager`` on an H200 (made up)."""
    b = Builder(steps)
    main = b.frame(b.frame(0, "<frozen runpy>", 88, "_run_code"), RUN_PY, 95, "main")
    step = b.frame(main, RUN_PY, 73, STEP_FN)
    call = _lib_call(b, step)
    b.op(b.frame(call, RUN_PY, 40, "forward"), "aten::arange", cpu_ns=3_000)
    emb = b.frame(call, RUN_PY, 41, "forward")
    _eltwise(
        b,
        emb,
        "aten::embedding",
        ("void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long>", 9_000),
        (
            "EmbeddingBackward0",
            "void at::native::(anonymous namespace)::embedding_backward_feature_kernel<float, float, long>",
            25_000,
        ),
    )
    for _ in range(LAYERS):  # the same calling context each time: merged into one path
        _eager_block(b, b.frame(call, RUN_PY, 43, "forward"))
    parent = call
    _eltwise(
        b,
        b.frame(parent, RUN_PY, 45, "forward"),
        "aten::layer_norm",
        (LN, 7_000),
        ("NativeLayerNormBackward0", LN_BW, 11_000),
    )
    _linear(b, b.frame(parent, RUN_PY, 46, "forward"), 140_000)
    _eltwise(
        b,
        b.frame(parent, RUN_PY, 47, "forward"),
        "aten::cross_entropy",
        (XENT, 38_000),
        ("LogSoftmaxBackward0", XENT_BW, 44_000),
    )
    _step_tail(b, step, main)
    return b.session(
        _meta(["examples/compiled_gpt.py", "--mode", "eager"], 2_900_000 * steps, 4_100_000 * steps)
    )


def _fused(b: Builder, at: int, name: str, graph: str, ns: int, fuses: list[str]) -> None:
    b.kernel(at, f"{name} [{graph}]", ns, grid=(2048, 1, 1), block=(128, 1, 1), graph=graph, fuses=fuses)


def _mapped(b: Builder, parent: int, chain: list[tuple[str, int, str]]) -> int:
    """Model frames an Inductor wrapper line maps to (outermost first), as dlpt inserts them."""
    for file, line, func in chain:
        parent = b.frame(parent, file, line, func, x={"mapped_from": "inductor"})
    return parent


def _compiled_pass(b: Builder, at: int, graph: str, backward: bool) -> None:
    """One pass of the first compiled graph (the blocks): per block, what Inductor launched at
    each model line; extern GEMMs and flash attention go through their aten ops."""
    gen = b.frame(at, INDUCTOR_PY, 311 if backward else 164, "call", x={"generated": "inductor"})
    s = "_backward" if backward else ""
    for i in range(LAYERS):
        outer = [(RUN_PY, 43, "forward")]
        l57 = _mapped(b, gen, [*outer, (GPT_PY, 57, "forward")])
        _fused(
            b,
            l57,
            f"triton_per_fused_add_native_layer_norm{s}_{i * 6}",
            graph,
            9_000 if backward else 6_000,
            ["aten.add", "aten.native_layer_norm"],
        )
        for line, ns in ((29, 24_000), (33, 9_000)):
            mm = b.op(
                _mapped(b, gen, [*outer, (GPT_PY, 57, "forward"), (GPT_PY, line, "forward")]),
                "aten::mm",
                cpu_ns=3_000,
            )
            b.kernel(mm, GEMM_BW if backward else GEMM, ns, n=2 if backward else 1)
        l31 = _mapped(b, gen, [*outer, (GPT_PY, 57, "forward"), (GPT_PY, 31, "forward")])
        if backward:
            b.kernel(
                b.op(l31, "aten::_scaled_dot_product_flash_attention_backward", cpu_ns=4_000),
                FLASH_BW,
                78_000,
            )
        else:
            b.kernel(b.op(l31, "aten::_scaled_dot_product_flash_attention", cpu_ns=4_000), FLASH, 31_000)
        l58 = _mapped(b, gen, [*outer, (GPT_PY, 58, "forward")])
        _fused(
            b,
            l58,
            f"triton_per_fused_add_native_layer_norm{s}_{i * 6 + 1}",
            graph,
            9_000 if backward else 6_000,
            ["aten.add", "aten.native_layer_norm"],
        )
        for line in (43, 45):
            mm = b.op(
                _mapped(b, gen, [*outer, (GPT_PY, 58, "forward"), (GPT_PY, line, "forward")]),
                "aten::mm",
                cpu_ns=3_000,
            )
            b.kernel(mm, GEMM_BW if backward else GEMM, 33_000, n=2 if backward else 1)
        l44 = _mapped(b, gen, [*outer, (GPT_PY, 58, "forward"), (GPT_PY, 44, "forward")])
        if backward:
            _fused(
                b,
                l44,
                "triton_poi_fused_gelu_gelu_backward_view_4",
                graph,
                FUSED_GELU_BWD_NS,
                ["aten.view", "aten.gelu", "aten.gelu_backward"],
            )
        else:
            _fused(
                b, l44, "triton_poi_fused_gelu_view_10", graph, FUSED_GELU_FWD_NS, ["aten.view", "aten.gelu"]
            )


def gpt_compiled(steps: int = STEPS) -> dict[str, Any]:
    """``python -m dlpt --skip-first 6 examples/compiled_gpt.py`` (default mode, made up)."""
    b = Builder(steps)
    main = b.frame(b.frame(0, "<frozen runpy>", 88, "_run_code"), RUN_PY, 95, "main")
    step = b.frame(main, RUN_PY, 73, STEP_FN)
    region = b.op(step, "Torch-Compiled Region: 0/1", cpu_ns=40_000, api_ns=30_000)
    fwd = b.frame(region, RUN_PY, 39, "forward")
    cf = b.op(fwd, "CompiledFunction", cpu_ns=20_000)
    _compiled_pass(b, b.phase(cf, "<forward>"), "0_forward", False)
    _compiled_pass(
        b, b.op(b.phase(cf, "<backward>"), "CompiledFunctionBackward", cpu_ns=15_000), "0_backward", True
    )
    # After the graph break: Dynamo's resume function compiles the rest of forward().
    brk = b.frame(step, RUN_PY, 44, "forward")
    region2 = b.op(brk, "Torch-Compiled Region: 1/1", cpu_ns=25_000, api_ns=10_000)
    resume = "torch_dynamo_resume_in_forward_at_44"
    cf2 = b.op(b.frame(region2, RUN_PY, 44, resume), "CompiledFunction", cpu_ns=12_000)
    for phase, graph in (("<forward>", "1_forward"), ("<backward>", "1_backward")):
        ph = b.phase(cf2, phase)
        gen = b.frame(ph, INDUCTOR_PY.replace("cabx", "cdef"), 98, "call", x={"generated": "inductor"})
        bw = phase == "<backward>"
        _fused(
            b,
            _mapped(b, gen, [(RUN_PY, 45, resume)]),
            "triton_per_fused_native_layer_norm_0",
            graph,
            9_000 if bw else 6_000,
            ["aten.native_layer_norm"],
        )
        b.kernel(
            b.op(_mapped(b, gen, [(RUN_PY, 46, resume)]), "aten::mm", cpu_ns=3_000),
            GEMM_BW if bw else GEMM,
            140_000,
            n=2 if bw else 1,
        )
        _fused(
            b,
            _mapped(b, gen, [(RUN_PY, 47, resume)]),
            "triton_red_fused__log_softmax_nll_loss_1",
            graph,
            30_000 if bw else 27_000,
            ["aten._log_softmax", "aten.nll_loss_forward"],
        )
    # Embedding, before the first block: in the first graph.
    emb = b.frame(
        b.frame(region, RUN_PY, 39, "forward"), RUN_PY, 41, "forward", x={"mapped_from": "inductor"}
    )
    _fused(b, emb, "triton_poi_fused_add_embedding_0", "0_forward", 8_000, ["aten.embedding", "aten.add"])
    _step_tail(b, step, main)
    events = [
        {
            "compile_id": "0/0",
            "function": "forward",
            "file": RUN_PY,
            "line": 39,
            "compile_s": 9.1,
            "backend_s": 7.9,
            "inductor_s": 7.2,
            "graph_ops": 180,
            "break_reasons": ["Call to `torch._dynamo.graph_break()`"],
            "recompile_reason": None,
            "fail": None,
        },
        {
            "compile_id": "1/0",
            "function": resume,
            "file": RUN_PY,
            "line": 44,
            "compile_s": 2.2,
            "backend_s": 1.8,
            "inductor_s": 1.5,
            "graph_ops": 12,
            "break_reasons": [],
            "recompile_reason": None,
            "fail": None,
            "resume_of": {"function": "forward", "line": 44},
        },
        {
            "compile_id": "0/1",
            "function": "forward",
            "file": RUN_PY,
            "line": 39,
            "compile_s": 6.3,
            "backend_s": 5.1,
            "inductor_s": 4.6,
            "graph_ops": 180,
            "break_reasons": [],
            "recompile_reason": "0/0: tensor 'ids' size mismatch at index 1. expected 256, actual 128",
            "fail": None,
        },
    ]
    return b.session(_meta(["examples/compiled_gpt.py"], 2_100_000 * steps, 3_300_000 * steps, events))


def moved(session: dict[str, Any], file: str, delta: int, from_line: int = 0) -> dict[str, Any]:
    """A copy of ``session`` where lines >= ``from_line`` of ``file`` moved by ``delta`` (as if
    code had been inserted above them), in frames and in the stored source text."""
    out = copy.deepcopy(session)
    for n in out["nodes"]:
        if n["kind"] == "frame" and n["file"] == file and n["line"] >= from_line:
            n["line"] += delta
    src = out["meta"].get("sources", {}).get(file)
    if src:
        out["meta"]["sources"][file] = {
            str(int(k) + delta if int(k) >= from_line else int(k)): v for k, v in src.items()
        }
    return out


HOSTILE_KERNEL = "</script><img src=x onerror=\"document.title='pwned'\">\x1b[31mkernel"
HOSTILE_FILE = "/home/user/<b>evil</b>&amp;/\x1b]0;title\x07model.py"
HOSTILE_FUNC = "fn\"'<svg/onload=alert(1)>"
HOSTILE_TEXT = "    x = '</script><script>document.title=\"pwned\"</script>'"


def hostile() -> dict[str, Any]:
    """Names that would inject HTML into a page or escape sequences into a terminal."""
    b = Builder(steps=2)
    f = b.frame(0, HOSTILE_FILE, 7, HOSTILE_FUNC)
    op = b.op(f, "aten::<i>mul</i>", cpu_ns=1_000)
    b.kernel(op, HOSTILE_KERNEL, 5_000)
    meta = _meta(["evil.py", "--name", "</title><script>alert(1)</script>"], 10_000, 100_000)
    meta["steps"]["profiled"] = 2
    meta["sources"] = {HOSTILE_FILE: {"7": HOSTILE_TEXT}}
    meta["gpu"] = {"enabled": True, "reason": None}
    return b.session(meta)


def big(n: int = 10_000, seed: int = 1) -> dict[str, Any]:
    """About ``n`` nodes of a plausible large model: user files, lines, library frames, ops
    with forward/backward and kernels with long templated names (many distinct)."""
    rng = random.Random(seed)
    b = Builder(steps=10)
    files = [f"/home/user/proj/model/layer_{i:02d}.py" for i in range(40)]
    sources: dict[str, dict[str, str]] = {}
    root = b.frame(0, "/home/user/proj/train.py", 120, "main")
    while len(b.nodes) < n:
        file = rng.choice(files)
        fn = b.frame(root, file, rng.randint(10, 400), f"Block{rng.randint(0, 30)}.forward")
        lib = b.frame(fn, MODULE_PY, 1762, "_call_impl")
        for _ in range(rng.randint(1, 4)):
            line = rng.randint(10, 400)
            sources.setdefault(file, {})[str(line)] = f"        x = self.op{line}(x, scale={line / 7:.3f})"
            ln = b.frame(lib, file, line, f"Block{rng.randint(0, 30)}.forward")
            op = b.op(ln, f"aten::op_{rng.randint(0, 200)}", cpu_ns=rng.randint(1_000, 50_000))
            for phase in ("<forward>", "<backward>"):
                ph = b.phase(op, phase)
                inner = b.op(ph, f"aten::inner_{rng.randint(0, 300)}", cpu_ns=rng.randint(500, 9_000))
                for _ in range(rng.randint(1, 3)):
                    b.kernel(
                        inner,
                        f"void at::native::elementwise_kernel<{rng.randint(1, 512)}, "
                        f"at::native::Functor_{rng.randint(0, 5000)}<c10::BFloat16, float>>",
                        rng.randint(1_000, 400_000),
                    )
    meta = _meta(["train.py", "--big"], 1, 10**9)
    meta["steps"]["profiled"] = 10
    meta["sources"] = sources
    return b.session(meta)
