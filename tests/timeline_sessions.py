"""A synthetic timeline window (meta.timeline) for the tests of the Perfetto export and the HTML
timeline view: two 2 ms steps of one thread and one GPU stream, an op with a launch and a sync
inside it, the kernel it launched (correlation 7) and four host samples."""

from __future__ import annotations

from typing import Any

TRAIN = "/home/user/proj/train.py"


def timeline_meta() -> dict[str, Any]:
    strings = [
        "",
        "steps",
        "MainThread",
        "GPU 0 stream 7",
        "<module>",
        TRAIN,
        "step",
        "aten::linear",
        "cuLaunchKernel",
        "gemm_kernel",
        "cuStreamSynchronize",
        "step 0",
        "step 1",
        "step 2",
    ]
    s = {v: i for i, v in enumerate(strings)}
    frames = [[-1, 0, s["<module>"], s[TRAIN], 60], [0, 0, s["step"], s[TRAIN], 40]]
    tracks = [[2, 0, 0, s["steps"]], [0, 4242, 0, s["MainThread"]], [1, 0, 7, s["GPU 0 stream 7"]]]
    ms = 1_000_000
    events = [
        [0, 0, 0, 0, s["step 0"], -1, 0, 0],
        [0, 2 * ms, 0, 0, s["step 1"], -1, 0, 0],
        [0, 4 * ms, 0, 0, s["step 2"], -1, 0, 0],
        [1, 100_000, 50_000, 1, s["aten::linear"], 1, 0, 0],
        [2, 110_000, 5_000, 1, s["cuLaunchKernel"], 1, 7, 0],
        [3, 300_000, 900_000, 1, s["cuStreamSynchronize"], 1, 0, 0],
        [4, 200_000, 30_000, 2, s["gemm_kernel"], 1, 7, 0],
        # three samples in step(), one in <module>: two frame slices, then one
        [7, 0, 1 * ms, 1, s["step"], 1, 0, 1],
        [7, 1 * ms, 1 * ms, 1, s["step"], 1, 0, 1],
        [7, 2 * ms, 1 * ms, 1, s["step"], 1, 0, 0],
        [7, 3 * ms, 1 * ms, 1, s["<module>"], 0, 0, 1],
    ]
    return {
        "steps": 2,
        "steps_requested": 2,
        "start_ns": 10**18,
        "duration_ns": 4 * ms,
        "clock": "cupti",
        "dropped": 3,
        "strings": strings,
        "frames": frames,
        "tracks": tracks,
        "events": events,
    }
