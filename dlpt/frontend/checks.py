"""Every check of a run's options that can fail before the program starts: values out of their
range, options that do not go together (the command line's and the notebook magic's, parsed by
:mod:`dlpt.frontend.parser`), so that a bad option fails at once, not after an hour-long run."""

from __future__ import annotations

import argparse

from dlpt.capture.host import MAX_SAMPLE_HZ, MAX_TIMELINE_STEPS
from dlpt.capture.pc_sampling import MAX_STEPS as PC_MAX_STEPS
from dlpt.capture.step_on import parse_spec
from dlpt.errors import UsageError
from dlpt.frontend.options import Output

__all__ = ["check_values", "check_report"]


def check_values(ns: argparse.Namespace, files: tuple[Output, ...]) -> None:
    """UsageError for an option value out of its range (the command line's and the notebook
    magic's options; ``files`` collected): checked as the renderer and the profile would, so a
    bad value fails before a long run, not after it."""
    if not 0.0 <= ns.threshold < 100.0:
        raise UsageError(f"--threshold must be a percentage in [0, 100), got {ns.threshold:g}")
    if ns.depth is not None and ns.depth < 1:
        raise UsageError("--depth must be >= 1")
    if ns.peak_tflops is not None and not 0 < ns.peak_tflops < float("inf"):
        raise UsageError(f"--peak-tflops must be a positive number, got {ns.peak_tflops:g}")
    if ns.skip_first is not None and ns.skip_first < 0:
        raise UsageError("--skip-first must be >= 0")
    if ns.active is not None and ns.active < 1:
        raise UsageError("--active must be >= 1")
    if ns.step_on is not None:
        parse_spec(ns.step_on)
    if ns.sample_hz is not None and not 0 <= ns.sample_hz <= MAX_SAMPLE_HZ:
        raise UsageError(f"--sample-hz must be from 0 (off) to {MAX_SAMPLE_HZ}, got {ns.sample_hz}")
    if ns.kernel_lines is not None and ns.load is None:
        raise UsageError("--kernel-lines shows a saved session's PC samples: give --load FILE")
    if ns.pc_sampling_steps is not None:
        if not ns.pc_sampling:
            raise UsageError("--pc-sampling-steps applies with --pc-sampling")
        if not 1 <= ns.pc_sampling_steps <= PC_MAX_STEPS:
            raise UsageError(
                f"--pc-sampling-steps must be from 1 to {PC_MAX_STEPS}, got {ns.pc_sampling_steps}"
            )
    if ns.timeline is not None and not 1 <= ns.timeline <= MAX_TIMELINE_STEPS:
        raise UsageError(
            f"--timeline must be a number of steps from 1 to {MAX_TIMELINE_STEPS}, got {ns.timeline}"
        )
    if ns.load is None and ns.timeline is None:
        for out in files:
            if out.kind == "perfetto":
                raise UsageError("--export perfetto writes the timeline: give --timeline N (steps to keep)")
    if ns.rank_timeout is not None and not 0 <= ns.rank_timeout < float("inf"):
        raise UsageError(f"--rank-timeout must be a number of seconds >= 0, got {ns.rank_timeout:g}")


def check_report(ns: argparse.Namespace) -> None:
    """UsageError for report options that do not go together (both front ends)."""
    if ns.open and ns.html is None:
        raise UsageError("--open opens the HTML report: give --html FILE too")
    if ns.no_report and ns.report_file is not None:
        raise UsageError("--no-report prints no report: --report-file would stay empty")
