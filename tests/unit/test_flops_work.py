"""Work per op from recorded signatures (dlpt.capture.flops: signature, formulas, traffic, annotate) and
the datasheet peaks table, without a capture."""

from __future__ import annotations

import json

import pytest

from dlpt.analysis.peaks import TABLE, dtype_key, lookup
from dlpt.capture.flops.annotate import annotate, recorded_ops
from dlpt.capture.flops.formulas import flop_dtype, flops_of, formula_ops
from dlpt.capture.flops.signature import Tensor, parse
from dlpt.capture.flops.traffic import bytes_of


def T(dtype: str, *sizes: int) -> list:
    return ["T", [dtype, list(sizes)]]


def sig(*args: object) -> str:
    return json.dumps(args)


# -- peaks ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA H100 NVL", "H100 NVL"),
        ("NVIDIA H200", "H200 SXM"),
        ("NVIDIA H200 NVL", "H200 NVL"),
        ("NVIDIA GH200 480GB", "GH200"),
        ("NVIDIA B200", "B200"),
        ("NVIDIA A100-SXM4-80GB", "A100 SXM 80GB"),
        ("NVIDIA A100-SXM4-40GB", "A100 SXM 40GB"),
        ("NVIDIA A100-PCIE-40GB", "A100 PCIe 40GB"),
        ("NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"),
        ("Tesla V100-SXM2-32GB", "V100 SXM2"),
        ("Tesla V100-PCIE-16GB", "V100 PCIe"),
        ("Tesla V100S-PCIE-32GB", "V100S PCIe"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA GeForce RTX 4090", "RTX 4090"),
    ],
)
def test_device_names_map_to_their_datasheet_column(name: str, model: str) -> None:
    peaks = lookup(name)
    assert peaks is not None and peaks.name == model


@pytest.mark.parametrize(
    "name", ["NVIDIA L40", "NVIDIA GeForce RTX 4090 D", "NVIDIA GB200", "AMD Instinct MI300X", ""]
)
def test_unknown_gpus_get_no_peaks(name: str) -> None:
    assert lookup(name) is None


def test_peaks_are_the_dense_datasheet_numbers() -> None:
    h100 = lookup("NVIDIA H100 80GB HBM3")
    assert h100 is not None
    assert h100.tflops == {"fp32": 67, "tf32": 494.5, "fp16": 989.5, "bf16": 989.5, "fp8": 1979}
    assert h100.mem_gbs == 3350 and h100.link_gbs == 64.0
    a100 = lookup("NVIDIA A100-SXM4-80GB")
    assert a100 is not None and a100.peak("bf16") == 312 and a100.peak("fp8") is None
    v100 = lookup("Tesla V100-SXM2-16GB")
    assert v100 is not None and v100.peak("bf16") is None and v100.peak("fp16") == 125
    # Every entry: tensor-core rates at or above the CUDA-core fp32 rate, a bandwidth and a link.
    for _, p in TABLE:
        assert p.mem_gbs > 0 and p.link_gbs > 0 and p.source
        assert all(v >= p.tflops["fp32"] for k, v in p.tflops.items() if k != "fp32")


def test_dtype_keys() -> None:
    assert dtype_key("BFloat16") == "bf16" and dtype_key("Half") == "fp16"
    assert dtype_key("Float") == "fp32" and dtype_key("Float", tf32=True) == "tf32"
    assert dtype_key("Float8_e4m3fn") == "fp8" and dtype_key("Long") is None and dtype_key(None) is None


# -- signatures and formulas -----------------------------------------------------------------


def test_signatures_parse_tensors_lists_scalars_and_non_finite_doubles() -> None:
    args = parse('[["T",["Float",[8,16]]],["T",null],["TL",[["Half",[2]],null]],1,-inf,nan,[1,2],null,"?"]')
    assert args == [
        Tensor("Float", (8, 16)),
        None,
        [Tensor("Half", (2,)), None],
        1,
        None,
        None,
        [1, 2],
        None,
        "?",
    ]
    assert parse("not json") is None and parse('{"a": 1}') is None


