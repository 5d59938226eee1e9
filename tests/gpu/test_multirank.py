"""Several GPUs, NCCL, as a user runs them: ``torchrun --nproc_per_node=N -m dlpt -o run.json
examples/ddp_train.py`` in DDP and FSDP2 modes (N: every GPU of the machine, 2 or 4), once with
rank 1 sleeping 100 ms before each backward and once with every rank doing the same work.

Per rank: NCCL's kernels are communication (``comm_ns``) under the c10d op that issued them, which
says what it moved (bytes > 0, from torch's record_param_comms); the exposed communication is at
most the communication; every nanosecond CUPTI delivered is attributed, on the counted steps'
nodes (``m``) or on the work outside them (``o``: set-up, warm-up, the end of the run), as in
test_attribution.py. Across ranks: rank 0's report names rank 1 the straggler, the others'
wait within 10% of the 100 ms it slept, and its ``time.sleep`` line as what it did meanwhile;
``--load 'run.rank*.json'`` says the same; the symmetric job names no straggler. Each launch
takes well under 90 s on an H100 pair.

Needs 2 GPUs or more (device kind nvidia-h100-x2 / x4). The environment passes through unchanged
(the machine sets NCCL_NVLS_ENABLE=0: NVLink multicast stays off).
"""

from __future__ import annotations

import json
import os
import re
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
RANKS = min(torch.cuda.device_count(), 4)
SLEEP_MS = 100.0
_EXAMPLE_LINES = Path(EXAMPLE).read_text().splitlines()
SLEEP_LINE = [  # the sleep before the backward (--straggle-at's default): the second
    i for i, text in enumerate(_EXAMPLE_LINES, 1) if "time.sleep(args.straggle_ms" in text
][-1]


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(REPO)) if p)
    env.setdefault("COLUMNS", "160")
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=170, check=False
    )


def _launch(where: Path, mode: str, *extra: str) -> str:
    args = ["-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={RANKS}", "-m", "dlpt"]
    args += ["--skip-first", "5", "-o", str(where / "run.json"), "--html", str(where / "run.html")]
    args += [EXAMPLE, "--mode", mode, "--steps", "25", *extra]
    p = _run(args, where)
    assert p.returncode == 0, p.stderr[-4000:]
    return p.stdout


@pytest.fixture(scope="module", params=["ddp", "fsdp2"])
def job(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, str]:
    mode = request.param
    where = tmp_path_factory.mktemp(mode)
    out = _launch(where, mode, "--straggle", "1", "--straggle-ms", str(SLEEP_MS))
    return mode, where, out


@pytest.fixture(scope="module", params=["ddp", "fsdp2"])
def symmetric(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path, str]:
    mode = request.param
    where = tmp_path_factory.mktemp(f"{mode}_sym")
    return (
        mode,
        where,
        _launch(where, mode, "--layers", "8", "--width", "1024", "--seq", "512", "--batch", "8"),
    )


def _nodes(where: Path, rank: int) -> tuple[list[dict], dict]:
    d = json.loads((where / f"run.rank{rank}.json").read_text())
    return d["nodes"], d["meta"]


def _both(n: dict) -> dict[str, int]:
    """A node's metrics of the counted steps and of the work outside them, together."""
    out = dict(n.get("m", {}))
    for k, v in n.get("o", {}).items():
        out[k] = out.get(k, 0) + v
    return out


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
    for rank in range(RANKS):
        nodes, meta = _nodes(where, rank)
        assert meta["distributed"]["rank"] == rank and "nccl" in meta["distributed"]["backends"]
        kernels = [n for n in nodes if n["kind"] == "kernel"]
        comm = [n for n in kernels if is_comm_kernel(n["x"].get("full_name", n["name"]))]
        # A kernel that ran only outside the counted steps (set-up, warm-up) has its time on ``o``.
        assert comm and all(_both(n)["comm_ns"] == _both(n)["gpu_ns"] > 0 for n in comm)
        seen = set()
        for k in comm:
            op = _nearest_op(nodes, k)
            assert op is not None and op["name"].startswith(("c10d::", "_c10d_functional::")), op
            assert op["x"]["collective"] and op["x"]["dtype"]
            fam = family(op["x"]["collective"])
            if fam != "barrier":  # NCCL's barrier is a 1-byte allreduce c10d records without a size
                moved = _both(op)
                assert moved.get("comm_in_bytes", 0) > 0 or moved.get("comm_out_bytes", 0) > 0, op
            seen.add(fam)
        assert want <= seen, seen


