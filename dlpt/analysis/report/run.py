"""Facts about the run itself: what ran (and as which rank), for how long, its steps and what
went wrong with them, threads the profile did not wait for, and the versions."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from dlpt.analysis.report.model import Fact
from dlpt.model.calibration import calibration
from dlpt.model.meta import (
    Meta,
    Outside,
    Steps,
    StepTime,
    StepTimes,
    Warmup,
    profiled_steps,
    program_argv,
    step_time,
    step_walls,
    typed,
    wall_ns,
)
from dlpt.model.units import Units

__all__ = [
    "title",
    "rank_label",
    "step_source",
    "run_facts",
    "once_facts",
    "step_notes",
    "thread_notes",
    "folded_notes",
    "versions",
]


def title(meta: Meta) -> str:
    """The profiled command line, as a shell would quote it."""
    argv = program_argv(meta)
    return shlex.join(argv) if argv else "(no argv)"


def rank_label(meta: Meta | Mapping[str, Any]) -> str:
    """Which rank a session is, from ``meta.distributed``: "rank 1/4 (local 1) on host-a, GPU 1,
    nccl"; "" for a single process."""
    d = typed(meta).distributed
    if d is None:
        return ""
    text = f"rank {d.rank}/{d.world_size}"
    if d.local_rank is not None:
        text += f" (local {d.local_rank})"
    if d.hostname:
        text += f" on {d.hostname}"
    if d.device is not None:
        text += f", GPU {d.device}"
    if d.backends:
        text += f", {'+'.join(d.backends)}"
    return text


def step_source(steps: Steps) -> str:
    """What the steps were ("optimizer steps", "calls of generate"), from ``meta.steps``."""
    if steps.source == "call" and steps.step_on is not None:
        chosen = steps.step_on_chosen
        name = steps.step_on
        # The function chosen, when the name alone does not say which (e.g. two matched).
        plain = chosen is None or chosen in ("", name, f"__main__:{name}")
        which = "" if plain else f" ({chosen})"
        return f"calls of {steps.step_on}{which}"
    return f"{steps.source} steps"


def _steps_text(steps: Steps, profiled: int) -> str:
    text = f"{profiled} step{'s' if profiled != 1 else ''} profiled"
    why = [step_source(steps)] if steps.source is not None else []
    seen = steps.seen or 0
    warmup = steps.warmup
    if seen and warmup is not None and warmup != Warmup():  # a session that classifies its steps
        parts = [f"{warmup.steps or 0} warm-up"]
        untraced = steps.untraced or 0
        if untraced:
            parts.append(f"{untraced} untraced")
        why.append(f"{seen} seen: {', '.join(parts)}")
    elif seen:
        why.append(f"{seen} seen, first {steps.skip_first or 0} skipped")
    return text + (f" ({'; '.join(why)})" if why else "")


def _median_text(st: StepTime, units: Units) -> str:
    """A step median with its interval: "10.2ms (9.98-10.4ms)"."""
    t = units.time
    text = t(st.median_ns, per_step=False)
    if st.median_lo_ns is not None and st.median_hi_ns is not None and st.n > 1:
        text += f" ({t(st.median_lo_ns, per_step=False)}\u2013{t(st.median_hi_ns, per_step=False)})"
    return text


def _step_wall(meta: Meta, units: Units, sep: str) -> list[Fact]:
    """The step's wall time: untraced (the program's own) beside traced, each median with its
    interval, and dlpt's cost from the paired windows (dlpt.model.calibration): a cost with its
    spread, "within noise", or "not measured" (then the step figures are as traced)."""
    traced, untraced = step_time(meta, "traced"), step_time(meta, "untraced")
    t = units.time
    if meta.step_time is None or meta.step_time == StepTimes():  # saved before dlpt measured untraced steps
        walls = step_walls(meta)
        if not walls:
            return []
        value = (
            f"mean {t(sum(walls) / len(walls), per_step=False)}, "
            f"min {t(min(walls), per_step=False)}, max {t(max(walls), per_step=False)}"
        )
        return [Fact("step_wall", f"step wall: {value}", label="step wall", value=value)]
    if traced is None:
        return []
    traced_text = f"{_median_text(traced, units)} traced (median of {traced.n})"
    if untraced is None:
        why = (
            "--calibrate off"
            if meta.step_time.calibrate is False
            else "the run ended before an untraced window"
        )
        value = f"{traced_text}; no untraced step measured ({why}): step figures are as traced"
        return [Fact("step_wall", f"step wall {value}", "note", "step wall", value)]
    cal = calibration(meta)
    cost = f"dlpt's cost {cal.text()}"
    if not cal.measured:
        cost += ": step figures are as traced"
    value = sep.join(
        [f"{_median_text(untraced, units)} untraced (median of {untraced.n})", traced_text, cost]
    )
    return [Fact("step_wall", f"step wall {value}", "info" if cal.measured else "note", "step wall", value)]


def run_facts(meta: Meta, units: Units, sep: str = " \u00b7 ") -> list[Fact]:
    """Wall time, the profiled steps (what they were, how many were seen, warm-up and untraced)
    and the step wall times."""
    wall = units.time(wall_ns(meta), per_step=False)
    out = [Fact("run", f"wall {wall}", label="wall", value=wall)]
    profiled = profiled_steps(meta)
    if profiled and meta.steps is not None:
        text = _steps_text(meta.steps, profiled)
        out.append(Fact("steps", text, label="steps", value=text))
    out.extend(_step_wall(meta, units, sep))
    return out