def test_formula_ops_come_from_torchs_registry() -> None:
    ops = formula_ops()
    assert {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::convolution"} <= set(ops)
    assert {
        "aten::_scaled_dot_product_flash_attention",
        "aten::_scaled_dot_product_flash_attention_backward",
    } <= set(ops)
    assert set(ops) <= set(recorded_ops())


def test_matmul_family_flops() -> None:
    m, k, n, b = 8, 16, 4, 3
    assert flops_of("aten::mm", parse(sig(T("Float", m, k), T("Float", k, n)))) == 2 * m * n * k
    # addmm's beta and alpha are keyword-only in its schema: they must not reach out_shape.
    assert (
        flops_of("aten::addmm", parse(sig(T("Float", n), T("Float", m, k), T("Float", k, n), 1, 1)))
        == 2 * m * n * k
    )
    assert flops_of("aten::bmm", parse(sig(T("Half", b, m, k), T("Half", b, k, n)))) == 2 * b * m * n * k
    assert flops_of(
        "aten::baddbmm", parse(sig(T("Half", b, m, n), T("Half", b, m, k), T("Half", b, k, n), 1, 1))
    ) == (2 * b * m * n * k)
    assert flops_of("aten::relu", parse(sig(T("Float", 4)))) is None  # no formula
    assert flops_of("aten::mm", parse(sig(T("Float", m, k), T("Float", 3, n)))) is None  # inner dims differ


def test_attention_and_convolution_flops_match_torchs_counter() -> None:
    from torch.utils.flop_counter import conv_flop_count, sdpa_backward_flop_count, sdpa_flop_count

    q = (2, 6, 256, 64)
    fwd = parse(sig(T("BFloat16", *q), T("BFloat16", *q), T("BFloat16", *q), 0.0, True, False, None))
    assert flops_of("aten::_scaled_dot_product_flash_attention", fwd) == sdpa_flop_count(q, q, q)
    assert flops_of("aten::_scaled_dot_product_flash_attention", fwd) == 4 * 2 * 6 * 256 * 256 * 64
    # grad_out, query, key, value, out, logsumexp, cum_seq_q/k, max_q/k, dropout_p, is_causal,
    # philox seed and offset, and the keyword-only scale: the schema's 15 arguments.
    lse, seed = T("Float", 2, 6, 256), T("Long")
    bwd = parse(sig(*[T("BFloat16", *q)] * 5, lse, None, None, 256, 256, 0.0, True, seed, seed, None))
    assert flops_of("aten::_scaled_dot_product_flash_attention_backward", bwd) == sdpa_backward_flop_count(
        q, q, q, q
    )
    conv = parse(
        sig(
            T("Float", 2, 3, 16, 16),
            T("Float", 8, 3, 3, 3),
            T("Float", 8),
            [2, 2],
            [1, 1],
            [1, 1],
            False,
            [0, 0],
            1,
        )
    )
    assert flops_of("aten::convolution", conv) == conv_flop_count([2, 3, 16, 16], [8, 3, 3, 3], [2, 8, 8, 8])
    assert flop_dtype(conv) == "Float" and flop_dtype(fwd) == "BFloat16"


def test_bytes_are_inputs_read_once_and_outputs_written_once() -> None:
    # mm: A (8x16) + B (16x4) read, C (8x4) written, fp32.
    assert bytes_of("aten::mm", parse(sig(T("Float", 8, 16), T("Float", 16, 4)))) == (128 + 64 + 32) * 4
    # Broadcasting add in bf16: reads 8x16 and 16, writes 8x16.
    assert (
        bytes_of("aten::add", parse(sig(T("BFloat16", 8, 16), T("BFloat16", 16), 1))) == (128 + 16 + 128) * 2
    )
    # In place: writes its first argument.
    assert bytes_of("aten::mul_", parse(sig(T("Float", 10), T("Float", 10)))) == 30 * 4
    # A cast reads fp32 and writes bf16 (dtype code 15).
    assert (
        bytes_of("aten::_to_copy", parse(sig(T("Float", 10), 15, None, None, None, False, None))) == 40 + 20
    )
    # A reduction writes (almost) nothing.
    assert bytes_of("aten::sum", parse(sig(T("Float", 100), None, False, None))) == 400
    assert bytes_of("aten::nonexistent", parse(sig(T("Float", 1)))) is None


# -- annotate: work onto op nodes, outermost op of a nest only -------------------------------


def _node(i: int, parent: int, kind: str, name: str) -> dict:
    return {"id": i, "parent": parent, "kind": kind, "name": name, "file": "", "line": 0, "m": {"calls": 1}}


def test_annotate_counts_the_outermost_formula_op_and_restarts_under_backward() -> None:
    conv = sig(T("Float", 2, 3, 8, 8), T("Float", 4, 3, 3, 3), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    mm = sig(T("Float", 4, 4), T("Float", 4, 4))
    nodes = [
        _node(0, -1, "root", "<root>"),
        _node(1, 0, "frame", "f"),
        _node(2, 1, "op", "aten::convolution"),
        _node(3, 2, "phase", "<forward>"),
        _node(4, 3, "op", "aten::_convolution"),  # nested: same work, not counted again
        _node(5, 2, "phase", "<backward>"),
        _node(6, 5, "op", "MmBackward0"),
        _node(7, 6, "op", "aten::mm"),  # different work under the backward phase: counted
    ]
    summary = annotate(nodes, [(2, conv, 2), (4, conv, 2), (7, mm, 3), (99, mm, 1)])
    conv_flops = flops_of("aten::convolution", parse(conv))
    assert conv_flops is not None
    assert nodes[2]["m"]["flops"] == 2 * conv_flops and nodes[2]["x"]["flop_dtype"] == "Float"
    assert "flops" not in nodes[4]["m"] and "mem_bytes" not in nodes[4]["m"]
    assert nodes[7]["m"]["flops"] == 3 * 2 * 4 * 4 * 4
    assert summary == {"ops": 2, "flops": 2 * conv_flops + 3 * 128, "unevaluated": {}}


def test_annotate_counts_signatures_no_formula_could_take() -> None:
    nodes = [_node(0, -1, "root", "<root>"), _node(1, 0, "op", "aten::mm")]
    summary = annotate(nodes, [(1, sig(T("Float", 2, 3), T("Float", 5, 4)), 7)])
    assert summary["unevaluated"] == {"aten::mm": 7} and "flops" not in nodes[1]["m"]


def test_a_failed_outer_formula_is_covered_by_a_nested_one() -> None:
    bad = sig(T("Float", 2, 3), T("Float", 5, 4))
    good = sig(T("Float", 4, 4), T("Float", 4, 4))
    nodes = [_node(0, -1, "root", "<root>"), _node(1, 0, "op", "aten::addmm"), _node(2, 1, "op", "aten::mm")]
    summary = annotate(nodes, [(1, bad, 1), (2, good, 1)])
    assert nodes[2]["m"]["flops"] == 128 and summary["unevaluated"] == {}


def _conv_backward(mask: object) -> str:
    """aten::convolution_backward's inputs as the core records them: grad_output, input, weight,
    bias_sizes, stride, padding, dilation, transposed, output_padding, groups, output_mask."""
    g, x, w = T("Float", 2, 4, 6, 6), T("Float", 2, 3, 8, 8), T("Float", 4, 3, 3, 3)
    return sig(g, x, w, [4], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, mask)


def test_conv_backward_counts_the_gradients_its_recorded_output_mask_asks_for() -> None:
    from torch.utils.flop_counter import conv_backward_flop

    parsed = parse(_conv_backward([False, True, True]))
    assert parsed is not None and parsed[10] == [False, True, True]  # a bool list, as recorded
    shapes = ([2, 4, 6, 6], [2, 3, 8, 8], [4, 3, 3, 3], None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)

    def torch_count(mask: list[bool]) -> int:
        return conv_backward_flop(*shapes, mask, out_val=[[2, 3, 8, 8], [4, 3, 3, 3], None])

    weight_only, both = torch_count([False, True, True]), torch_count([True, True, True])
    assert 0 < weight_only < both

    def annotated(mask: object, kernels: tuple[str, ...] = ()) -> int:
        nodes = [_node(0, -1, "root", "<root>"), _node(1, 0, "op", "aten::convolution_backward")]
        for i, k in enumerate(kernels, 2):
            nodes.append({**_node(i, 1, "kernel", k), "m": {"kernels": 1, "gpu_ns": 10}})
        annotate(nodes, [(1, _conv_backward(mask), 1)])
        return nodes[1]["m"]["flops"]

    # The mask the core recorded decides, whatever the kernels are called (a first layer: its
    # input needs no gradient).
    assert annotated([False, True, True]) == weight_only
    assert annotated([False, True, True], ("cudnn_dgrad_kernel", "cudnn_wgrad_kernel")) == weight_only
    assert annotated([True, True, False]) == both
    # A signature without it ("?", from a core that did not record bool lists): cuDNN's kernel
    # names, else both gradients.
    assert annotated("?", ("sm90_xmma_wgrad_implicit_gemm",)) == weight_only
    assert annotated("?") == both
