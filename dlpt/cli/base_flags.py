"""The command-line options a saved session was recorded with, as far as the session says them
(``dlpt verify`` runs the new code the way the base was run, so that the two compare).

A session records what each option changed (``meta.steps.skip_first``, ``meta.flops``, the
sampler's rate...), not the command line itself; these are read back from there. Output options
(``-o``, ``--html``, the report's view) change no number and are not carried over."""

from __future__ import annotations

from dlpt.capture.host import DEFAULT_SAMPLE_HZ
from dlpt.model.meta import Meta

__all__ = ["flags_of"]


def _steps(meta: Meta) -> list[str]:
    s = meta.steps
    if s is None:
        return []
    out = []
    if s.skip_first is not None:
        out += ["--skip-first", str(s.skip_first)]
    if s.active is not None:
        out += ["--active", str(s.active)]
    if s.step_on:
        out += ["--step-on", s.step_on]
    return out


def _capture(meta: Meta) -> list[str]:
    out = []
    gpu = meta.gpu
    if gpu is not None and gpu.enabled is False and "--no-gpu" in (gpu.reason or ""):
        out.append("--no-gpu")
    elif meta.capture is not None and meta.capture.op_mode == "exact" and gpu is not None and gpu.enabled:
        out.append("--exact-ops")  # exact is the default only on CPU runs
    if meta.flops is not None:
        out.append("--flops")
    if meta.memory is not None and meta.memory.enabled:
        out.append("--memory")
    if not meta.sources:
        out.append("--no-source")
    return out


def _sampling(meta: Meta) -> list[str]:
    out = []
    hz = meta.host.sample_hz if meta.host is not None else None
    if hz is not None and hz != DEFAULT_SAMPLE_HZ:
        out += ["--sample-hz", str(hz)]
    st = meta.step_time
    if st is not None and st.calibrate is False:
        out += ["--calibrate", "off"]
    if meta.timeline is not None and meta.timeline.steps_requested:
        out += ["--timeline", str(meta.timeline.steps_requested)]
    pc = meta.pc_sampling
    if pc is not None and pc.steps:
        out += ["--pc-sampling", "--pc-sampling-steps", str(pc.steps)]
    return out


def flags_of(meta: Meta) -> list[str]:
    """The options that change what ``meta``'s session measured, as ``python -m dlpt`` takes them."""
    return [*_steps(meta), *_capture(meta), *_sampling(meta)]
