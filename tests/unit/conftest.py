"""Synthetic sessions and golden-file helpers for the unit tests.

Sessions are built as plain dicts (the documented format) so the tests exercise validation
exactly as a loaded file would. They carry the source text of the fake user files in
``meta.sources``, as a profile saves it, so frames render with their source text without any
file on disk.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from dlpt.model.session import VERSION, Session

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("DLPT_UPDATE_GOLDEN") == "1"

TRAIN = "/home/user/proj/train.py"
MODEL = "/home/user/proj/model.py"
SITE = "/opt/venv/lib/python3.11/site-packages/torch"
MODULE = f"{SITE}/nn/modules/module.py"
LINEAR = f"{SITE}/nn/modules/linear.py"
ADAM = f"{SITE}/optim/adam.py"

SOURCES = {
    TRAIN: {
        38: "def train_step(model, opt, batch):",
        40: '    x = batch.to("cuda")',
        43: "    loss = model(x).square().mean()",
        44: "    loss.backward()",
        45: "    opt.step()",
        47: '    print(f"loss {loss.item():.4f}")',
        60: "        train_step(model, opt, batch)",
    },
    MODEL: {
        20: "        x = self.fc1(x)",
        21: "        x = torch.relu(x)",
        22: "        return self.fc2(x)",
    },
}


def sources_meta() -> dict[str, dict[str, str]]:
    """``meta.sources`` for the fake user files."""
    return {path: {str(n): text for n, text in lines.items()} for path, lines in SOURCES.items()}


class Builder:
    """Appends nodes to a node table; every method returns the new node's id."""

    def __init__(self) -> None:
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
            "m": m,
        }
        if x is not None:
            node["x"] = x
        self.nodes.append(node)
        return node["id"]

    def frame(self, parent: int, file: str, line: int, func: str, **m: int) -> int:
        return self.add(parent, "frame", func, file, line, **m)

    def op(self, parent: int, name: str, calls: int = 1, cpu_ns: int = 0, **m: int) -> int:
        return self.add(parent, "op", name, calls=calls, cpu_ns=cpu_ns, **m)

    def phase(self, parent: int, name: str) -> int:
        return self.add(parent, "phase", name)

    def kernel(
        self,
        parent: int,
        name: str,
        n: int,
        ns: int,
        grid=(1, 1, 1),
        block=(128, 1, 1),
        regs: int = 32,
        smem: int = 0,
    ) -> int:
        x = {
            "full_name": f"_Z{len(name)}{name}v",
            "device": 0,
            "grid": list(grid),
            "block": list(block),
            "regs": regs,
            "smem_static": smem,
            "smem_dynamic": 0,
        }
        return self.add(
            parent,
            "kernel",
            name,
            x=x,
            kernels=n,
            gpu_ns=ns,
            min_ns=ns // n * 9 // 10,
            max_ns=ns // n * 12 // 10,
        )

    def memcpy(self, parent: int, direction: str, host_mem: str | None, n: int, ns: int, nbytes: int) -> int:
        x = {"direction": direction, "device": 0}
        if host_mem:
            x["host_mem"] = host_mem
        return self.add(
            parent,
            "memcpy",
            f"[memcpy {direction}]",
            x=x,
            copies=n,
            copy_ns=ns,
            copy_bytes=nbytes,
            min_ns=ns // n,
            max_ns=ns // n,
        )

    def dict(self, meta: dict | None = None) -> dict[str, Any]:
        """The session as a dict; its meta gets the fake files' source text unless it has some."""
        meta = {"sources": sources_meta(), **(meta or {})}
        return {"format": "dlpt-session", "version": VERSION, "meta": meta, "nodes": self.nodes}

    def session(self, meta: dict | None = None) -> Session:
        return Session.from_dict(self.dict(meta))


