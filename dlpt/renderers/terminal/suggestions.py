"""Terminal output of the insights: the header lines (MFU with its formula, GPU idle per step)
and the Suggestions section.

Every number printed comes with where it came from: the MFU line prints its formula with the
values put in and names the peak's source; each suggestion prints its evidence and the basis of
its gain estimate.

Everything here that comes from the session (device names, op names, a saved suggestion's text
and file: any string, in a loaded file) is made printable by :meth:`Fmt.clean` (control
characters escaped, :mod:`dlpt.renderers.terminal.safe_text`) and reaches rich only inside a ``Text``,
never as markup.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from rich.console import RenderableType
from rich.padding import Padding
from rich.text import Text

from dlpt.analysis.finding import Finding
from dlpt.analysis.idle import step_idle
from dlpt.analysis.inputs import Analysis, int_of
from dlpt.analysis.mfu import mfu
from dlpt.renderers.terminal.base import View
from dlpt.renderers.terminal.format import LOCATION_STYLE, Fmt
from dlpt.renderers.terminal.safe_text import escape_control

__all__ = [
    "flops_text",
    "mfu_text",
    "idle_texts",
    "header_lines",
    "gain_text",
    "where_text",
    "SuggestionsView",
]


def flops_text(v: float) -> str:
    """FLOPs in decimal units: ``1.18 TFLOP``, ``35.2 GFLOP``."""
    for unit, scale in (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6), ("kFLOP", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:.3g} {unit}"
    return f"{v:.0f} FLOP"


def rate_text(tflops: float) -> str:
    """FLOP/s in decimal units: ``412 TFLOP/s``, ``4.81 MFLOP/s``."""
    return flops_text(tflops * 1e12) + "/s"


def mfu_text(a: Analysis, fmt: Fmt) -> list[str]:
    """The MFU line and its details, or [] when the run recorded no FLOPs."""
    m = mfu(a)
    if m is None:
        return []
    step = "per step" if m.per_step else "in the run"
    wall = "step wall" if m.per_step else "wall"
    t = fmt.time(m.step_wall_ns, per_step=False)
    flops = flops_text(m.flops_per_step)
    share = f"{100 * m.share:.0f}% of them in {m.key or 'an unknown dtype'}"
    if m.value is None or m.peak_tflops is None:
        why = f"no datasheet peak for '{fmt.clean(a.device_name)}'" if a.device_name else "no GPU in this run"
        return [
            f"model FLOPs {step} {flops} ({share}), {rate_text(m.achieved_tflops)} over the {wall} {t}; "
            f"MFU: {why} (give a peak with --peak-tflops)"
        ]
    return [
        f"MFU {100 * m.value:.1f}% = model FLOPs {step} / {wall} / peak = {flops} / {t} / "
        f"{m.peak_tflops:g} TFLOP/s ({m.peak_source})",
        f"achieved {rate_text(m.achieved_tflops)} over the {wall}; {share}; FLOPs of matmuls, "
        "convolutions and attention from torch's formulas (torch.utils.flop_counter)",
    ]


def idle_texts(a: Analysis, fmt: Fmt) -> list[tuple[str, bool]]:
    """Per GPU: (where its idle time per step is, whether the step is launch-bound)."""
    out = []

    def t(ns: float) -> str:
        return fmt.time(ns, per_step=False)

    for s in step_idle(a):
        text = (
            f"GPU {fmt.clean(s.device)} idle per step: {t(s.before_ns)} before its first kernel, "
            f"{t(s.between_ns)} between kernels, {t(s.after_ns)} after its last "
            f"(of {t(s.span_ns)}; {s.kernels:.0f} kernels of {t(s.mean_kernel_ns)} on average"
        )
        if s.syncs:
            text += f"; host waits {t(s.sync_ns)} in {s.syncs:.3g} syncs"
        text += ")" + (": launch-bound" if s.launch_bound else "")
        out.append((text, s.launch_bound))
    return out


def _coverage(a: Analysis, fmt: Fmt) -> list[str]:
    """Ops whose FLOP formula could not take the recorded inputs (their FLOPs are missing)."""
    info = a.meta.get("flops")
    missed = info.get("unevaluated") if isinstance(info, dict) else None
    if not isinstance(missed, dict) or not missed:
        return []
    parts = [f"{fmt.clean(str(name))} x{int_of(n)}" for name, n in sorted(missed.items()) if int_of(n)]
    return [f"FLOPs not counted (formula could not take the inputs): {', '.join(parts)}"] if parts else []


def header_lines(a: Analysis, fmt: Fmt) -> list[Text]:
    """Lines for the report header: MFU, idle per step, FLOP coverage."""
    lines = [Text(s) for s in mfu_text(a, fmt)]
    lines += [Text(s, "bold red" if bad else "") for s, bad in idle_texts(a, fmt)]
    lines += [Text(s, "yellow") for s in _coverage(a, fmt)]
    return lines


def gain_text(f: Finding, fmt: Fmt) -> str:
    """``-1.20ms/step`` (per step) or ``-9.10s once`` (one-off)."""
    t = fmt.time(f.gain_ns, per_step=False)
    return f"-{t}/step" if f.per_step else f"-{t} once"


def where_text(f: Finding, clean: Callable[[str], str] = escape_control) -> str:
    """``train.py:40 train_step``, or ``the whole step`` without a line; the file and function
    names made printable by ``clean``."""
    if not f.file:
        return "the whole step"
    return clean(f"{os.path.basename(f.file) or f.file}:{f.line} {f.function}".rstrip())


def _plain(fmt: Fmt, text: str) -> str:
    """Saved finding text on this console: its units in ASCII when the console is (``us``), as
    the rest of the report prints them."""
    return fmt.clean(text.replace("µs", "us") if fmt.ascii else text)


class SuggestionsView(View):
    """The Suggestions section: findings ranked by estimated gain, each with the line, the
    evidence, what to do and the basis of the estimate. ``limit`` shows the first ones only and
    says how many more ``--view suggestions`` lists."""

    def __init__(self, findings: list[Finding], fmt: Fmt, limit: int | None = None) -> None:
        super().__init__(fmt)
        self.findings, self.limit = findings, limit

    def build(self, fmt: Fmt, width: int) -> Iterable[RenderableType]:
        if not self.findings:
            return
        shown = self.findings[: self.limit] if self.limit else self.findings
        yield Text.assemble(
            ("Suggestions", "bold"),
            ("  ranked by estimated gain, each from this run's measurements (basis given)", "dim"),
        )
        arrow = "->" if fmt.ascii else "→"
        for i, f in enumerate(shown, 1):
            head = Text(f"{i:>2}. ")
            head.append(gain_text(f, fmt), "bold green")
            head.append("  ")
            head.append(_plain(fmt, where_text(f)), LOCATION_STYLE)
            yield head
            body = Text(_plain(fmt, f.title), "bold")
            body.append(f"\n{_plain(fmt, f.evidence)}")
            body.append(f"\n{arrow} {_plain(fmt, f.action)}", "green")
            body.append(f"\nbasis: {_plain(fmt, f.basis)}", "dim")
            yield Padding(body, (0, 0, 0, 8))
        rest = len(self.findings) - len(shown)
        if rest > 0:
            yield Text(f"    ... {rest} more (--view suggestions lists them all)", "dim")
