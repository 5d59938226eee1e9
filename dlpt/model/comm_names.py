"""What counts as communication, and NCCL's bus-bandwidth arithmetic. Plain functions over names
and numbers, used when a session is assembled and when it is rendered.

- A **communication kernel** is a collective or point-to-point kernel of NCCL (or RCCL, which
  keeps the names): ``ncclDevKernel_AllReduce_Sum_bf16_RING_LL`` (NCCL >= 2.19),
  ``ncclKernel_AllReduce_RING_LL_Sum_float`` (older) or a symmetric-memory kernel
  ``ncclSymkDevKernel_AllReduce_AGxLL_R_sum_f32`` (NCCL >= 2.27). The native core splits exposed
  from overlapped communication by the same names (csrc/cupti/comm_kernels.h), so the header's
  numbers and the tree's agree: tests/native/test_comm_kernels.py holds the two to NCCL's names.
  The name also carries the operation, reduction, data type, algorithm (RING, TREE, NVLS,
  COLLNET, PAT) and protocol (LL, LL128, SIMPLE): :func:`parse_nccl_kernel`.
- A **collective call** is a torch.distributed op (``c10d::allreduce_``,
  ``_c10d_functional::all_gather_into_tensor``) or the call dlpt wraps around a Python-level
  collective on a CPU process group (:mod:`dlpt.capture.ranks.pycomm`).
- Every name of one operation (the c10d op, the Python function, NCCL's kernel, torch's
  ``record_param_comms`` name) maps to one :func:`family`, so a table can group them.
- **Bus bandwidth** follows NCCL's definition (nccl-tests, doc/PERFORMANCE.md): algorithm
  bandwidth is S/t for the collective's full buffer S (all-gather: the gathered output;
  reduce-scatter: the input), and bus bandwidth scales it by what each link must carry:
  2(n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter, all-to-all, gather and
  scatter, 1 for broadcast, reduce and point-to-point. It is comparable with the hardware's
  link bandwidth whatever the number of ranks.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "NcclKernel",
    "is_comm_kernel",
    "parse_nccl_kernel",
    "family",
    "is_collective_op",
    "WRAPPER_PREFIX",
    "bus_factor",
    "bus_bandwidth",
]

#: Op names dlpt gives the Python-level collective calls it wraps (dlpt.capture.ranks.pycomm), once
#: the session is assembled: ``torch.distributed.all_reduce``, ``torch.distributed.Work.wait``.
WRAPPER_PREFIX = "torch.distributed."
#: The name of a wrapped ``Work.wait()`` of an asynchronous collective.
WORK_WAIT = f"{WRAPPER_PREFIX}Work.wait"
#: Ops whose own time is a rank waiting for a collective to finish.
WAIT_OPS = frozenset({"_c10d_functional::wait_tensor"})

_KERNEL_MARKS = ("ncclKernel", "ncclDevKernel", "ncclSymkDevKernel")  # as csrc/cupti/comm_kernels.h
_SYMK_MARK = "ncclSymkDevKernel"
# The symmetric kernels' reductions (NCCL's src/device/symmetric/generate.py), as NCCL names them.
_SYMK_REDUCTIONS = {"sum": "Sum", "avg": "SumPostDiv"}
_ALGORITHMS = ("NVLS_TREE", "COLLNET_DIRECT", "COLLNET_CHAIN", "RING", "TREE", "NVLS", "COLLNET", "PAT")
_PROTOCOLS = frozenset({"LL", "LL128", "SIMPLE"})
_REDUCTIONS = frozenset({"Sum", "Prod", "Max", "Min", "PreMulSum", "SumPostDiv", "MinMax"})


def is_comm_kernel(name: str) -> bool:
    """A kernel NCCL (or RCCL) launched, by its name (short or full)."""
    return any(mark in name for mark in _KERNEL_MARKS)


@dataclass(frozen=True)
class NcclKernel:
    """What an NCCL kernel's name says; "" where it says nothing (``ncclDevKernel_SendRecv`` has
    no algorithm, generic kernels name no operation)."""

    op: str  # NCCL's name: AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, SendRecv
    reduction: str = ""
    dtype: str = ""
    algorithm: str = ""
    protocol: str = ""

    @property
    def family(self) -> str:
        return family(self.op) if self.op else ""


def parse_nccl_kernel(name: str) -> NcclKernel | None:
    """The parts of an NCCL kernel name, or None if ``name`` is not one. Reads the layouts
    ``ncclDevKernel_<Op>[_<Red>_<type>]_<ALGO>_<PROTO>``, the older
    ``ncclKernel_<Op>_<ALGO>_<PROTO>[_<Red>_<type>]`` and the symmetric kernels'
    ``ncclSymkDevKernel_<Op>_<algorithm>[_<red>_<type>]`` (no protocol; the algorithm is NCCL's
    own name for it, ``AGxLL_R``)."""
    for mark in _KERNEL_MARKS:
        at = name.find(mark + "_")
        if at >= 0:
            body = name[at + len(mark) + 1 :]
            break
    else:
        return None
    body = body.split("(", 1)[0].split("<", 1)[0].strip()
    tokens = [t for t in body.split("_") if t]
    if not tokens:
        return None
    if mark == _SYMK_MARK:
        return _symmetric_kernel(tokens)
    op = "" if tokens[0] == "Generic" else tokens[0]
    reduction = dtype = algorithm = protocol = ""
    i = 1
    while i < len(tokens):
        tok, pair = tokens[i], "_".join(tokens[i : i + 2])
        if pair in _ALGORITHMS:
            algorithm, i = pair, i + 2
            continue
        if tok in _ALGORITHMS:
            algorithm = tok
        elif tok in _PROTOCOLS:
            protocol = tok
        elif tok in _REDUCTIONS:
            reduction = tok
        elif not tok.isdigit():
            dtype = tok if not dtype else f"{dtype}_{tok}"  # int8_t, __nv_bfloat16 split on "_"
        i += 1
    return NcclKernel(op, reduction, dtype, algorithm, protocol)


def _symmetric_kernel(tokens: list[str]) -> NcclKernel:
    op, rest = tokens[0], tokens[1:]
    reduction = dtype = ""
    if len(rest) >= 3 and rest[-2] in _SYMK_REDUCTIONS:
        reduction, dtype, rest = _SYMK_REDUCTIONS[rest[-2]], rest[-1], rest[:-2]
    return NcclKernel(op, reduction, dtype, "_".join(rest))


_QUALIFIERS = ("coalesced", "intotensor", "tensor", "single", "base", "out", "anysource")
_FAMILIES = {
    "allreduce": "allreduce",
    "allgather": "allgather",
    "reducescatter": "reduce_scatter",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "alltoall": "alltoall",
    "alltoallv": "alltoall",
    "barrier": "barrier",
    "monitoredbarrier": "barrier",
    "gather": "gather",
    "scatter": "scatter",
    "send": "send",
    "isend": "send",
    "recv": "recv",
    "irecv": "recv",
    "sendrecv": "sendrecv",
    "waittensor": "wait",
    "wait": "wait",
}


def family(name: str) -> str:
    """The operation any of its names stands for: ``c10d::_allgather_base_``,
    ``all_gather_into_tensor``, ``AllGather`` and ``allgather_into_tensor_coalesced`` are all
    "allgather". Unknown names come back lower-cased without namespace and underscores."""
    base = name.rsplit("::", 1)[-1].rsplit(".", 1)[-1].lower().replace("_", "")
    changed = True
    while changed:
        changed = False
        for q in _QUALIFIERS:
            if base.endswith(q) and len(base) > len(q):
                base, changed = base[: -len(q)], True
    return _FAMILIES.get(base, base)


def is_collective_op(name: str) -> bool:
    """A torch.distributed op or a collective call dlpt wrapped (a row of the collectives table).
    ``_c10d_functional::_wrap_tensor_autograd`` only wraps a result: not communication."""
    if name.startswith("_c10d_functional::"):
        return not name.endswith("::_wrap_tensor_autograd")
    return name.startswith(("c10d::", WRAPPER_PREFIX))


_HALF = ("allgather", "reduce_scatter", "alltoall", "gather", "scatter")


def bus_factor(fam: str, n: int) -> float | None:
    """NCCL's bus-bandwidth factor for ``n`` ranks, or None where none is defined (barrier,
    waits, unknown operations, one rank)."""
    if n < 2:
        return None
    if fam == "allreduce":
        return 2 * (n - 1) / n
    if fam in _HALF:
        return (n - 1) / n
    if fam in ("broadcast", "reduce", "send", "recv", "sendrecv"):
        return 1.0
    return None


def bus_bandwidth(fam: str, nbytes: int, ns: int, n: int) -> tuple[float, float] | None:
    """(algorithm bandwidth, bus bandwidth) in GB/s for ``nbytes`` (each call's full buffer,
    summed over calls) moved in ``ns`` by ``n`` ranks; None without bytes, time or a factor."""
    factor = bus_factor(fam, n)
    if factor is None or nbytes <= 0 or ns <= 0:
        return None
    alg = nbytes / ns  # bytes per ns is GB/s
    return alg, alg * factor