def gpu_meta(steps: int = 4) -> dict[str, Any]:
    return {
        "argv": ["train.py", "--batch", "64"],
        "python": "3.11.7",
        "torch": "2.13.0",
        "dlpt": "0.1.0",
        "started_at": "2025-01-01T12:00:00Z",
        "wall_ns": 40_000_000 * steps,
        "devices": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "capability": "9.0"}],
        "gpu": {"enabled": True, "reason": None},
        "steps": {
            "profiled": steps,
            "seen": steps + 2,
            "skip_first": 2,
            "active": steps,
            "source": "optimizer",
        },
        "step_wall_ns": [39_000_000, 40_000_000, 41_000_000, 40_000_000][:steps],
        "gpu_busy_ns": {"0": 31_000_000 * steps},
        "api": [
            {
                "name": "cudaLaunchKernel",
                "calls": 40 * steps,
                "total_ns": 160_000 * steps,
                "min_ns": 2_500,
                "max_ns": 12_000,
            },
            {
                "name": "cudaMemcpyAsync",
                "calls": 2 * steps,
                "total_ns": 30_000 * steps,
                "min_ns": 9_000,
                "max_ns": 21_000,
            },
            {
                "name": "cudaStreamSynchronize",
                "calls": 2 * steps,
                "total_ns": 2_100_000 * steps,
                "min_ns": 50_000,
                "max_ns": 2_000_000,
            },
        ],
        "dropped": {"activity_records": 0, "correlations": 0},
        "unattributed": {"gpu_ns": 120_000, "records": 3},
        "compile": [],
    }


def build_gpu(steps: int = 4) -> Builder:
    """One training step of a 2-layer MLP: forward + grafted backward, copies, syncs, optimizer,
    library frames under torch's site-packages and the stdlib, duplicate sibling frames."""
    s = steps
    b = Builder()
    top = b.frame(0, "<frozen runpy>", 88, "_run_code")
    mod = b.frame(top, TRAIN, 60, "<module>")
    # Two frames on the same line (different bytecode offsets) must merge.
    step_a = b.frame(mod, TRAIN, 43, "train_step")
    step_b = b.frame(mod, TRAIN, 43, "train_step", api_ns=1_000 * s)
    for step, fc, line in ((step_a, "fc1", 20), (step_b, "fc2", 22)):
        call = b.frame(step, MODULE, 1751, "_wrapped_call_impl")
        impl = b.frame(call, MODULE, 1762, "_call_impl")
        fwd = b.frame(impl, MODEL, line, "forward")
        lcall = b.frame(fwd, MODULE, 1751, "_wrapped_call_impl")
        lin = b.frame(b.frame(lcall, MODULE, 1762, "_call_impl"), LINEAR, 125, "forward")
        op = b.op(lin, "aten::linear", calls=s, cpu_ns=30_000 * s, api_ns=8_000 * s)
        f = b.phase(op, "<forward>")
        addmm = b.op(f, "aten::addmm", calls=s, cpu_ns=12_000 * s)
        b.kernel(
            addmm,
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
            s,
            6_000_000 * s,
            grid=(132, 1, 1),
            block=(384, 1, 1),
            regs=168,
            smem=232_448,
        )
        bw = b.phase(op, "<backward>")
        ab = b.op(bw, "AddmmBackward0", calls=s, cpu_ns=9_000 * s)
        mm = b.op(ab, "aten::mm", calls=2 * s, cpu_ns=15_000 * s)
        b.kernel(
            mm,
            "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x128x64",
            2 * s,
            9_000_000 * s,
            grid=(66, 2, 1),
            block=(384, 1, 1),
            regs=168,
            smem=232_448,
        )
        if fc == "fc1":
            relu = b.op(b.frame(step, MODEL, 21, "forward"), "aten::relu", calls=s, cpu_ns=5_000 * s)
            cm = b.op(b.phase(relu, "<forward>"), "aten::clamp_min", calls=s, cpu_ns=4_000 * s)
            b.kernel(
                cm,
                "vectorized_elementwise_kernel<4, clamp_min_scalar_kernel_impl>",
                s,
                400_000 * s,
                grid=(1024, 1, 1),
                block=(128, 1, 1),
                regs=24,
            )
    to = b.op(b.frame(mod, TRAIN, 40, "train_step"), "aten::to", calls=s, cpu_ns=3_000 * s)
    cp = b.op(
        b.op(b.phase(to, "<forward>"), "aten::_to_copy", calls=s), "aten::copy_", calls=s, cpu_ns=6_000 * s
    )
    b.memcpy(cp, "HtoD", "pageable", s, 1_500_000 * s, 16 * 1024 * 1024 * s)
    b.add(cp, "sync", "[sync cudaMemcpyAsync]", syncs=s, sync_ns=1_600_000 * s)
    opt = b.frame(b.frame(mod, TRAIN, 45, "step"), ADAM, 213, "step")
    fe = b.op(opt, "aten::_foreach_add_", calls=s, cpu_ns=40_000 * s)
    b.kernel(
        fe,
        "multi_tensor_apply_kernel<TensorListMetadata<2>, BinaryOpListAlphaFunctor>",
        4 * s,
        2_000_000 * s,
        grid=(320, 1, 1),
        block=(512, 1, 1),
        regs=40,
    )
    b.add(fe, "memset", "[memset]", memsets=s, memset_ns=50_000 * s)
    item = b.op(b.frame(mod, TRAIN, 47, "train_step"), "aten::item", calls=s, cpu_ns=2_000 * s)
    b.memcpy(b.op(item, "aten::_local_scalar_dense", calls=s), "DtoH", "pinned", s, 3_000 * s, 4 * s)
    b.add(item, "sync", "[sync cudaStreamSynchronize]", syncs=s, sync_ns=500_000 * s)
    sc = b.add(mod, "scope", "data_loading", calls=s, cpu_ns=0)
    b.op(sc, "aten::cat", calls=s, cpu_ns=900_000 * s)
    unk = b.add(0, "thread", "<unknown>")
    b.kernel(unk, "elementwise_kernel<128, 2>", 3, 120_000, grid=(16, 1, 1), block=(128, 1, 1))
    return b


