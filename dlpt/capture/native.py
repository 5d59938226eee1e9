"""The sole importer of the native extension ``dlpt._C``, and the translation of what it exports
into the session format (docs/session-format.md).

``import dlpt`` must work everywhere (no GPU, no CUDA): the extension is loaded on first use and a
missing or broken build becomes a :class:`~dlpt.errors.NativeUnavailableError` that says how to
build it.
"""

from __future__ import annotations

import glob
import os
import re
import site
from types import ModuleType
from typing import Any

from dlpt.capture.kernel_names import shorten_kernel_name
from dlpt.errors import NativeUnavailableError

_module: ModuleType | None = None


def core() -> ModuleType:
    """Return ``dlpt._C``, importing torch first (the extension links against its libraries)."""
    global _module
    if _module is None:
        try:
            import torch  # noqa: F401  (loads libtorch_cpu/libc10 that _C needs)

            from dlpt import _C  # type: ignore[attr-defined]  # a compiled module, no stub
        except ImportError as e:
            raise NativeUnavailableError(
                f"dlpt's native extension is not built or does not match this torch ({e}).\n"
                "Build it in this environment with: pip install --no-build-isolation -e ."
            ) from None
        _module = _C
    return _module


def cupti_candidates() -> list[str]:
    """Where to look for libcupti when the process has not loaded one yet, in order.

    DLPT_CUPTI_PATH first (an explicit override), then the copy shipped with torch's CUDA wheels
    (site-packages/nvidia/cu13|cu12/lib, nvidia/cuda_cupti/lib), then the CUDA toolkit.
    """
    out: list[str] = []
    override = os.environ.get("DLPT_CUPTI_PATH")
    if override:
        out.append(override)
    roots = [*site.getsitepackages(), site.getusersitepackages()]
    for root in roots:
        for sub in ("cu13", "cu12", "cuda_cupti"):
            out += sorted(glob.glob(os.path.join(root, "nvidia", sub, "lib", "libcupti.so*")))
    for home in filter(None, [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]):
        for sub in ("extras/CUPTI/lib64", "lib64", "lib"):
            out += sorted(glob.glob(os.path.join(home, sub, "libcupti.so*")))
    return list(dict.fromkeys(out))  # first occurrence of each, in order


_VERSION_SUFFIX = re.compile(r"_v\d+$")


def api_display_name(name: str) -> str:
    """cudaLaunchKernel_v7000 -> cudaLaunchKernel (CUPTI's callback names carry an API version)."""
    return _VERSION_SUFFIX.sub("", name)


# Metric tuple from the core: calls, cpu_ns, gpu_ns, count, bytes, sync_ns, api_ns, min_ns, max_ns.
def _metrics(kind: str, t: tuple[int, ...]) -> dict[str, int]:
    calls, cpu, gpu, count, nbytes, sync, api, mn, mx = t
    if kind == "kernel":
        m = {"gpu_ns": gpu, "kernels": count, "min_ns": mn, "max_ns": mx}
    elif kind == "memcpy":
        m = {"copy_ns": gpu, "copies": count, "copy_bytes": nbytes, "min_ns": mn, "max_ns": mx}
    elif kind == "memset":
        m = {"memset_ns": gpu, "memsets": count, "min_ns": mn, "max_ns": mx}
    elif kind == "sync":
        m = {"sync_ns": sync, "syncs": count}
    else:
        m = {"calls": calls, "cpu_ns": cpu}
    m["api_ns"] = api
    return {k: v for k, v in m.items() if v}


def to_nodes(raw: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """Convert the core's node tuples into session nodes."""
    nodes: list[dict[str, Any]] = []
    for nid, parent, kind, name, file, line, metrics, extras in raw:
        node: dict[str, Any] = {
            "id": nid,
            "parent": parent,
            "kind": kind,
            "name": name,
            "file": file,
            "line": line,
            "m": _metrics(kind, metrics),
        }
        x = {k: (list(v) if isinstance(v, tuple) else v) for k, v in extras.items()}
        if kind == "kernel":
            x["full_name"] = name
            node["name"] = shorten_kernel_name(name)
        elif kind == "sync":
            node["name"] = "[sync " + api_display_name(name[len("[sync ") : -1]) + "]"
        if x:
            node["x"] = x
        nodes.append(node)
    return nodes


def api_table(raw: list[tuple[str, int, int, int, int]]) -> list[dict[str, Any]]:
    """CUDA API call statistics, one row per function (versions merged), busiest first."""
    rows: dict[str, dict[str, Any]] = {}
    for name, calls, total, mn, mx in raw:
        key = api_display_name(name)
        r = rows.setdefault(key, {"name": key, "calls": 0, "total_ns": 0, "min_ns": mn, "max_ns": 0})
        r["calls"] += calls
        r["total_ns"] += total
        r["min_ns"] = min(r["min_ns"], mn)
        r["max_ns"] = max(r["max_ns"], mx)
    return sorted(rows.values(), key=lambda r: -r["total_ns"])
