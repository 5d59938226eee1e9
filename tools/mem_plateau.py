"""Does dlpt's host memory stop growing? Profile one benchmark workload and read RSS after
N, 4N and 10N steps. Bounded memory means the later readings stay put.

usage: python tools/mem_plateau.py WORKLOAD [N]      (workloads: bench/workloads.py)
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import torch

import dlpt

from workloads import BUILDERS


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> None:
    wl = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    cuda = torch.cuda.is_available()
    _, step = BUILDERS[wl]()
    for _ in range(10):
        step()
    readings = {}
    with dlpt.profile() as prof:
        done = 0
        for target in (n, 4 * n, 10 * n):
            while done < target:
                step()
                done += 1
            if cuda:
                torch.cuda.synchronize()
            readings[target] = round(rss_mb(), 1)
    print(
        "MEM",
        json.dumps(
            {
                "workload": wl,
                "rss_mb_after_steps": readings,
                "growth_4n_to_10n_mb": round(readings[10 * n] - readings[4 * n], 1),
                "nodes": len(prof.session.nodes),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
