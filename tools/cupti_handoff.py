"""Does CUPTI go back to other profilers after dlpt stops? Each scenario in a fresh process:
dlpt (or a floor mode) starts and stops around a little GPU work, then Triton Proton and
torch.profiler try to take CUPTI. Prints one line per scenario.

    python tools/cupti_handoff.py
"""

import subprocess
import sys

SCENARIO = r"""
import os, sys, torch
mode = sys.argv[1]
x = torch.randn(256, 256, device="cuda")
def work():
    for _ in range(5): x @ x
    torch.cuda.synchronize()
work()
from dlpt.capture.native import core, cupti_candidates
C = core()
if mode == "dlpt":
    import dlpt
    kernels = []
    for _ in range(3):  # CUPTI is detached at each stop and attached again at each start
        with dlpt.profile() as p:
            work()
        kernels.append(sum(n["m"].get("kernels", 0) for n in p.session.nodes))
    print("kernels per session:", kernels)
    cap = p.session.meta["capture"]
else:
    if mode == "cupti_floor":
        os.environ["DLPT_FLOOR"] = "cupti"  # a benchmark switch of the native core, read at start
    C.start(True, cupti_candidates(), True)
    os.environ.pop("DLPT_FLOOR", None)
    work()
    cap = C.stop()["counters"]
print("dlpt stop:", {k: cap.get(k) for k in ("cupti_unsubscribe_error",)})
try:
    import triton.profiler as proton
    proton.start("/tmp/handoff", context="shadow"); work(); proton.finalize()
    print("proton after", mode, ": ok")
except Exception as e:
    print("proton after", mode, ":", e)
"""

for mode in ("dlpt", "cupti_floor", "native"):
    r = subprocess.run([sys.executable, "-c", SCENARIO, mode], capture_output=True, text=True, timeout=300)
    print(r.stdout.strip() or r.stderr[-600:])
