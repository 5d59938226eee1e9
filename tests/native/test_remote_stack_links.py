"""The sampler's frame reader given a frame link a torn read produced: a link near the top of the
address space made the "is this frame in the copied chunk" test wrap around (pointer arithmetic),
and the copy then read far outside its buffer. On an H100 that crashed the sampler thread in 4 of
8 Hugging Face generate runs at 5 kHz (issue 22). Such a link must make the walk torn, never a
read outside the copy. Run in a child process: a regression is a failed test, not a dead session."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Aligned links at the very top of the address space (their end wraps past zero), a
# non-canonical one as seen in the crash, and the first unmapped pages.
LINKS = [2**64 - 8, 2**64 - 64, 2**64 - 4096, 0xFFFF80B25CF68BE8, 8, 4096]

SCRIPT = textwrap.dedent(
    f"""
    import json
    from dlpt import _C
    print(json.dumps([_C._testing.remote_frames(4096, link) for link in {LINKS!r}]))
    """
)


def test_a_wild_frame_link_is_a_torn_walk_not_a_crash() -> None:
    child = [sys.executable, "-c", SCRIPT]
    done = subprocess.run(child, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"the reader crashed (exit {done.returncode}): {done.stderr[-2000:]}"
    results = json.loads(done.stdout.strip().splitlines()[-1])
    assert results == [[True, 0]] * len(LINKS), results