def once_facts(meta: Meta, units: Units) -> list[Fact]:
    """The warm-up and the time outside counted steps: once-work, never divided by the steps."""
    steps = meta.steps or Steps()
    out = []
    warmup = steps.warmup or Warmup()
    n = warmup.steps or 0
    if n:
        walls = [w for w in warmup.walls_ns or [] if w > 0]
        shown = ", ".join(units.time(w, per_step=False) for w in walls[:5]) + (
            ", ..." if len(walls) > 5 else ""
        )
        reason = warmup.reason or ""
        first = f"the first {n} steps" if n != 1 else "the first step"
        value = f"{first} ({shown})" + (f", {reason}" if reason else "")
        unsettled = warmup.settled is False  # ended at its bound: the steps kept falling
        out.append(Fact("warmup", f"warm-up: {value}", "warn" if unsettled else "info", "warm-up", value))
    outside = steps.outside or Outside()
    before, after = outside.before_ns or 0, outside.after_ns or 0
    if before or after:
        t = units.time
        value = (
            f"{t(before, per_step=False)} before the first counted step, {t(after, per_step=False)} after "
            'the last (set-up, warm-up and the end of the run: their work is under "Outside steps", '
            "not divided by the steps)"
        )
        out.append(Fact("outside", f"outside steps (once): {value}", label="outside steps", value=value))
    return out


def step_notes(meta: Meta) -> list[Fact]:
    """Why nothing was recorded when steps were to be skipped, and a --step-on that matched no
    function: said, never left for the user to guess."""
    steps = meta.steps or Steps()
    lines = []
    step_on, matched = steps.step_on, steps.step_on_matched
    if step_on is not None and matched is not None and not matched:
        lines.append(f"--step-on {step_on} matched no function")
    skip, seen = steps.skip_first or 0, steps.seen or 0
    if skip and not profiled_steps(meta) and seen <= skip:
        if not seen:
            what = (
                f"no call of {step_on} returned"
                if step_on is not None
                else "no step was seen (steps are optimizer steps, prof.step() calls, or the "
                "calls of the function named with --step-on)"
            )
        else:
            what = f"only {seen} step{'s' if seen != 1 else ''} seen, all of them skipped"
        lines.append(
            f"nothing recorded: the first {skip} step{'s were' if skip != 1 else ' was'} to be "
            f"skipped (--skip-first), but {what}"
        )
    elif step_on is not None and matched and not seen:
        # Matched, never counted: most often a function that only runs inside compiled code,
        # where Dynamo traces it into the graph. Said, so the per-run figures are read as such.
        lines.append(
            f"no call of {step_on} returned, so no step was counted (a function called inside "
            "torch.compile'd code is traced, not called: name the compiled function)"
        )
    warmup = steps.warmup or Warmup()
    all_warm = warmup.auto is True and (warmup.steps or 0) >= seen
    if seen and all_warm and not profiled_steps(meta):
        # The automatic warm-up never ended: every step's work is outside steps. Said, so that
        # "nothing recorded" per step is not read as a broken capture.
        lines.append(
            f"no step counted: the step time was still falling at the last of the {seen} "
            f'step{"s" if seen != 1 else ""} seen (their work is under "Outside steps"); '
            "a longer run, or --skip-first N to count every step after the first N"
        )
    out = [Fact("step_notes", text, "warn") for text in lines]
    ignored = steps.step_on_ignored or {}
    if step_on is not None and ignored:
        calls = ", ".join(f"{name} x{n}" for name, n in sorted(ignored.items())[:3])
        text = f"--step-on {step_on}: calls of other functions of that name were not steps ({calls})"
        out.append(Fact("step_notes", text, "note"))
    return out


def thread_notes(meta: Meta) -> list[Fact]:
    """Threads the profile did not wait for: their later work is missing."""
    names = meta.threads_running or []
    if not names:
        return []
    n = len(names)
    shown = ", ".join(names[:5]) + (", ..." if n > 5 else "")
    return [
        Fact(
            "threads",
            f"{n} thread{'s were' if n != 1 else ' was'} still running when the profile stopped; "
            f"their later work is not included ({shown})",
            "warn",
        )
    ]


def folded_notes(meta: Meta) -> list[Fact]:
    """Numbered op and scope names the capture folded into their pattern
    (``meta.capture.folded_names``: a record_function named f"batch_{i}" each step)."""
    folded = (meta.capture.folded_names if meta.capture is not None else None) or {}
    counts = sorted(((n, name) for name, n in folded.items() if n), key=lambda c: (-c[0], c[1]))
    if not counts:
        return []
    shown = ", ".join(f"{name} ({n:,} names)" for n, name in counts[:3]) + (
        ", ..." if len(counts) > 3 else ""
    )
    text = f"numbered names folded into one row each, past the first 256 of each kind: {shown}"
    return [Fact("records", text, "note")]


def versions(meta: Meta, sep: str) -> list[Fact]:
    """Python, torch and dlpt versions and the start time."""
    parts = [
        f"{k} {v}" for k, v in (("python", meta.python), ("torch", meta.torch), ("dlpt", meta.dlpt)) if v
    ]
    if meta.started_at:
        parts.append(f"started {meta.started_at}")
    return [Fact("versions", sep.join(parts), "dim")] if parts else []
