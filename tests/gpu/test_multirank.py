"""Two GPUs, NCCL, as a user runs them: ``torchrun --nproc_per_node=2 -m dlpt -o run.json
examples/ddp_train.py`` in DDP and FSDP2 modes, rank 1 sleeping before each backward.

Per rank: NCCL's kernels are communication (``comm_ns``) under the c10d op that issued them, which
says what it moved (bytes > 0, from torch's record_param_comms); the exposed communication is at
most the communication; every nanosecond CUPTI delivered is attributed (as in
test_attribution.py). Across ranks: rank 0's report names rank 1 the straggler (its collective
kernels are the short ones: the others spin in theirs until it arrives), and so does
``--load 'run.rank*.json'``. Each launch takes well under 90 s on an H200 pair.

Needs 2 GPUs (device kind nvidia-h200-x2). The environment passes through unchanged (the
machine sets NCCL_NVLS_ENABLE=0: NVLink multicast stays off).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from dlpt.model.comm_names import family, is_comm_kernel

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 GPUs"),
]

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = str(REPO / "examples" / "ddp_train.py")
GPU_KEYS = ("gpu_ns", "copy_ns", "memset_ns")


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(REPO)) if p)
    env.setdefault("COLUMNS", "160")
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=170, check=False
    )


@pytest.fixture(scope="module", params=["ddp", "fsdp2"])
def job(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, str]:
    mode = request.param
    where = tmp_path_factory.mktemp(mode)
    args = ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m", "dlpt"]
    args += ["--skip-first", "5", "-o", str(where / "run.json"), EXAMPLE, "--mode", mode, "--steps", "15"]
    args += ["--straggle", "1", "--straggle-ms", "100"]
    p = _run(args, where)
    assert p.returncode == 0, p.stderr[-4000:]
    return mode, where, p.stdout


def _nodes(where: Path, rank: int) -> tuple[list[dict], dict]:
    d = json.loads((where / f"run.rank{rank}.json").read_text())
    return d["nodes"], d["meta"]


def _nearest_op(nodes: list[dict], node: dict) -> dict | None:
    i = node["parent"]
    while i >= 0:
        if nodes[i]["kind"] == "op":
            return nodes[i]
        i = nodes[i]["parent"]
    return None


def test_collective_kernels_are_communication_under_c10d_ops_with_bytes(job: tuple[str, Path, str]) -> None:
    mode, where, _ = job
    want = {"allreduce"} if mode == "ddp" else {"allgather", "reduce_scatter"}
    for rank in (0, 1):
        nodes, meta = _nodes(where, rank)
        assert meta["distributed"]["rank"] == rank and "nccl" in meta["distributed"]["backends"]
        kernels = [n for n in nodes if n["kind"] == "kernel"]
        comm = [n for n in kernels if is_comm_kernel(n["x"].get("full_name", n["name"]))]
        assert comm and all(n["m"]["comm_ns"] == n["m"]["gpu_ns"] > 0 for n in comm)
        seen = set()
        for k in comm:
            op = _nearest_op(nodes, k)
            assert op is not None and op["name"].startswith(("c10d::", "_c10d_functional::")), op
            assert op["x"]["collective"] and op["x"]["dtype"]
            fam = family(op["x"]["collective"])
            if fam != "barrier":  # NCCL's barrier is a 1-byte allreduce c10d records without a size
                assert op["m"].get("comm_in_bytes", 0) > 0 or op["m"].get("comm_out_bytes", 0) > 0, op
            seen.add(fam)
        assert want <= seen, seen


def test_exposed_communication_is_at_most_the_communication(job: tuple[str, Path, str]) -> None:
    _, where, _ = job
    for rank in (0, 1):
        _, meta = _nodes(where, rank)
        comm, exposed = meta["gpu_comm_ns"], meta["gpu_comm_exposed_ns"]
        assert comm and sum(comm.values()) > 0
        assert all(exposed.get(d, 0) <= comm[d] for d in comm), (comm, exposed)


def test_every_delivered_nanosecond_is_attributed_on_each_rank(job: tuple[str, Path, str]) -> None:
    _, where, _ = job
    for rank in (0, 1):
        nodes, meta = _nodes(where, rank)
        delivered = meta["capture"]["delivered_gpu_ns"]
        assert delivered > 0
        assert sum(n["m"].get(k, 0) for n in nodes for k in GPU_KEYS) == delivered


def test_rank_0_names_the_straggler(job: tuple[str, Path, str]) -> None:
    _, where, out = job
    assert out.count("dlpt  across ranks") == 1, out[-3000:]
    assert "straggler: rank 1" in out and "straggler: rank 0" not in out, out[-3000:]
    p = _run(["-m", "dlpt", "--load", str(where / "run.rank*.json")], where)
    assert p.returncode == 0 and "straggler: rank 1" in p.stdout, p.stderr
