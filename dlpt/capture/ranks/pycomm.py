"""While profiling: the Python-level torch.distributed collectives on CPU process groups (gloo)
become ops of their own, with their bytes, and the time the rank waits in them becomes visible.

Why: NCCL's collectives tell torch what they move (``record_param_comms``, which the native core
records) and their kernels' time includes waiting for the slowest peer. gloo in torch 2.13 records
neither: its ``c10d::allreduce_`` op only enqueues the work, and a synchronous collective waits in
``Work.wait()``, called from Python in ``torch.distributed.distributed_c10d`` outside any op, so a
rank that waits for a straggler shows nothing at all.

How: from :meth:`CollectiveHooks.install` to :meth:`CollectiveHooks.remove` (the profile's start
and stop), ``torch.distributed.all_reduce`` and the other collectives (the attributes of
``torch.distributed`` and ``torch.distributed.distributed_c10d``, where they are still torch's
own) are replaced by a wrapper that, for CPU tensors (collectives of a gloo group, or of a group's
gloo backend when it also has NCCL for CUDA tensors):

1. reads what the call moves from its tensor arguments (data type, bytes in and out, process
   group, world size) into a signature, numbered once per distinct signature;
2. runs the original function inside the op ``c10d::_dlpt_call_<number>``, defined here with
   torch.library the first time its signature is seen (tens of microseconds, once). An op is
   what the native core times (RecordFunction): the call's time outside its own ``c10d::`` op,
   which is the wait, lands on it. The ``c10d::`` namespace is what makes the native core
   record it even inside another op (FSDP2's hooks run inside autograd's backward ops); the
   number in its name is how the session, assembled at stop (:mod:`dlpt.capture.ranks.annotate`),
   finds what the call moved.

``Work.wait()`` of an asynchronous collective started through the wrapper (``async_op=True``,
as FSDP2 does) runs inside ``c10d::_dlpt_wait_<number>`` the same way. NCCL calls, calls inside
``torch.compile`` or under a dispatch mode (fake tensors), and calls nested in a wrapped call go
straight to torch. DDP's bucket all-reduces are issued and waited for by its C++ reducer, which
never passes through Python: on gloo their bytes are unknown and their wait is not seen (with
NCCL the native core records both). A failure here never reaches the program: the original is
called as if the wrapper were not there, and the reason is logged.
"""

from __future__ import annotations

import functools
import inspect
import logging
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dlpt.capture.ranks.env import RankInfo, from_torch

__all__ = ["CollectiveHooks", "OP_PREFIX", "FUNCTIONS", "timed"]

log = logging.getLogger("dlpt")

OP_PREFIX = "c10d::_dlpt_"  # + "call_<n>" / "wait_<n>" (dlpt.capture.ranks.annotate reads them back)
MAX_SIGNATURES = 1024  # distinct signatures numbered (an op each); later ones share number 0
_MAX_PENDING = 4096  # asynchronous works remembered until waited for

# Function -> (parameters holding what is sent, parameters holding what is received).
_ROLES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "all_reduce": (("tensor",), ("tensor",)),
    "all_reduce_coalesced": (("tensors",), ("tensors",)),
    "all_gather": (("tensor",), ("tensor_list",)),
    "all_gather_into_tensor": (("input_tensor",), ("output_tensor",)),
    "all_gather_single": (("input_tensor",), ("output_tensor",)),
    "reduce_scatter": (("input_list",), ("output",)),
    "reduce_scatter_tensor": (("input",), ("output",)),
    "reduce_scatter_single": (("input",), ("output",)),
    "broadcast": (("tensor",), ("tensor",)),
    "reduce": (("tensor",), ("tensor",)),
    "all_to_all": (("input_tensor_list",), ("output_tensor_list",)),
    "all_to_all_single": (("input",), ("output",)),
    "gather": (("tensor",), ("gather_list",)),
    "scatter": (("scatter_list",), ("tensor",)),
    "barrier": ((), ()),
    "send": (("tensor",), ()),
    "isend": (("tensor",), ()),
    "recv": ((), ("tensor",)),
    "irecv": ((), ("tensor",)),
}
FUNCTIONS = tuple(_ROLES)

# c10's ScalarType names, as record_param_comms writes them (x.dtype of NCCL collectives).
_DTYPES = {
    "float32": "Float",
    "float64": "Double",
    "float16": "Half",
    "bfloat16": "BFloat16",
    "int64": "Long",
    "int32": "Int",
    "int16": "Short",
    "int8": "Char",
    "uint8": "Byte",
    "bool": "Bool",
}

_FIELDS = ("function", "dtype", "in_bytes", "out_bytes", "pg_name", "pg_desc", "world_size", "backend")

_lib: Any = None  # the torch.library.Library holding the ops (deleting it unregisters them)
_defined: dict[str, Any] = {}  # op name -> torch.ops.c10d.<name>
_define_lock = threading.Lock()
_local = threading.local()


