"""The header panel: what was profiled, for how long, how busy the GPU was, and anything that
limits trust in the numbers (GPU capture off, dropped or unattributed records, torch.compile
attribution that failed) - never hidden."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from rich import box
from rich.console import RenderableType
from rich.panel import Panel
from rich.text import Text

from dlpt.model.processors import Metric
from dlpt.model.tree import Node
from dlpt.renderers.terminal.base import View
from dlpt.renderers.terminal.format import Fmt
from dlpt.renderers.terminal.safe_text import escape_control


def _int(v: object) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def _obj(v: object) -> dict[str, Any]:
    """A meta value that should be an object; {} if it is absent or not one (old sessions)."""
    return v if isinstance(v, dict) else {}


def compile_attribution_notes(
    meta: Mapping[str, Any], clean: Callable[[str], str] = escape_control
) -> list[str]:
    """What dlpt's torch.compile integration could not do (``meta.capture``, see
    :mod:`dlpt.capture.compile.failures`): Inductor lines left unmapped, failures by reason. Shared with
    the HTML report's header, which shows every warning of this one. The failure reasons come
    from the session (any string): ``clean`` makes them printable (control characters escaped;
    the terminal header passes its :meth:`Fmt.clean`, which also honours ``--ascii``)."""
    c = _obj(meta.get("capture"))
    lines = []
    frames, kernels = _int(c.get("inductor_unmapped_frames")), _int(c.get("inductor_unmapped_kernels"))
    generated = f"{frames:,} generated line{'s' if frames != 1 else ''}"
    if kernels:
        launches = f"{kernels:,} Inductor kernel launch{'es' if kernels != 1 else ''}"
        lines.append(
            f"{launches} could not be mapped to model lines "
            f"(from {generated}; they stay with the compiled call)"
        )
    elif frames:
        lines.append(
            f"{generated} of Inductor's code could not be mapped to model lines "
            "(their costs stay with the compiled call)"
        )
    failed = _obj(c.get("compile_failures"))
    parts = [f"{clean(str(reason))} x{n}" for reason, n in sorted(failed.items()) if _int(n)]
    if parts:
        lines.append(
            f"torch.compile attribution incomplete: {', '.join(parts)} failed (details: DLPT_LOG=debug)"
        )
    return lines


def step_source(steps: Mapping[str, Any], clean: Callable[[str], str] = escape_control) -> str:
    """What the steps were ("optimizer steps", "calls of generate"), from ``meta.steps``."""
    if steps.get("source") == "call" and isinstance(steps.get("step_on"), str):
        return f"calls of {clean(steps['step_on'])}"
    return f"{clean(str(steps['source']))} steps"


def step_notes(steps: Mapping[str, Any], clean: Callable[[str], str] = escape_control) -> list[str]:
    """Why nothing was recorded when steps were to be skipped, and a --step-on that matched no
    function: said, never left for the user to guess. Shared with the HTML report's header."""
    lines = []
    step_on = steps.get("step_on")
    matched = steps.get("step_on_matched")
    if isinstance(step_on, str) and isinstance(matched, list) and not matched:
        lines.append(f"--step-on {clean(step_on)} matched no function")
    skip, seen = _int(steps.get("skip_first")), _int(steps.get("seen"))
    if skip and not _int(steps.get("profiled")) and seen <= skip:
        if not seen:
            what = (
                f"no call of {clean(step_on)} returned"
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
    return lines


def rank_label(meta: Mapping[str, Any], clean: Callable[[str], str] = escape_control) -> str:
    """Which rank a session is, from ``meta.distributed``: "rank 1/4 (local 1) on host-a, GPU 1,
    nccl"; "" for a single process. Shared with the HTML report and the cross-rank report."""
    d = _obj(meta.get("distributed"))
    rank, size = d.get("rank"), d.get("world_size")
    if not isinstance(rank, int) or not isinstance(size, int):
        return ""
    text = f"rank {rank}/{size}"
    local = d.get("local_rank")
    if isinstance(local, int) and not isinstance(local, bool):
        text += f" (local {local})"
    if isinstance(d.get("hostname"), str) and d["hostname"]:
        text += f" on {clean(d['hostname'])}"
    device = d.get("device")
    if isinstance(device, int) and not isinstance(device, bool):
        text += f", GPU {device}"
    backends = [clean(b) for b in d.get("backends") or [] if isinstance(b, str)]
    if backends:
        text += f", {'+'.join(backends)}"
    return text


def thread_notes(meta: Mapping[str, Any], clean: Callable[[str], str] = escape_control) -> list[str]:
    """Threads the profile did not wait for: their later work is missing. Shared with the HTML
    report's header."""
    names = [n for n in meta.get("threads_running") or [] if isinstance(n, str)]
    if not names:
        return []
    n = len(names)
    shown = ", ".join(clean(name) for name in names[:5]) + (", ..." if n > 5 else "")
    return [
        f"{n} thread{'s were' if n != 1 else ' was'} still running when the profile stopped; "
        f"their later work is not included ({shown})"
    ]


class Header(View):
    """Header panel of a report. ``root`` is the tree before pruning (for totals)."""

    gap_before = False

    def __init__(
        self,
        meta: dict[str, Any],
        root: Node,
        metric: Metric,
        fmt: Fmt,
        notes: list[str],
        insights: Sequence[Text] = (),
        comm: Sequence[Text] = (),
    ) -> None:
        super().__init__(fmt)
        self.meta, self.root, self.metric, self.notes = meta, root, metric, notes
        self.insights = (
            insights  # MFU and GPU idle lines (dlpt.renderers.terminal.suggestions), after the GPU lines
        )
        self.comm = comm  # communication lines (dlpt.renderers.terminal.communication), after those

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        meta, inc = self.meta, self.root.inclusive
        sep = " - " if fmt.ascii else " \u00b7 "
        lines: list[Text] = []
        argv = meta.get("argv") or []
        title = Text("dlpt  ", "bold")
        title.append(fmt.clean(shlex.join(str(a) for a in argv)) if argv else "(no argv)", "bold cyan")
        rank = rank_label(meta, fmt.clean)
        if rank:
            title.append(f"  [{rank}]", "bold magenta")
        lines.append(title)

        wall = _int(meta.get("wall_ns"))
        steps = _obj(meta.get("steps"))
        t = Text(f"wall {fmt.time(wall, per_step=False)}")
        profiled = _int(steps.get("profiled"))
        if profiled:
            t.append(f"{sep}{profiled} step{'s' if profiled != 1 else ''} profiled")
            why = [step_source(steps, fmt.clean)] if steps.get("source") else []
            if _int(steps.get("seen")):
                why.append(f"{_int(steps.get('seen'))} seen, first {_int(steps.get('skip_first'))} skipped")
            if why:
                t.append(f" ({'; '.join(why)})")
        lines.append(t)
        step_walls = [s for s in meta.get("step_wall_ns") or [] if isinstance(s, int)]
        if step_walls:
            mean = sum(step_walls) / len(step_walls)
            lines.append(
                Text(
                    f"step wall: mean {fmt.time(mean, per_step=False)}, "
                    f"min {fmt.time(min(step_walls), per_step=False)}, "
                    f"max {fmt.time(max(step_walls), per_step=False)}"
                )
            )

        lines.extend(Text(n, "bold yellow") for n in step_notes(steps, fmt.clean))
        lines.append(self._totals(fmt, inc, sep))
        lines.extend(self._gpu_lines(fmt, wall))
        lines.extend(Text(fmt.clean(t.plain), t.style) for t in self.insights)
        lines.extend(Text(fmt.clean(t.plain), t.style) for t in self.comm)
        lines.extend(self._graph_lines(fmt))

        for key, label, style in (
            ("dropped", "dropped", "bold red"),
            ("unattributed", "unattributed", "bold yellow"),
        ):
            d = _obj(meta.get(key))
            # Counts first, then times: "3 records, 30.0µs GPU time".
            items = sorted(d.items(), key=lambda kv: kv[0].endswith("_ns"))
            parts = [self._fmt_count(fmt, k, v) for k, v in items if _int(v)]
            if parts:
                note = " (shown under <unknown>)" if key == "unattributed" else ""
                lines.append(Text(f"{label}: {', '.join(parts)}{note}", style))
        lines.extend(self._compile_lines(fmt))
        lines.extend(Text(n, "bold yellow") for n in thread_notes(meta, fmt.clean))
        lines.extend(self._self_cost_lines(fmt, wall))
        versions = [f"{k} {fmt.clean(str(meta[k]))}" for k in ("python", "torch", "dlpt") if meta.get(k)]
        if meta.get("started_at"):
            versions.append(f"started {fmt.clean(str(meta['started_at']))}")
        if versions:
            lines.append(Text(sep.join(versions), "dim"))
        for n in self.notes:
            lines.append(Text(n, "dim"))
        yield Panel(Text("\n").join(lines), box=box.ASCII if fmt.ascii else box.ROUNDED, expand=True)

    def _totals(self, fmt: Fmt, inc: dict[str, int], sep: str) -> Text:
        per = f"per step (/{fmt.steps}): " if fmt.steps > 0 else "totals: "
        parts = []
        gpu = inc.get("gpu_ns", 0) + inc.get("copy_ns", 0) + inc.get("memset_ns", 0)
        if gpu:
            parts.append(f"GPU {fmt.time(gpu)}")
        if inc.get("kernels"):
            parts.append(f"{fmt.count(inc['kernels'])} kernels")
        if inc.get("copies"):
            parts.append(f"{fmt.count(inc['copies'])} copies ({fmt.bytes(inc.get('copy_bytes', 0))})")
        if inc.get("sync_ns"):
            parts.append(f"sync wait {fmt.time(inc['sync_ns'])}")
        if inc.get("cpu_ns"):
            parts.append(f"CPU ops {fmt.time(inc['cpu_ns'])}")
        if inc.get("api_ns"):
            parts.append(f"CUDA API {fmt.time(inc['api_ns'])}")
        return Text(per + (sep.join(parts) if parts else "nothing recorded"))

    def _gpu_lines(self, fmt: Fmt, wall: int) -> list[Text]:
        meta = self.meta
        gpu = _obj(meta.get("gpu"))
        lines = []
        if gpu.get("enabled") is False:
            reason = fmt.clean(str(gpu.get("reason") or "reason unknown"))
            lines.append(Text(f"GPU capture: off - {reason}; CPU-side attribution only", "bold yellow"))
        elif gpu.get("enabled"):
            lines.append(Text("GPU capture: on", "dim"))
        names = {str(d.get("index")): d for d in meta.get("devices") or [] if isinstance(d, dict)}
        busy = _obj(meta.get("gpu_busy_ns"))
        for dev in sorted(set(busy) | set(names), key=lambda s: (len(s), s)):
            d = names.get(dev, {})
            name = fmt.clean(f"GPU {dev} {d.get('name', '')}".rstrip())
            if d.get("capability"):
                name += f" (sm {fmt.clean(str(d['capability']))})"
            b = _int(busy.get(dev))
            if dev not in busy:
                lines.append(Text(f"{name}: no busy time recorded", "dim"))
                continue
            frac = b / wall if wall else 0.0
            t = Text(f"{name}: busy {fmt.time(b)} of {fmt.time(wall)} wall ({100 * frac:.1f}%), ")
            t.append(f"idle {100 * (1 - frac):.1f}%", "bold red" if frac < 0.5 else "")
            lines.append(t)
        return lines

    def _graph_lines(self, fmt: Fmt) -> list[Text]:
        """CUDA graph replays: how much GPU time they are, and whether any could not be traced
        back to where they were captured."""
        g = _obj(self.meta.get("cuda_graphs"))
        replay = _int(g.get("replay_gpu_ns"))
        if not replay:
            return []
        per = " per step" if fmt.steps else ""
        lines = [
            Text(
                f"CUDA graph replays: {fmt.time(replay)} GPU time{per}, shown under "
                f"<cuda graph replay> at the lines that captured them"
            )
        ]
        lost = _int(g.get("uncaptured_gpu_ns"))
        if lost:
            lines.append(
                Text(
                    f"{fmt.time(lost)}{per} of it was captured before profiling started: "
                    "shown at the replay call instead (start dlpt before the graphs are "
                    "captured; --skip-first keeps warm-up out of the numbers)",
                    "bold yellow",
                )
            )
        return lines

    def _self_cost_lines(self, fmt: Fmt, wall: int) -> list[Text]:
        """What dlpt's own callbacks cost while recording (sampled, see csrc SelfTimer), so that
        a reader knows which part of the step time is the profiler. torch's RecordFunction
        machinery and CUPTI cost more on top; the README's overhead table measures all of it."""
        c = _obj(self.meta.get("capture"))
        own = _int(c.get("self_ns"))
        if not own or not wall:
            return []
        per = " per step" if fmt.steps else ""
        return [
            Text(
                f"profiling: dlpt's own callbacks took {fmt.time(own)}{per} "
                f"({100 * own / wall:.1f}% of the wall time); torch's op hooks and CUPTI add "
                "more (README: Overhead)",
                "dim",
            )
        ]

    def _compile_lines(self, fmt: Fmt) -> list[Text]:
        return [Text(line, "bold yellow") for line in compile_attribution_notes(self.meta, fmt.clean)]

    @staticmethod
    def _fmt_count(fmt: Fmt, key: str, v: int) -> str:
        # Keys ending in _ns are times; everything else counts records.
        if key.endswith("_ns"):
            what = fmt.clean(key[:-3].replace("_", " "))
            what = "GPU" if what == "gpu" else what
            return f"{fmt.time(v)} {what} time" + (" per step" if fmt.steps else "")
        return f"{v:,} {fmt.clean(key.replace('_', ' '))}"
