"""Facts about the run itself: what ran (and as which rank), for how long, its steps and what
went wrong with them, threads the profile did not wait for, and the versions."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from dlpt.analysis.report.model import Fact
from dlpt.model.calibration import calibration
from dlpt.model.meta import (
    StepTime,
    int_of,
    obj,
    profiled_steps,
    program_argv,
    step_time,
    step_walls,
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


def title(meta: Mapping[str, Any]) -> str:
    """The profiled command line, as a shell would quote it."""
    argv = program_argv(meta)
    return shlex.join(argv) if argv else "(no argv)"


def rank_label(meta: Mapping[str, Any]) -> str:
    """Which rank a session is, from ``meta.distributed``: "rank 1/4 (local 1) on host-a, GPU 1,
    nccl"; "" for a single process."""
    d = obj(meta.get("distributed"))
    rank, size = d.get("rank"), d.get("world_size")
    if not isinstance(rank, int) or not isinstance(size, int):
        return ""
    text = f"rank {rank}/{size}"
    local = d.get("local_rank")
    if isinstance(local, int) and not isinstance(local, bool):
        text += f" (local {local})"
    if isinstance(d.get("hostname"), str) and d["hostname"]:
        text += f" on {d['hostname']}"
    device = d.get("device")
    if isinstance(device, int) and not isinstance(device, bool):
        text += f", GPU {device}"
    backends = [b for b in d.get("backends") or [] if isinstance(b, str)]
    if backends:
        text += f", {'+'.join(backends)}"
    return text


def step_source(steps: Mapping[str, Any]) -> str:
    """What the steps were ("optimizer steps", "calls of generate"), from ``meta.steps``."""
    if steps.get("source") == "call" and isinstance(steps.get("step_on"), str):
        chosen = steps.get("step_on_chosen")
        name = steps["step_on"]
        # The function chosen, when the name alone does not say which (e.g. two matched).
        plain = not isinstance(chosen, str) or chosen in ("", name, f"__main__:{name}")
        which = "" if plain else f" ({chosen})"
        return f"calls of {steps['step_on']}{which}"
    return f"{steps['source']} steps"


def _steps_text(steps: Mapping[str, Any], profiled: int) -> str:
    text = f"{profiled} step{'s' if profiled != 1 else ''} profiled"
    why = [step_source(steps)] if isinstance(steps.get("source"), str) else []
    seen = int_of(steps.get("seen"))
    warmup = obj(steps.get("warmup"))
    if seen and warmup:  # a session that classifies its steps (dlpt.capture.schedule)
        parts = [f"{int_of(warmup.get('steps'))} warm-up"]
        untraced = int_of(steps.get("untraced"))
        if untraced:
            parts.append(f"{untraced} untraced")
        why.append(f"{seen} seen: {', '.join(parts)}")
    elif seen:
        why.append(f"{seen} seen, first {int_of(steps.get('skip_first'))} skipped")
    return text + (f" ({'; '.join(why)})" if why else "")


def _median_text(st: StepTime, units: Units) -> str:
    """A step median with its interval: "10.2ms (9.98-10.4ms)"."""
    t = units.time
    text = t(st.median_ns, per_step=False)
    if st.median_lo_ns is not None and st.median_hi_ns is not None and st.n > 1:
        text += f" ({t(st.median_lo_ns, per_step=False)}\u2013{t(st.median_hi_ns, per_step=False)})"
    return text


def _step_wall(meta: Mapping[str, Any], units: Units, sep: str) -> list[Fact]:
    """The step's wall time: untraced (the program's own) beside traced, each median with its
    interval, and dlpt's cost from the paired windows (dlpt.model.calibration): a cost with its
    spread, "within noise", or "not measured" (then the step figures are as traced)."""
    traced, untraced = step_time(meta, "traced"), step_time(meta, "untraced")
    t = units.time
    if not obj(meta.get("step_time")):  # saved before dlpt measured untraced steps
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
        calibrate = obj(meta.get("step_time")).get("calibrate")
        why = "--calibrate off" if calibrate is False else "the run ended before an untraced window"
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


def run_facts(meta: Mapping[str, Any], units: Units, sep: str = " \u00b7 ") -> list[Fact]:
    """Wall time, the profiled steps (what they were, how many were seen, warm-up and untraced)
    and the step wall times."""
    wall = units.time(wall_ns(meta), per_step=False)
    out = [Fact("run", f"wall {wall}", label="wall", value=wall)]
    steps = obj(meta.get("steps"))
    profiled = profiled_steps(meta)
    if profiled:
        text = _steps_text(steps, profiled)
        out.append(Fact("steps", text, label="steps", value=text))
    out.extend(_step_wall(meta, units, sep))
    return out


