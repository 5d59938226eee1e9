"""What travels from each rank to rank 0: a bounded summary of its session (totals conserved,
node count capped, sources cut to the kept lines) through a real TCPStore on localhost, collected
within a bounded wait that names the ranks that never sent."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import pytest

from dlpt.analysis.ranks import summary as rank_summary
from dlpt.cli.rank_store import RankStore, connect
from dlpt.errors import SessionFormatError
from dlpt.model.session import Session
from tests import rank_sessions as R


def _totals(s: Session) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in s.nodes:
        for field in ("m", "o"):
            for k, v in (n.get(field) or {}).items():
                out[k] = out.get(k, 0) + v
    return out


def _wide(n: int) -> Session:
    """A session with ``n`` frame lines of decreasing cost, each with a kernel under it."""
    s = R.ddp_gpu(0, 2)
    nodes = s.nodes
    for i in range(n):
        f = len(nodes)
        nodes.append(
            {"id": f, "parent": 0, "kind": "frame", "name": "f", "file": R.TRAIN, "line": 100 + i, "m": {}}
        )
        nodes.append(
            {
                "id": f + 1,
                "parent": f,
                "kind": "kernel",
                "name": f"k{i}",
                "file": "",
                "line": 0,
                "m": {"gpu_ns": 1000 + i, "kernels": 1},
            }
        )
    s.meta["sources"][R.TRAIN].update({str(100 + i): f"line {i}" for i in range(n)})
    return Session.from_dict(s.to_dict())


def test_a_summary_keeps_the_totals_and_is_bounded() -> None:
    s = _wide(3000)
    small = rank_summary.summarize(s, max_nodes=500)
    assert len(small.nodes) <= 500 < len(s.nodes)
    assert _totals(small) == _totals(s)  # folded into the nearest kept ancestor, nothing lost
    info = small.meta["rank_summary"]
    assert info["nodes"] == len(s.nodes) and info["kept"] == len(small.nodes) and info["folded"] > 0
    kept = {str(n["line"]) for n in small.nodes if n["kind"] == "frame" and n["file"] == R.TRAIN}
    assert set(small.meta["sources"][R.TRAIN]) == kept  # only the kept lines' text travels
    sent = rank_summary.decode(rank_summary.encode(s, max_nodes=500), "test")
    assert len(sent.session.nodes) <= 500 and _totals(sent.session) == _totals(s)
    # Every line travels with its own cost, the small ones too (the tree folds, the lines do not).
    assert len(sent.labels) == 3000 + 4 and int(sent.full_values()[:, 0].sum()) == sum(
        n["m"].get("gpu_ns", 0) for n in s.nodes
    )


def test_a_small_session_is_kept_whole() -> None:
    s = R.ddp_gpu(1, 2)
    small = rank_summary.summarize(s)
    assert len(small.nodes) == len(s.nodes) and small.meta["rank_summary"]["folded"] == 0


def test_garbage_is_not_a_summary() -> None:
    import zlib

    with pytest.raises(SessionFormatError, match="not a rank summary"):
        rank_summary.decode(b"not zlib", "rank 3's summary")
    good = zlib.decompress(rank_summary.encode(R.ddp_gpu(1, 2)))
    for bad in (good[:-8], b"x" + good[1:], good[:-1] + bytes([good[-1] ^ 0x80])):
        with pytest.raises(SessionFormatError, match="rank 3's summary"):
            rank_summary.decode(zlib.compress(bad), "rank 3's summary")


@pytest.fixture
def store() -> Any:
    from torch.distributed import TCPStore

    return TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)


def test_rank_0_collects_what_arrives_and_names_who_never_sent(store: Any) -> None:
    rs = RankStore(store, "run-1/0")
    n0 = rs.finish_number(0)
    late = threading.Timer(0.3, lambda: rs.publish(2, R.ddp_gpu(2, 4)))
    rs.publish(1, R.ddp_gpu(1, 4))
    late.start()
    waited: list[list[int]] = []
    t0 = time.monotonic()
    got = rs.collect([1, 2, 3], n0, timeout_s=2.0, on_wait=waited.append, poll_s=0.05)
    late.join()
    assert sorted(got.summaries) == [1, 2] and list(got.missing) == [3]
    assert "no summary arrived in 2 s" in got.missing[3]
    assert 1.9 <= time.monotonic() - t0 < 5  # bounded by the timeout, not by the missing rank
    assert waited and 3 in waited[0]
    assert got.summaries[2].session.meta["distributed"]["rank"] == 2
    assert not store.check([f"dlpt/run-1/0/{n0}/rank1"])  # read keys are deleted


def test_a_second_profile_pairs_with_the_second_report(store: Any) -> None:
    rs = RankStore(store, "run-2/0")
    rs.publish(1, R.ddp_gpu(1, 2, comm_ns=1_000_000))
    rs.publish(1, R.ddp_gpu(1, 2, comm_ns=5_000_000))
    assert rs.finish_number(0) == 1
    first = rs.collect([1], 1, timeout_s=1.0)
    assert rs.finish_number(0) == 2
    second = rs.collect([1], 2, timeout_s=1.0)
    comm = [sum(n["m"].get("comm_ns", 0) for n in g.summaries[1].session.nodes) for g in (first, second)]
    assert comm == [1_000_000 * R.STEPS, 5_000_000 * R.STEPS]


def test_no_agent_store_no_connection() -> None:
    assert connect({}) is None
    assert connect({"TORCHELASTIC_USE_AGENT_STORE": "False", "MASTER_ADDR": "x", "MASTER_PORT": "1"}) is None
    # A store that is not there: None within the connect timeout, never an exception.
    env = {"TORCHELASTIC_USE_AGENT_STORE": "True", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "9"}
    t0 = time.monotonic()
    assert connect(env, timeout_s=1.0) is None
    assert time.monotonic() - t0 < 10


def test_a_store_that_is_gone_costs_a_moment_and_no_output(capfd: pytest.CaptureFixture[str]) -> None:
    """With the default timeout: TCPStore's client retried for 10 s and more, printing a C++
    stack per try (a rank took 28 s and 38 lines of stderr)."""
    with socket.socket() as s:  # a port nothing listens on: bound, then closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"TORCHELASTIC_USE_AGENT_STORE": "True", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
    t0 = time.monotonic()
    assert connect(env) is None
    assert time.monotonic() - t0 < 3
    out, err = capfd.readouterr()
    assert out == err == ""


def test_lines_sent_in_their_used_columns_merge_as_whole_rows() -> None:
    # Each rank sends only the LINE_KEYS some line of its has: here the sleeping rank has host
    # time, the other a sync; rank 0's table must hold the same values as from the sessions.
    from dlpt.analysis.ranks.lines import line_table, rank_lines
    from dlpt.analysis.ranks.merge import rank_set
    from dlpt.model.metrics import METRICS
    from dlpt.trees.folding import report_tree
    from dlpt.views.ranks import with_lines

    sessions = [R.ddp_gpu(0, 2, blocked_ns=9_000_000), R.ddp_gpu(1, 2, sleep_ns=8_000_000, blocked_ns=0)]
    summaries = {r: rank_summary.decode(rank_summary.encode(s), f"rank {r}") for r, s in enumerate(sessions)}
    assert summaries[0].columns.tolist() != summaries[1].columns.tolist()
    assert all(int(s.values.shape[1]) == len(s.columns) for s in summaries.values())
    rs = rank_set([(f"rank {r}", s.session) for r, s in summaries.items()])
    with_lines(rs, summaries)
    steps = {r.rank: r.steps for r in rs.ranks}
    sent = line_table({r.rank: r.lines for r in rs.ranks if r.lines is not None}, steps)
    whole = line_table({r: rank_lines(report_tree(s, False)) for r, s in enumerate(sessions)}, steps)
    assert [n.line for n in sent.labels] == [n.line for n in whole.labels] and sent.keys == whole.keys
    for name in ("gpu", "host", "sync", "api", "kernels", "calls"):
        assert sent.values(METRICS[name]).tolist() == whole.values(METRICS[name]).tolist(), name


def test_a_lines_step_to_step_spread_travels_with_its_summary() -> None:
    # Rank 1's optimizer line: 16 ms of op time in one step of four. Per-step values 16, 0, 0,
    # 0 ms: the mean 4 ms has a variance of 48 ms^2 / 4 steps = 12 ms^2, from the session's
    # second moments, and the line table built from the sent summaries must hold it.
    from dlpt.analysis.ranks.lines import line_table
    from dlpt.analysis.ranks.merge import rank_set
    from dlpt.views.ranks import with_lines

    sessions = [R.gloo_cpu(0, wait_ns=4_000_000), R.gloo_cpu(1, step_ns=4_000_000, in_one_step=True)]
    summaries = {r: rank_summary.decode(rank_summary.encode(s), f"rank {r}") for r, s in enumerate(sessions)}
    rs = rank_set([(f"rank {r}", s.session) for r, s in summaries.items()])
    with_lines(rs, summaries)
    table = line_table(
        {r.rank: r.lines for r in rs.ranks if r.lines is not None}, {r.rank: r.steps for r in rs.ranks}
    )
    var = table.mean_variance("cpu_ns")
    row = next(i for i, n in enumerate(table.labels) if n.line == 32)
    assert var[row].tolist() == [0.0, pytest.approx(12e12, rel=1e-6)]
    steady = next(i for i, n in enumerate(table.labels) if n.line == 30)
    assert var[steady, 1] == pytest.approx(0.0, abs=1e6)  # the same every step: no spread
