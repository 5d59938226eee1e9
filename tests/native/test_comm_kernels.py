"""One classifier of communication kernels, two implementations: the native tracer's
(csrc/cupti/comm_kernels.h, through dlpt._C._testing.comm_kernel, which demangles as the tracer
does) and dlpt.model.comm_names. Both are held here to kernel names taken from NCCL's own source:
src/device/generate.py (NCCL >= 2.19: ``ncclDevKernel_`` + the specialised kernel's function),
src/include/collectives.h's NCCL_KERN_NAME (NCCL <= 2.18: ``ncclKernel_<func>_<algo>_<proto>_
<redop>_<type>``) and src/device/symmetric/generate.py (NCCL >= 2.27: ``ncclSymkDevKernel_``).
Each name is checked as CUPTI may report it: mangled (with the parameter list NCCL declares),
demangled, and short."""

from __future__ import annotations

import pytest

from dlpt.capture.native import core
from dlpt.model.comm_names import is_comm_kernel, parse_nccl_kernel

T = core()._testing

# (name, mangled parameter list, its demangled text, family, algorithm, protocol)
# ncclDevKernelArgs4K, a typedef of ncclDevKernelArgsStorage<4096>
_DEV_ARGS = ("24ncclDevKernelArgsStorageILm4096EE", "(ncclDevKernelArgsStorage<4096ul>)")
_OLD_ARGS = ("P11ncclDevCommmP8ncclWork", "(ncclDevComm*, unsigned long, ncclWork*)")
_SYMK_ARGS = ("21ncclSymkDevWorkArgs4K", "(ncclSymkDevWorkArgs4K)")
NCCL_KERNELS = [
    # NCCL >= 2.19: best_kernel() specialises AllGather/Broadcast on RING LL, reductions on Sum
    # RING or TREE LL per type (signed sums mapped to unsigned), SendRecv and Generic once.
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", _DEV_ARGS, "allreduce", "RING", "LL"),
    ("ncclDevKernel_AllReduce_Sum_bf16_TREE_LL", _DEV_ARGS, "allreduce", "TREE", "LL"),
    ("ncclDevKernel_AllGather_RING_LL", _DEV_ARGS, "allgather", "RING", "LL"),
    ("ncclDevKernel_ReduceScatter_Sum_u32_RING_LL", _DEV_ARGS, "reduce_scatter", "RING", "LL"),
    ("ncclDevKernel_Reduce_Sum_f16_RING_LL", _DEV_ARGS, "reduce", "RING", "LL"),
    ("ncclDevKernel_Broadcast_RING_LL", _DEV_ARGS, "broadcast", "RING", "LL"),
    ("ncclDevKernel_SendRecv", _DEV_ARGS, "sendrecv", "", ""),
    ("ncclDevKernel_Generic", _DEV_ARGS, "", "", ""),
    # NCCL <= 2.18: IMPL_COLL_KERN makes one LL kernel per algorithm (collectives on Sum int8_t),
    # IMPL_COLL_P one RING SIMPLE SendRecv kernel.
    ("ncclKernel_AllReduce_RING_LL_Sum_float", _OLD_ARGS, "allreduce", "RING", "LL"),
    ("ncclKernel_AllGather_RING_LL_Sum_int8_t", _OLD_ARGS, "allgather", "RING", "LL"),
    ("ncclKernel_ReduceScatter_TREE_LL_Sum_half", _OLD_ARGS, "reduce_scatter", "TREE", "LL"),
    ("ncclKernel_Broadcast_RING_LL_Sum_int8_t", _OLD_ARGS, "broadcast", "RING", "LL"),
    ("ncclKernel_AllReduce_NVLS_TREE_LL_Sum___nv_bfloat16", _OLD_ARGS, "allreduce", "NVLS_TREE", "LL"),
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", _OLD_ARGS, "sendrecv", "RING", "SIMPLE"),
    # NCCL >= 2.27, symmetric memory: the algorithm is NCCL's own name, no protocol.
    ("ncclSymkDevKernel_AllGather_LL", _SYMK_ARGS, "allgather", "LL", ""),
    ("ncclSymkDevKernel_AllReduce_AGxLL_R_sum_f32", _SYMK_ARGS, "allreduce", "AGxLL_R", ""),
    (
        "ncclSymkDevKernel_ReduceScatter_RailA2A_LsaLDMC_sum_bf16",
        _SYMK_ARGS,
        "reduce_scatter",
        "RailA2A_LsaLDMC",
        "",
    ),
]

OTHER_KERNELS = [
    "ampere_sgemm_128x64_nn",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int)",
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEEEEviT0_",
    "triton_poi_fused_add_0",
    "nccl_all_reduce_helper",  # names a collective, but not one of NCCL's kernels
]


def forms(name: str, args: tuple[str, str]) -> list[tuple[str, str]]:
    """(what CUPTI reports, the name the tracer interns) for the short, demangled and mangled name."""
    mangled, demangled = args
    readable = name + demangled
    return [(name, name), (readable, readable), (f"_Z{len(name)}{name}{mangled}", readable)]


@pytest.mark.parametrize(("name", "args", "fam", "algorithm", "protocol"), NCCL_KERNELS)
def test_both_classifiers_take_nccl_kernel_names_for_communication(name, args, fam, algorithm, protocol):
    for reported, readable in forms(name, args):
        interned, native_comm = T.comm_kernel(reported)
        assert interned == readable  # the tracer demangles what it can, as in a profile
        assert native_comm is True, reported
        assert is_comm_kernel(interned) is True, interned
        parsed = parse_nccl_kernel(interned)
        assert parsed is not None
        assert (parsed.family, parsed.algorithm, parsed.protocol) == (fam, algorithm, protocol), interned


@pytest.mark.parametrize("name", OTHER_KERNELS)
def test_neither_classifier_takes_other_kernels_for_communication(name):
    interned, native_comm = T.comm_kernel(name)
    assert native_comm is False
    assert is_comm_kernel(interned) is False and is_comm_kernel(name) is False
    assert parse_nccl_kernel(interned) is None