def once_facts(meta: Mapping[str, Any], units: Units) -> list[Fact]:
    """The warm-up and the time outside counted steps: once-work, never divided by the steps."""
    steps = obj(meta.get("steps"))
    out = []
    warmup = obj(steps.get("warmup"))
    n = int_of(warmup.get("steps"))
    if n:
        walls = [int_of(w) for w in warmup.get("walls_ns") or [] if int_of(w) > 0]
        shown = ", ".join(units.time(w, per_step=False) for w in walls[:5]) + (
            ", ..." if len(walls) > 5 else ""
        )
        reason = str(warmup.get("reason") or "")
        first = f"the first {n} steps" if n != 1 else "the first step"
        value = f"{first} ({shown})" + (f", {reason}" if reason else "")
        unsettled = warmup.get("settled") is False  # ended at its bound: the steps kept falling
        out.append(Fact("warmup", f"warm-up: {value}", "warn" if unsettled else "info", "warm-up", value))
    outside = obj(steps.get("outside"))
    before, after = int_of(outside.get("before_ns")), int_of(outside.get("after_ns"))
    if before or after:
        t = units.time
        value = (
            f"{t(before, per_step=False)} before the first counted step, {t(after, per_step=False)} after "
            'the last (set-up, warm-up and the end of the run: their work is under "Outside steps", '
            "not divided by the steps)"
        )
        out.append(Fact("outside", f"outside steps (once): {value}", label="outside steps", value=value))
    return out


def step_notes(meta: Mapping[str, Any]) -> list[Fact]:
    """Why nothing was recorded when steps were to be skipped, and a --step-on that matched no
    function: said, never left for the user to guess."""
    steps = obj(meta.get("steps"))
    lines = []
    step_on = steps.get("step_on")
    matched = steps.get("step_on_matched")
    if isinstance(step_on, str) and isinstance(matched, list) and not matched:
        lines.append(f"--step-on {step_on} matched no function")
    skip, seen = int_of(steps.get("skip_first")), int_of(steps.get("seen"))
    if skip and not profiled_steps(meta) and seen <= skip:
        if not seen:
            what = (
                f"no call of {step_on} returned"
                if isinstance(step_on, str)
                else "no step was seen (steps are optimizer steps, prof.step() calls, or the "
                "calls of the function named with --step-on)"
            )
        else:
            what = f"only {seen} step{'s' if seen != 1 else ''} seen, all of them skipped"
        lines.append(
            f"nothing recorded: the first {skip} step{'s were' if skip != 1 else ' was'} to be "
            f"skipped (--skip-first), but {what}"
        )
    elif isinstance(step_on, str) and matched and not seen:
        # Matched, never counted: most often a function that only runs inside compiled code,
        # where Dynamo traces it into the graph. Said, so the per-run figures are read as such.
        lines.append(
            f"no call of {step_on} returned, so no step was counted (a function called inside "
            "torch.compile'd code is traced, not called: name the compiled function)"
        )
    warmup = obj(steps.get("warmup"))
    all_warm = warmup.get("auto") is True and int_of(warmup.get("steps")) >= seen
    if seen and all_warm and not profiled_steps(meta):
        # The automatic warm-up never ended: every step's work is outside steps. Said, so that
        # "nothing recorded" per step is not read as a broken capture.
        lines.append(
            f"no step counted: the step time was still falling at the last of the {seen} "
            f'step{"s" if seen != 1 else ""} seen (their work is under "Outside steps"); '
            "a longer run, or --skip-first N to count every step after the first N"
        )
    out = [Fact("step_notes", text, "warn") for text in lines]
    ignored = obj(steps.get("step_on_ignored"))
    if isinstance(step_on, str) and ignored:
        calls = ", ".join(f"{name} x{int_of(n)}" for name, n in sorted(ignored.items())[:3])
        text = f"--step-on {step_on}: calls of other functions of that name were not steps ({calls})"
        out.append(Fact("step_notes", text, "note"))
    return out


def thread_notes(meta: Mapping[str, Any]) -> list[Fact]:
    """Threads the profile did not wait for: their later work is missing."""
    names = [n for n in meta.get("threads_running") or [] if isinstance(n, str)]
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


def folded_notes(meta: Mapping[str, Any]) -> list[Fact]:
    """Numbered op and scope names the capture folded into their pattern
    (``meta.capture.folded_names``: a record_function named f"batch_{i}" each step)."""
    folded = obj(obj(meta.get("capture")).get("folded_names"))
    counts = sorted(
        ((int_of(n), str(name)) for name, n in folded.items() if int_of(n)), key=lambda c: (-c[0], c[1])
    )
    if not counts:
        return []
    shown = ", ".join(f"{name} ({n:,} names)" for n, name in counts[:3]) + (
        ", ..." if len(counts) > 3 else ""
    )
    text = f"numbered names folded into one row each, past the first 256 of each kind: {shown}"
    return [Fact("records", text, "note")]


def versions(meta: Mapping[str, Any], sep: str) -> list[Fact]:
    """Python, torch and dlpt versions and the start time."""
    parts = [f"{k} {meta[k]}" for k in ("python", "torch", "dlpt") if meta.get(k)]
    if meta.get("started_at"):
        parts.append(f"started {meta['started_at']}")
    return [Fact("versions", sep.join(parts), "dim")] if parts else []
