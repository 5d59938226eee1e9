"""A GPU's busy share of the step is the union of its work inside each recorded step over the
step's span (meta.gpu_steps), the median over steps: never above 100% however the work overlaps
on several streams, and not a mean of busy times against a median step (an FSDP2 rank showed
'busy 40.97ms of the 35.66ms untraced step (100.0%) ... (traced: 102.7% of 39.90ms)')."""

from __future__ import annotations

from dlpt.analysis.report.gpu import device_facts, totals
from dlpt.model.units import Units


def _meta(rows: list[tuple[int, int]]) -> dict:
    spans = sorted(span for span, _ in rows)
    median = spans[len(spans) // 2]
    return {
        "devices": [{"index": 0, "name": "NVIDIA H100", "capability": "9.0"}],
        "gpu_busy_ns": {"0": sum(busy for _, busy in rows)},
        "gpu_steps": {
            "0": [
                {"span_ns": span, "busy_ns": busy, "idle_before_ns": 0, "idle_after_ns": span - busy}
                for span, busy in rows
            ]
        },
        "step_time": {
            "traced": {
                "n": len(rows),
                "mean_ns": round(sum(spans) / len(spans)),
                "median_ns": median,
                "min_ns": spans[0],
                "max_ns": spans[-1],
                "p10_ns": spans[0],
                "p90_ns": spans[-1],
            },
        },
        "wall_ns": sum(spans),
    }


def test_long_busy_steps_do_not_make_the_share_exceed_the_step() -> None:
    # Most steps 40 ms and nearly all busy; a few long steps (60 ms, busy throughout) pull the
    # mean busy time (41.4 ms) above the median step (40 ms).
    rows = [(40_000_000, 39_000_000)] * 7 + [(60_000_000, 60_000_000)] * 3
    (fact,) = device_facts(_meta(rows), Units(steps=len(rows)))
    assert fact.share is not None and fact.share <= 1.0
    assert "(97.5%)" in fact.text, fact.text  # the median step's 39 of 40 ms
    assert "102" not in fact.text and "103" not in fact.text


def test_the_share_is_the_median_steps_union() -> None:
    rows = [(10_000_000, 2_000_000), (10_000_000, 5_000_000), (10_000_000, 9_000_000)]
    (fact,) = device_facts(_meta(rows), Units(steps=3))
    assert "(50.0%)" in fact.text, fact.text


def test_gpu_time_above_the_busy_time_says_the_streams_overlap() -> None:
    # FSDP2: 82 ms of kernels per 74 ms step, NCCL beside compute; the union is 69 ms.
    units = Units(steps=1)
    (gpu,) = [f for f in totals({"gpu_ns": 82_000_000}, units, busy_ns=69_000_000) if f.label == "GPU time"]
    assert gpu.text == "GPU 82.00ms (streams overlap: busy 69.00ms)"
    (alone,) = [f for f in totals({"gpu_ns": 82_000_000}, units, busy_ns=82_000_000) if f.label == "GPU time"]
    assert alone.text == "GPU 82.00ms"