def test_the_tracer_and_the_session_agree_on_which_kernels_are_nccls(job: tuple[str, Path, str]) -> None:
    # The native classifier (csrc/cupti/comm_kernels.h) splits exposed from overlapped
    # communication; dlpt.model.comm_names marks the tree's nodes: on the names this NCCL really
    # ran (tests/native/test_comm_kernels.py holds them to NCCL's source), they must agree.
    from dlpt.capture.native import core

    seam = core()._testing
    _, where, _ = job
    for rank in range(RANKS):
        nodes, meta = _nodes(where, rank)
        names = {n.get("x", {}).get("full_name", n["name"]) for n in nodes if n["kind"] == "kernel"}
        verdicts = {name: (seam.comm_kernel(name)[1], is_comm_kernel(name)) for name in names}
        assert any(native for native, _ in verdicts.values()) and sum(meta["gpu_comm_ns"].values()) > 0
        assert all(native == ours for native, ours in verdicts.values()), {
            name: v for name, v in verdicts.items() if v[0] != v[1]
        }


def test_exposed_communication_is_at_most_the_communication(job: tuple[str, Path, str]) -> None:
    _, where, _ = job
    for rank in range(RANKS):
        _, meta = _nodes(where, rank)
        comm, exposed = meta["gpu_comm_ns"], meta["gpu_comm_exposed_ns"]
        assert comm and sum(comm.values()) > 0
        assert all(exposed.get(d, 0) <= comm[d] for d in comm), (comm, exposed)
        for dev, rows in meta["gpu_steps"].items():
            # Per step: communication inside the step, exposed part of it, busy a union.
            # A step without communication has no comm keys (docs/session-format.md).
            assert rows and all(
                r.get("exposed_ns", 0) <= r.get("comm_ns", 0) <= r["busy_ns"] <= r["span_ns"] for r in rows
            ), rows
            assert sum(r.get("comm_ns", 0) for r in rows) == comm[dev]


def test_every_delivered_nanosecond_is_attributed_on_each_rank(job: tuple[str, Path, str]) -> None:
    _, where, _ = job
    for rank in range(RANKS):
        nodes, meta = _nodes(where, rank)
        delivered = meta["capture"]["delivered_gpu_ns"]
        assert delivered > 0
        assert sum(_both(n).get(k, 0) for n in nodes for k in GPU_KEYS) == delivered


def test_every_rank_records_the_same_collectives_in_the_same_order(job: tuple[str, Path, str]) -> None:
    # The wait from arrivals rests on this: the k-th collective kernel of a step is the same
    # collective on every rank (dlpt.analysis.ranks.arrivals), and each carries its exposure.
    _, where, out = job
    per_rank = []
    for rank in range(RANKS):
        g = _nodes(where, rank)[1]["gpu_collectives"]
        assert len(g["epoch"]) == len(g["dur_ns"]) == len(g["exposed"]) > 0
        assert all(d > 0 for d in g["dur_ns"]) and all(len(bytes.fromhex(x)) == 16 for x in g["exposed"])
        steps: dict[int, list[str]] = {}
        for e, n in zip(g["epoch"], g["name"], strict=True):
            steps.setdefault(e, []).append(g["names"][n])
        assert all(is_comm_kernel(name) for names in steps.values() for name in names)
        per_rank.append(steps)
    assert all(steps == per_rank[0] for steps in per_rank), [sorted(s) for s in per_rank]
    # The report's wait rests on them (its rule, printed under the ranks table, says so).
    assert "waited in collectives for the last rank's to start" in " ".join(out.split()), out[-3000:]


