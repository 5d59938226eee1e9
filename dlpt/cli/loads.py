"""What several ``--load`` files must be: the ranks of one job (their report across ranks), not
separate runs, which that report would number as ranks 0, 1, ... of a job that never was; two
runs are compared with ``dlpt diff``."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from dlpt.errors import UsageError
from dlpt.model.rank_of import session_rank
from dlpt.model.session import Session

__all__ = ["check_one_job"]


def check_one_job(loaded: Sequence[tuple[str, Session]]) -> None:
    """UsageError when no session says it is one of several ranks: separate runs, which the
    report across ranks would number as ranks 0, 1, ... of a job that never was."""
    if any(session_rank(s.typed_meta) is not None for _, s in loaded):
        return  # ranks of a job (a session that does not say its rank is refused by rank_set)
    paths = [p for p, _ in loaded]
    if len(paths) == 2:
        raise UsageError(
            f"{paths[0]} and {paths[1]} are two separate runs, not ranks of one job (neither was "
            f"recorded as a rank); to compare them: dlpt diff {shlex.join(paths)}"
        )
    raise UsageError(
        f"the {len(paths)} sessions are separate runs, not ranks of one job (none was recorded as a "
        "rank); to compare two runs: dlpt diff A.json B.json"
    )