@dataclass
class _Call:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    result: Any = None
    error: BaseException | None = None
    ran: bool = False


def _run_pending(sig: int) -> None:
    """The ops' body: run the call the wrapper left for this thread (an op takes no Python
    object, so it goes through a thread-local). Its exception is kept for the wrapper to raise
    as is, not as the dispatcher's wrapped error."""
    call: _Call = _local.call
    _local.call = None
    call.ran = True
    try:
        call.result = call.fn(*call.args, **call.kwargs)
    except BaseException as e:  # noqa: BLE001 - re-raised by the wrapper, unchanged
        call.error = e


def _op(kind: str, sig: int) -> Any:
    """``torch.ops.c10d._dlpt_<kind>_<sig>``, defined on first use (once per process: ops
    cannot be removed, and a later profile reuses them)."""
    global _lib
    name = f"_dlpt_{kind}_{sig}"
    op = _defined.get(name)
    if op is not None:
        return op
    import torch

    with _define_lock:
        if name not in _defined:
            if _lib is None:
                _lib = torch.library.Library("c10d", "FRAGMENT")  # type: ignore[no-untyped-call]  # torch untyped
            _lib.define(f"{name}(int sig) -> ()")
            _lib.impl(name, _run_pending, "CompositeExplicitAutograd")
            _defined[name] = getattr(torch.ops.c10d, name)
    return _defined[name]


def _tensors(v: Any) -> list[Any]:
    import torch

    if isinstance(v, torch.Tensor):
        return [v]
    if isinstance(v, (list, tuple)):
        return [t for t in v if isinstance(t, torch.Tensor)]
    return []


def _nbytes(values: list[Any]) -> int:
    return sum(int(t.numel()) * int(t.element_size()) for v in values for t in _tensors(v))