def _waited_ms(out: str) -> float:
    m = re.search(r"straggler: rank 1 - the other ranks waited ([\d.]+)(ms|s) per step", out)
    assert m, out[-3000:]
    return float(m.group(1)) * (1000.0 if m.group(2) == "s" else 1.0)


def _own_line_ms(out: str) -> float:
    m = re.search(rf"its line: ddp_train.py:{SLEEP_LINE} main \(\+([\d.]+)(ms|s) host\)", out)
    assert m, out[-3000:]
    return float(m.group(1)) * (1000.0 if m.group(2) == "s" else 1.0)


def test_rank_0_names_the_straggler_its_wait_and_its_line(job: tuple[str, Path, str]) -> None:
    _, where, out = job
    assert out.count("dlpt  across ranks") == 1, out[-3000:]
    assert "straggler: rank 1" in out and "straggler: rank 0" not in out, out[-3000:]
    # Its own line is the sleep, to 10%. The others' wait also holds what their hosts did
    # meanwhile (a host slower or faster than the straggler's on the shared lines; the report
    # says by how much): within half the sleep.
    assert abs(_own_line_ms(out) - SLEEP_MS) <= 0.1 * SLEEP_MS, out[-3000:]
    assert abs(_waited_ms(out) - SLEEP_MS) <= 0.5 * SLEEP_MS, out[-3000:]
    p = _run(["-m", "dlpt", "--load", str(where / "run.rank*.json")], where)
    assert p.returncode == 0 and "straggler: rank 1" in p.stdout, p.stderr


def test_ranks_doing_the_same_work_have_no_straggler(symmetric: tuple[str, Path, str]) -> None:
    _, _, out = symmetric
    assert "dlpt  across ranks" in out and not re.search(r"straggler: rank \d", out), out[-3000:]
    # Either the ranks' waits are close, or a rank ran the same lines slower (the machine).
    close = r"no straggler: ranks' waits per step within|no straggler in the code: rank \d ran"
    assert re.search(close, out), out[-3000:]


def test_one_html_page_for_all_ranks(job: tuple[str, Path, str]) -> None:
    _, where, _ = job
    assert sorted(p.name for p in where.glob("*.html")) == ["run.html"]
    page = (where / "run.html").read_text()
    assert '"format":"dlpt-ranks-model"' in page and "straggler" in page


def test_the_page_lines_up_every_ranks_gpu_streams(tmp_path: Path) -> None:
    # --timeline under the launcher, gathered through the store (no -o): rank 0's one page draws
    # every rank's GPU streams under the job's steps, the NCCL kernels among them.
    args = ["-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={RANKS}", "-m", "dlpt"]
    args += ["--skip-first", "3", "--timeline", "2", "--html", str(tmp_path / "run.html")]
    p = _run([*args, EXAMPLE, "--mode", "ddp", "--steps", "12"], tmp_path)
    assert p.returncode == 0, p.stderr[-4000:]
    page = (tmp_path / "run.html").read_text()
    found = re.search(r'<script type="application/json" id="dlpt-data">(.*?)</script>', page, re.S)
    assert found, page[:2000]
    tl = json.loads(found.group(1))["timeline"]
    assert tl is not None and "one host's clock" in tl["note"]
    lanes = [name for name, kind in tl["lanes"] if kind == "stream"]
    assert {int(re.match(r"rank (\d+)", n).group(1)) for n in lanes} == set(range(RANKS)), lanes  # type: ignore[union-attr]
    names = {tl["strings"][row[4]] for row in tl["slices"]}
    assert any(is_comm_kernel(n) for n in names), sorted(names)[:20]
    assert len(tl["steps"]) == 2
