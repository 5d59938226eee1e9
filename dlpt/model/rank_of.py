"""Which rank of a job a session is (``meta.distributed``, read through the typed meta)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dlpt.files.rank_paths import MAX_WORLD_SIZE
from dlpt.model.meta import Distributed, Meta, typed_field

__all__ = ["session_rank"]


def session_rank(meta: Meta | Mapping[str, Any]) -> tuple[int, int] | None:
    """(rank, world size) from a session's ``meta.distributed``, or None (a single process, or
    figures no job can have)."""
    d: Distributed | None = meta.distributed if isinstance(meta, Meta) else typed_field(meta, "distributed")
    if d is not None and 0 <= d.rank < d.world_size <= MAX_WORLD_SIZE:
        return d.rank, d.world_size
    return None
