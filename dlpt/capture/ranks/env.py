"""Which rank this process is, from its launcher's environment or from torch.distributed.

Launchers say it in the environment before the program starts, which is when the command line
needs it (one output path per rank): torchrun (and DeepSpeed, Accelerate, Lightning) set
``RANK``/``WORLD_SIZE``/``LOCAL_RANK``; SLURM's ``srun`` sets ``SLURM_PROCID``/``SLURM_NTASKS``/
``SLURM_LOCALID``; Open MPI's ``mpirun`` ``OMPI_COMM_WORLD_RANK``/``_SIZE``/``_LOCAL_RANK``. RANK
wins over the others: torchrun inside one SLURM task per node sets it, and SLURM's numbers then
count nodes, not ranks. A program that starts its own processes (``mp.spawn``) and calls
``init_process_group`` with explicit ranks is only known once the process group exists:
:func:`current` asks torch.distributed then (at stop).

``meta.distributed`` (docs/session-format.md) is written from :func:`distributed_meta`.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from dlpt.files.rank_paths import MAX_WORLD_SIZE

__all__ = ["RankInfo", "from_env", "env_problem", "from_torch", "current", "distributed_meta", "run_id"]

log = logging.getLogger("dlpt")

# (rank, world size, local rank, source): the first whose rank and world size are set wins.
_SOURCES = (
    ("RANK", "WORLD_SIZE", "LOCAL_RANK", "env"),
    ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "slurm"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "mpi"),
)


@dataclass(frozen=True)
class RankInfo:
    """This process's place in the job. ``local_rank`` is None when nothing says it."""

    rank: int
    world_size: int
    local_rank: int | None
    source: str  # "env" (torchrun and the like), "slurm", "mpi" or "torch.distributed"

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


def _int(v: str | None) -> int | None:
    if v is None:
        return None
    try:
        n = int(v.strip())
    except ValueError:
        return None
    return n if n >= 0 else None


def _checked(env: Mapping[str, str]) -> tuple[RankInfo | None, str | None]:
    """(the rank the launcher's variables give, why a set of them was ignored)."""
    problem = None
    for rank_key, size_key, local_key, source in _SOURCES:
        if rank_key not in env:
            continue
        raw = f"{rank_key}={env.get(rank_key, '')[:20]!r} {size_key}={env.get(size_key, '')[:20]!r}"
        rank, size = _int(env.get(rank_key)), _int(env.get(size_key))
        if rank is None or size is None or size < 1 or rank >= size:
            problem = problem or f"ignoring {raw}: not a rank below a world size"
            continue
        if size > MAX_WORLD_SIZE:
            problem = problem or f"ignoring {raw}: more than {MAX_WORLD_SIZE:,} ranks"
            continue
        local = _int(env.get(local_key))
        if local is not None and local >= size:
            local = None  # a local rank is below the world size; nothing else is checkable
        return RankInfo(rank, size, local, source), problem
    return None, problem


def from_env(environ: Mapping[str, str] | None = None) -> RankInfo | None:
    """The rank the launcher's environment gives, or None (not launched as one of several ranks,
    or values that do not make sense: not numbers, a rank not below the world size, more than
    MAX_WORLD_SIZE ranks; :func:`env_problem` says which)."""
    info, problem = _checked(os.environ if environ is None else environ)
    if problem:
        log.debug("%s", problem)
    return info


def env_problem(environ: Mapping[str, str] | None = None) -> str | None:
    """Why launcher variables in the environment were ignored (one line), or None."""
    return _checked(os.environ if environ is None else environ)[1]


def from_torch() -> RankInfo | None:
    """The rank of an initialised default process group, or None. torch.distributed is not
    imported here: a program that never imported it has no process group."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is None or not dist.is_available() or not dist.is_initialized():
            return None
        rank, size = int(dist.get_rank()), int(dist.get_world_size())
    except Exception as e:  # noqa: BLE001 - a broken process group must not lose the profile
        log.debug("torch.distributed did not say the rank: %s", e)
        return None
    local = _int(os.environ.get("LOCAL_RANK"))
    if local is not None and local >= size:
        local = None
    return RankInfo(rank, size, local, "torch.distributed") if 0 <= rank < size <= MAX_WORLD_SIZE else None


def current(environ: Mapping[str, str] | None = None) -> RankInfo | None:
    """The launcher's rank if it set one, else torch.distributed's (once initialised)."""
    return from_env(environ) or from_torch()


def run_id(environ: Mapping[str, str] | None = None) -> str | None:
    """What identifies this launch, so rank 0 never takes a file of an earlier run for one of
    this run's: torchrun's run id and restart count, or SLURM's job and step. None when the
    launcher gives nothing usable (torchrun's default ``--rdzv-id`` is "none")."""
    env = os.environ if environ is None else environ
    rid = env.get("TORCHELASTIC_RUN_ID")
    if rid and rid != "none":
        return f"torchrun:{rid}:{env.get('TORCHELASTIC_RESTART_COUNT', '0')}"
    job = env.get("SLURM_JOB_ID")
    if job:
        return f"slurm:{job}.{env.get('SLURM_STEP_ID', '')}"
    return None


def _device() -> int | None:
    """The CUDA device this rank used, if CUDA was initialised (never initialises it)."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
            return int(torch.cuda.current_device())
    except Exception as e:  # noqa: BLE001 - a broken CUDA context: the rank is still known
        log.debug("could not read the current CUDA device: %s", e)
    return None


def _backends(seen: Iterable[str]) -> list[str]:
    """The default process group's backend (public API) and those the collectives ran on."""
    out = set(seen)
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            out.add(str(dist.get_backend()))
    except Exception as e:  # noqa: BLE001 - the backend is a detail of the header
        log.debug("could not read the process group's backend: %s", e)
    return sorted(out)


def distributed_meta(
    info: RankInfo | None, backends_seen: Iterable[str] = (), environ: Mapping[str, str] | None = None
) -> dict[str, Any] | None:
    """``meta.distributed`` for this process, or None when it is not one of several ranks and no
    process group was initialised."""
    if info is None:
        return None
    return {
        "rank": info.rank,
        "world_size": info.world_size,
        "local_rank": info.local_rank,
        "hostname": socket.gethostname(),
        "device": _device(),
        "backends": _backends(backends_seen),
        "source": info.source,
        "run_id": run_id(environ),
    }
