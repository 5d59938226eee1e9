"""One output path per rank, and the files ``--load`` names.

Every rank of a job runs the same command line, so ``-o run.json`` names one file for all of
them: the last rank to finish would replace the others' sessions. The rule: ``{rank}`` in the
path is replaced by the rank; otherwise, when there are several ranks, ``.rank{N}`` goes before
the extension (``run.json`` -> ``run.rank3.json``). A single process keeps its path as given.
The rule is idempotent (a path that already ends in this rank's suffix keeps it), so applying
it at the command line and again in ``prof.save`` gives one suffix.
"""

from __future__ import annotations

import glob
import os
import re

from dlpt.errors import UsageError

__all__ = ["RANK_FIELD", "MAX_WORLD_SIZE", "rank_path", "rank_paths", "expand_load"]

RANK_FIELD = "{rank}"
#: The most ranks a job is taken to have (the largest jobs run about 100,000 GPUs): a launcher
#: value or a session naming more is a mistake or hostile, and what dlpt does per rank (rank 0
#: waits for every rank's file, the report lists the missing ones) must stay bounded.
MAX_WORLD_SIZE = 1 << 17
_GLOB = re.compile(r"[*?\[]")


def rank_path(path: str, rank: int, world_size: int) -> str:
    """Where ``rank`` of ``world_size`` writes what ``path`` names (see the module docstring)."""
    if RANK_FIELD in path:
        return path.replace(RANK_FIELD, str(rank))
    if world_size <= 1:
        return path
    head, tail = os.path.split(path)
    stem, ext = os.path.splitext(tail)
    suffix = f".rank{rank}"
    if stem.endswith(suffix):
        return path
    return os.path.join(head, f"{stem}{suffix}{ext}")


def rank_paths(path: str, world_size: int) -> list[str]:
    """Every rank's path, rank 0 first."""
    return [rank_path(path, r, world_size) for r in range(world_size)]


def expand_load(items: list[str]) -> list[str]:
    """The files ``--load`` names: each item a file, or a glob pattern (quoted on the command
    line, so dlpt receives it literally; a shell that expanded it passes the files instead).
    A pattern matches in sorted order; one that matches nothing is a UsageError. A file named
    twice is read once."""
    out: list[str] = []
    for item in items:
        if _GLOB.search(item) and not os.path.exists(item):
            matches = sorted(glob.glob(item))
            if not matches:
                raise UsageError(f"--load {item}: no file matches the pattern")
            out.extend(matches)
        else:
            out.append(item)
    seen: set[str] = set()
    unique = []
    for p in out:
        real = os.path.realpath(p)
        if real not in seen:
            seen.add(real)
            unique.append(p)
    return unique
