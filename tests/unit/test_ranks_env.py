"""Which rank a process is (dlpt.capture.ranks.env) and where each rank writes (dlpt.files.rank_paths)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlpt.capture.ranks.env import RankInfo, distributed_meta, from_env, run_id
from dlpt.errors import UsageError
from dlpt.files.rank_paths import expand_load, rank_path, rank_paths
from dlpt.model.rank_of import session_rank


def test_torchrun_environment() -> None:
    info = from_env({"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1"})
    assert info == RankInfo(3, 8, 1, "env") and info.distributed


def test_slurm_when_no_rank_is_set_and_rank_wins_over_slurm() -> None:
    slurm = {"SLURM_PROCID": "5", "SLURM_NTASKS": "16", "SLURM_LOCALID": "1"}
    assert from_env(slurm) == RankInfo(5, 16, 1, "slurm")
    # torchrun inside one SLURM task per node: SLURM counts nodes, RANK counts ranks.
    both = {**slurm, "SLURM_NTASKS": "2", "SLURM_PROCID": "1", "RANK": "9", "WORLD_SIZE": "16"}
    assert from_env(both) == RankInfo(9, 16, None, "env")


def test_open_mpi_environment() -> None:
    env = {"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "0"}
    assert from_env(env) == RankInfo(2, 4, 0, "mpi")


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"RANK": "x", "WORLD_SIZE": "2"},
        {"RANK": "2", "WORLD_SIZE": "2"},  # rank out of range
        {"RANK": "-1", "WORLD_SIZE": "2"},
        {"RANK": "0"},  # no world size
        {"RANK": "0", "WORLD_SIZE": "0"},
    ],
)
def test_nonsense_is_no_rank(env: dict[str, str]) -> None:
    assert from_env(env) is None


def test_run_id_names_the_launch() -> None:
    assert run_id({"TORCHELASTIC_RUN_ID": "abc", "TORCHELASTIC_RESTART_COUNT": "2"}) == "torchrun:abc:2"
    assert run_id({"TORCHELASTIC_RUN_ID": "none"}) is None  # torchrun's default --rdzv-id
    assert run_id({"SLURM_JOB_ID": "77", "SLURM_STEP_ID": "3"}) == "slurm:77.3"
    assert run_id({}) is None


def test_distributed_meta_has_every_documented_key() -> None:
    meta = distributed_meta(RankInfo(1, 2, 1, "env"), ["gloo"], {"TORCHELASTIC_RUN_ID": "r"})
    assert meta is not None
    assert meta["rank"] == 1 and meta["world_size"] == 2 and meta["local_rank"] == 1
    assert isinstance(meta["hostname"], str) and meta["hostname"]
    assert "gloo" in meta["backends"] and meta["source"] == "env" and meta["run_id"] == "torchrun:r:0"
    assert "device" in meta
    assert distributed_meta(None) is None


@pytest.mark.parametrize(
    ("path", "rank", "world", "want"),
    [
        ("run.json", 3, 8, "run.rank3.json"),
        ("/a.b/run", 1, 2, "/a.b/run.rank1"),  # a dot in a directory is not an extension
        ("out/run.{rank}.json", 3, 8, "out/run.3.json"),
        ("r{rank}/x{rank}.json", 2, 4, "r2/x2.json"),
        ("run.json", 0, 1, "run.json"),  # a single process keeps its path
        ("run.{rank}.json", 0, 1, "run.0.json"),
        ("run.rank3.json", 3, 8, "run.rank3.json"),  # idempotent
    ],
)
def test_rank_path(path: str, rank: int, world: int, want: str) -> None:
    assert rank_path(path, rank, world) == want


def test_every_rank_gets_its_own_file() -> None:
    paths = rank_paths("run.json", 4)
    assert paths == ["run.rank0.json", "run.rank1.json", "run.rank2.json", "run.rank3.json"]
    assert len(set(rank_paths("run.{rank}.json", 16))) == 16


def test_session_rank_reads_only_valid_ranks() -> None:
    assert session_rank({"distributed": {"rank": 1, "world_size": 2}}) == (1, 2)
    assert session_rank({"distributed": {"rank": 2, "world_size": 2}}) is None
    assert session_rank({"distributed": {"rank": True, "world_size": 2}}) is None
    assert session_rank({}) is None


def test_load_patterns_expand_sorted_and_once(tmp_path: Path) -> None:
    for r in (2, 0, 1):
        (tmp_path / f"run.rank{r}.json").write_text("{}")
    pattern = str(tmp_path / "run.rank*.json")
    got = expand_load([pattern, str(tmp_path / "run.rank0.json")])
    assert [Path(p).name for p in got] == ["run.rank0.json", "run.rank1.json", "run.rank2.json"]
    with pytest.raises(UsageError, match="no file matches"):
        expand_load([str(tmp_path / "nothing*.json")])
    # A plain name passes through (a missing file is the loader's to report).
    assert expand_load(["missing.json"]) == ["missing.json"]
