"""dlpt's wait for a straggler, held against what the straggler cost the others by their own clocks.

Run examples/ddp_train.py under dlpt with ``--straggle R --straggle-every 2 --log-steps``: rank R
sleeps on even steps only, and every rank prints its synchronised step times. On each other rank,
an even step minus the odd step beside it is what the sleep cost that rank, measured by the
program itself with no model of waiting; the median over step pairs after the warm-up is the
truth. Every other step sleeps, so dlpt's wait per step should be half of it.

    python tools/wait_truth.py OUT.txt run.rank0.json run.rank1.json ... [--skip N]

OUT.txt is the job's output (the ``ddp_train: rank R step I X ms`` lines); the sessions give
dlpt's report across ranks. Prints one line per waiting rank and a verdict against 10%, then,
where the sessions carry their collective kernels, each rank's GPU wait from arrivals step by
step (dlpt.analysis.ranks.arrivals): its median over the sleeping steps and over the others (a
step's epoch is its index in the program: epoch 0 ends with step 0), which tells a wait on
every step (kept by dlpt's wait, cancelled by the step difference) from the sleep's own.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys

from dlpt.analysis.ranks.arrivals import epoch_waits, rank_collectives
from dlpt.analysis.ranks.merge import rank_set
from dlpt.model.session import Session
from dlpt.views.ranks import ranks_view

STEP = re.compile(r"ddp_train: rank (\d+) step (\d+) ([0-9.]+) ms")


def steps_by_rank(text: str) -> dict[int, dict[int, float]]:
    out: dict[int, dict[int, float]] = {}
    for m in STEP.finditer(text):
        out.setdefault(int(m.group(1)), {})[int(m.group(2))] = float(m.group(3))
    return out


def cost_of_sleep(steps: dict[int, float], skip: int, every: int) -> float | None:
    """Median over sleeping steps of (that step - the mean of its non-sleeping neighbours), ms."""
    diffs = []
    for i, ms in steps.items():
        if i < skip or i % every != 0:
            continue
        near = [steps[j] for j in (i - 1, i + 1) if j >= skip and j in steps and j % every != 0]
        if near:
            diffs.append(ms - sum(near) / len(near))
    return statistics.median(diffs) if diffs else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("sessions", nargs="+")
    ap.add_argument("--skip", type=int, default=5, help="warm-up steps left out of the truth")
    ap.add_argument("--every", type=int, default=2, help="the job's --straggle-every")
    args = ap.parse_args(argv)
    with open(args.out) as f:
        by_rank = steps_by_rank(f.read())
    rep = ranks_view(rank_set([(p, Session.load(p)) for p in args.sessions]))
    named = rep.stragglers + rep.unnamed
    if not named:
        print("wait_truth: dlpt named no rank the others waited for")
        return 1
    s = named[0]
    ok = True
    for r, steps in sorted(by_rank.items()):
        if r == s.rank:
            continue
        truth = cost_of_sleep(steps, args.skip, args.every)
        if truth is None:
            print(f"wait_truth: rank {r}: no step pairs")
            ok = False
            continue
        dlpt_ms = rep.waits.per_rank.get(r, 0.0) / 1e6
        expect = truth / args.every
        off = (dlpt_ms - expect) / expect if expect > 0 else float("inf")
        ok &= abs(off) <= 0.10
        print(
            f"wait_truth: rank {r} waited for rank {s.rank}: dlpt {dlpt_ms:.2f} ms/step; by its own "
            f"clock the sleep cost it {truth:.2f} ms every {args.every} steps = {expect:.2f} ms/step; "
            f"{100 * off:+.1f}%"
        )
    print(
        f"wait_truth: {'within' if ok else 'NOT within'} 10% "
        f"({'straggler' if s in rep.stragglers else 'not named'}: rank {s.rank})"
    )
    colls = {r.rank: rank_collectives(r.session.meta) for r in rep.rs.ranks}
    per_epoch = epoch_waits({r: c for r, c in colls.items() if c is not None})
    for r, waits in sorted(per_epoch.items()):
        sleeping = [ns for e, ns in waits.items() if e >= args.skip and e % args.every == 0]
        other = [ns for e, ns in waits.items() if e >= args.skip and e % args.every != 0]
        if sleeping and other:
            asleep, awake = statistics.median(sleeping) / 1e6, statistics.median(other) / 1e6
            print(
                f"wait_truth: rank {r} GPU wait from arrivals, median per step: sleeping steps "
                f"{asleep:.2f} ms, the others {awake:.2f} ms"
            )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
