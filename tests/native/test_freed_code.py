"""A code object freed between the op that saw it and the step's drain is said to be lost, never
referenced: pymalloc keeps a freed block's type and fields and puts its free-list link where the
reference count was (a positive number), so a plain "type is code and refcount > 0" check took
freed memory for the object and Py_INCREF wrote into the allocator's free list; the next
allocations from that pool crashed the program. Run in a child process: a regression is a
failed test, not a dead test session."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import gc, json
    import torch
    import dlpt

    SOURCE = "y = x + 1\\n"  # one op on a line of a code object that only this script holds
    x = torch.ones(4)
    with dlpt.profile(gpu=False, skip_first=0, calibrate=False) as prof:
        for step in range(3):
            # Two of one size class: the second, freed after the first, links to it in the free
            # list (a non-zero word where its reference count was).
            first = compile(SOURCE, f"<transient {step}a>", "exec")
            code = compile(SOURCE, f"<transient {step}b>", "exec")
            exec(code, {"x": x})  # the op's path notes the code without the GIL (pending)
            del first, code
            gc.collect()
            for _ in range(1000):  # allocations from the pools the code objects were in
                [object() for _ in range(8)]
            prof.step()  # the drain: the code is gone by now
    for _ in range(1000):
        {str(i): i for i in range(16)}
    nodes = prof.session.nodes
    print(json.dumps({
        "named": [n["file"] for n in nodes if n["kind"] == "frame" and n["file"].startswith("<transient")],
        "lost": sum(n["name"] == "<code freed during profiling>" for n in nodes),
    }))
    """
)


def test_a_code_object_freed_before_the_drain_is_lost_not_referenced() -> None:
    r = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=REPO, capture_output=True, text=True, timeout=300, check=False
    )
    assert r.returncode == 0, f"the program died ({r.returncode}): {r.stderr[-2000:]}"
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["named"] == [], out  # a freed object's memory is never read as its name
    assert out["lost"] >= 1, out