@dataclass
class CollectiveHooks:
    """The wrappers of one profile, and the signatures they numbered (:meth:`table`)."""

    _saved: list[tuple[Any, str, Any, Any]] = field(default_factory=list)  # (module, name, original, ours)
    _sigs: dict[tuple[Any, ...], int] = field(default_factory=dict)
    _table: list[dict[str, Any]] = field(default_factory=lambda: [{"function": "unknown"}])
    _pending: dict[int, int] = field(default_factory=dict)  # id(work) -> signature
    backends: set[str] = field(default_factory=set)
    rank: RankInfo | None = None  # the default group's rank while it existed (for mp.spawn-style jobs)

    def install(self) -> None:
        """Wrap torch.distributed's collectives (nothing when torch.distributed is unavailable)."""
        dist = sys.modules.get("torch.distributed")
        if dist is None or not dist.is_available():
            return
        c10d = dist.distributed_c10d
        self._note_default_backend()
        self._wrap_destroy(c10d, dist)
        for name in FUNCTIONS:
            original = getattr(c10d, name, None)
            if original is None:
                continue
            ours = self._wrap(name, original)
            for module in (c10d, dist):
                if getattr(module, name, None) is original:
                    setattr(module, name, ours)
                    self._saved.append((module, name, original, ours))
        work = c10d.Work
        wait = work.wait
        try:
            work.wait = self._wrap_wait(wait)
            self._saved.append((work, "wait", wait, work.wait))
        except (AttributeError, TypeError) as e:
            log.debug("cannot wrap Work.wait: %s", e)

    def remove(self) -> None:
        """Put torch's functions back (where nobody replaced ours since)."""
        for owner, name, original, ours in reversed(self._saved):
            if getattr(owner, name, None) is ours:
                setattr(owner, name, original)
        self._saved.clear()
        self._pending.clear()

    def table(self) -> list[dict[str, Any]]:
        """Signature number -> what the call moved (``function``, ``collective``, ``dtype``,
        ``in_bytes``, ``out_bytes``, ``pg_name``, ``pg_desc``, ``world_size``, ``backend``)."""
        return list(self._table)

    # -- the wrappers ----------------------------------------------------------------------

    def _wrap(self, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        try:
            params: inspect.Signature | None = inspect.signature(original)
        except (TypeError, ValueError):
            params = None

        @functools.wraps(original)
        def collective(*args: Any, **kwargs: Any) -> Any:
            described = self._signature(name, params, args, kwargs) if _free() else None
            if described is None:
                return original(*args, **kwargs)
            sig, asynchronous = described
            result = timed("call", sig, original, args, kwargs)
            if asynchronous:
                self._remember(result, sig)
            return result

        return collective

    def _note_default_backend(self) -> None:
        """Remember the default group's backend and rank while it exists: a script usually
        destroys its process group before the profile stops, and DDP's collectives never pass
        through Python."""
        dist = sys.modules.get("torch.distributed")
        try:
            if dist is not None and dist.is_available() and dist.is_initialized():
                self.backends.add(_backend(None))
                self.rank = from_torch() or self.rank
        except Exception as e:  # noqa: BLE001 - the backend is a detail of the header
            log.debug("dlpt: could not read the process group's backend: %s", e)

    def _wrap_destroy(self, c10d: Any, dist: Any) -> None:
        original = getattr(c10d, "destroy_process_group", None)
        if original is None:
            return

        @functools.wraps(original)
        def destroy_process_group(*args: Any, **kwargs: Any) -> Any:
            self._note_default_backend()
            return original(*args, **kwargs)

        for module in (c10d, dist):
            if getattr(module, "destroy_process_group", None) is original:
                module.destroy_process_group = destroy_process_group
                self._saved.append((module, "destroy_process_group", original, destroy_process_group))

    def _wrap_wait(self, original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def wait(work: Any, *args: Any, **kwargs: Any) -> Any:
            sig = self._pending.pop(id(work), None)
            if sig is None or not _free():
                return original(work, *args, **kwargs)
            return timed("wait", sig, original, (work, *args), kwargs)

        return wait

    def _remember(self, work: Any, sig: int) -> None:
        if work is None:
            return
        if len(self._pending) >= _MAX_PENDING:
            self._pending.clear()  # works never waited for: forget them rather than grow
        self._pending[id(work)] = sig

    def _signature(
        self, name: str, params: inspect.Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[int, bool] | None:
        """(number of this call's signature, whether it returns a work to wait for); None for a
        call torch should run unwrapped (an NCCL group: the native core records it)."""
        asynchronous = name in ("isend", "irecv")
        try:
            bound = params.bind(*args, **kwargs).arguments if params is not None else {}
            asynchronous = asynchronous or bool(bound.get("async_op"))
            group = bound.get("group")
            sent, received = _ROLES[name]
            ins = [bound.get(p) for p in sent]
            outs = [bound.get(p) for p in received]
            first = next((t for v in ins + outs for t in _tensors(v)), None)
            backend = _backend(group)
            self.backends.add(backend)
            # Device tensors go to NCCL (a group may hold gloo for CPU tensors and NCCL for CUDA
            # ones), which records itself; so does a barrier on an NCCL group.
            if (first is not None and first.device.type != "cpu") or (first is None and "nccl" in backend):
                return None
            dtype = str(first.dtype).removeprefix("torch.") if first is not None else ""
            pg = group if group is not None else _default_group()
            key = (
                name,
                _DTYPES.get(dtype, dtype),
                _nbytes(ins),
                _nbytes(outs),
                str(getattr(pg, "group_name", "") or ""),
                str(getattr(pg, "group_desc", "") or ""),
                int(pg.size()) if pg is not None else 0,
                backend,
            )
        except Exception as e:  # noqa: BLE001 - an odd call is still run, just not described
            log.debug("dlpt: could not describe the %s call: %s", name, e)
            return 0, asynchronous
        sig = self._sigs.get(key)
        if sig is None:
            if len(self._table) >= MAX_SIGNATURES:
                return 0, asynchronous
            sig = self._sigs[key] = len(self._table)
            self._table.append(dict(zip(_FIELDS, key, strict=True)))
        return sig, asynchronous


def _free() -> bool:
    """Whether a call may be wrapped: not nested in a wrapped call, not being compiled by
    Dynamo, not under a dispatch mode (fake tensors would meet an op they do not know)."""
    if getattr(_local, "depth", 0):
        return False
    try:
        import torch
        from torch.utils._python_dispatch import _get_current_dispatch_mode

        return not torch.compiler.is_compiling() and _get_current_dispatch_mode() is None
    except Exception as e:  # noqa: BLE001 - when in doubt, leave the call alone
        log.debug("dlpt: not wrapping a collective: %s", e)
        return False


def _backend(group: Any) -> str:
    import torch.distributed as dist

    return str(dist.get_backend(group)).lower()


def _default_group() -> Any:
    import torch.distributed as dist

    return dist.group.WORLD


def timed(op: str, sig: int, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run ``fn`` as the op ``c10d::_dlpt_<op>_<sig>``."""
    try:
        run = _op(op, sig)
    except Exception as e:  # noqa: BLE001 - torch.library refused: run the call plainly
        log.debug("dlpt: cannot define the op for a collective: %s", e)
        return fn(*args, **kwargs)
    call = _Call(fn, args, kwargs)
    _local.depth = getattr(_local, "depth", 0) + 1
    try:
        _local.call = call
        run(sig)
    except Exception as e:  # noqa: BLE001 - the dispatcher failed around the call: said below
        if not call.ran:
            log.debug("dlpt: the op did not run the collective: %s", e)
    finally:
        _local.depth -= 1
        _local.call = None
    if not call.ran:  # never lose the program's collective
        return fn(*args, **kwargs)
    if call.error is not None:
        raise call.error
    return call.result