def make_console(width: int = 100, **kw: Any) -> Console:
    """The golden console: fixed width, no colour, not a terminal, recording."""
    return Console(
        width=width,
        color_system=None,
        force_terminal=False,
        record=True,
        file=open(os.devnull, "w", encoding="utf-8"),
        **kw,
    )


def render_text(renderable: Any, width: int = 100, **kw: Any) -> str:
    console = make_console(width, **kw)
    console.print(renderable)
    # rich pads table titles and panels to the width; trailing blanks are noise in goldens.
    return "\n".join(line.rstrip() for line in console.export_text().splitlines()) + "\n"


def check_golden(name: str, text: str) -> None:
    """Compare ``text`` with tests/unit/golden/NAME.txt (DLPT_UPDATE_GOLDEN=1 rewrites it)."""
    path = GOLDEN / f"{name}.txt"
    if UPDATE or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if not UPDATE:
            pytest.fail(f"golden file {path} was missing and has been written; re-run")
    expected = path.read_text(encoding="utf-8")
    assert text == expected, (
        f"render differs from {path}; inspect and re-run with DLPT_UPDATE_GOLDEN=1 to accept:\n" + text
    )


class Helpers:
    """Namespace handed to tests through the ``h`` fixture (works under any import mode)."""

    Builder = Builder
    build_gpu = staticmethod(build_gpu)
    gpu_meta = staticmethod(gpu_meta)
    render_text = staticmethod(render_text)
    check_golden = staticmethod(check_golden)
    make_console = staticmethod(make_console)
    TRAIN, MODEL, MODULE, LINEAR, ADAM = TRAIN, MODEL, MODULE, LINEAR, ADAM


@pytest.fixture
def h() -> type[Helpers]:
    return Helpers
