"""Share a fused Inductor kernel's PC samples among the model lines it fused.

PC sampling puts each sample on a line of Inductor's generated Triton kernel file. Inductor
(checked: torch 2.13's ``torch/_inductor``; 2.11 not read yet) writes no per-line origin into Triton
kernel bodies (``config.comment_origin`` annotates C++ kernels only), so a generated line is tied to a
model line through the op it computes:

1. the model lines a kernel fused (each stack trace's innermost frame in the user's files), with
   the code of the innermost frame (where the op is spelled out): Inductor's provenance tracking
   (``torch._inductor.debug._inductor_kernel_stack_trace``, kernel name -> FX stack traces of its
   nodes; dlpt turns ``config.trace.provenance_tracking_level`` on in PC sampling mode when the
   user has not set it). Inductor resets those globals when each compile ends
   (``reset_provenance_globals``), so :class:`ProvenanceRecorder` copies them at the one point
   they are complete: its call of ``debug.dump_inductor_provenance_info()`` in compile_fx. A
   compile served from a cache runs no codegen: its kernels have no provenance (not split);
2. each generated line's ops (``tl_math.sin(tmp0)`` -> ``sin``, ``tmp3 + tmp4`` -> ``add``);
3. a generated line goes to the model lines whose code names one of its ops (``.sin(``,
   ``torch.sin``, `` + `` for add); several: shared evenly;
4. a line that only moves data follows the data: a load (``tmp0 = tl.load(...)``) goes where
   the lines that use its value go, a store (``tl.store(..., tmp4)``) where the line that computed
   the stored value goes (through other data-only lines, a few steps at most). The phase-1 H100
   run left 47% of a fused sin/exp kernel's samples unassigned, a third of them on its loads;
5. what is left (index math, the ``def`` line Triton gives prologue code to, an op no line
   names): **unassigned**, reported as such.

Each model line's share of the kernel is its assigned samples over all assigned samples: an
estimate, reported with its sample count. Thread contract: called at stop, with the GIL.
"""

from __future__ import annotations

import functools
import re
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ModelLine",
    "KernelSplit",
    "ProvenanceRecorder",
    "line_ops",
    "split_kernel_lines",
    "kernel_model_lines",
]

# Kernel name (with Inductor's ":<handle>") -> FX stack traces, copied at each compile's end.
_recorded: dict[str, list[str]] = {}


class ProvenanceRecorder:
    """Wraps ``torch._inductor.debug.dump_inductor_provenance_info`` (compile_fx calls it through
    the module attribute, with the kernel stack traces complete) to copy them; ``remove`` puts the
    original back. [GIL]: compile runs on the thread that calls the compiled function."""

    def __init__(self) -> None:
        self._debug: Any = None
        self._original: Any = None

    def install(self) -> bool:
        try:
            import torch._inductor.debug as debug
        except Exception:  # noqa: BLE001 - no Inductor: nothing to record
            return False
        original = getattr(debug, "dump_inductor_provenance_info", None)
        if original is None or self._original is not None:
            return False

        def recording() -> Any:
            try:
                for key, stacks in getattr(debug, "_inductor_kernel_stack_trace", {}).items():
                    _recorded.setdefault(str(key), []).extend(str(st) for st in stacks or [])
            except Exception:  # noqa: BLE001 - recording must never break a compile
                pass
            return original()

        self._debug, self._original = debug, original
        debug.dump_inductor_provenance_info = recording
        return True

    def remove(self) -> None:
        if self._debug is not None and self._original is not None:
            self._debug.dump_inductor_provenance_info = self._original
        self._debug = self._original = None


# Triton spellings of an op -> the op's name as model code spells it.
_CALL = re.compile(r"\b(?:tl_math|libdevice|tl|math)\.(\w+)\(")
_BINOPS = {"+": "add", "-": "sub", "*": "mul", "/": "div"}
_BINOP = re.compile(r"\btmp\d+\s*([+\-*/])\s*(?:tmp\d+|[\d.]+)")
# Ops that move data, not compute it: a line holding only these is not tied to a model line.
_DATA_OPS = {"load", "store", "where", "full", "arange", "program_id", "broadcast_to", "reshape", "zeros"}
# How model code names each op (a method, a torch function, an operator).
_SPELLINGS: dict[str, tuple[str, ...]] = {
    "add": ("+", "add("),
    "sub": (" - ", "sub("),
    "mul": ("*", "mul("),
    "div": ("/", "div("),
    "maximum": ("maximum(", "relu(", "clamp("),
    "minimum": ("minimum(", "clamp("),
    "sigmoid": ("sigmoid(", "silu("),
    "tanh": ("tanh(", "gelu("),
    "erf": ("erf(", "gelu("),
    "rsqrt": ("rsqrt(", "norm("),
    "sqrt": ("sqrt(", "norm("),
}


@dataclass
class ModelLine:
    file: str
    line: int
    code: str = ""


@dataclass
class KernelSplit:
    """One kernel's samples shared among its model lines."""

    kernel: str
    samples: int = 0  # on the kernel's generated lines
    assigned: dict[tuple[str, int], int] = field(default_factory=dict)  # model (file, line) -> samples
    unassigned: int = 0
    model_lines: list[ModelLine] = field(default_factory=list)

    def shares(self) -> list[dict[str, Any]]:
        total = sum(self.assigned.values())
        return [
            {"file": f, "line": ln, "samples": n, "share": n / total if total else 0.0}
            for (f, ln), n in sorted(self.assigned.items(), key=lambda kv: -kv[1])
        ]

    def __str__(self) -> str:
        parts = ", ".join(
            f"{s['file']}:{s['line']} {100 * s['share']:.0f}% ({s['samples']})" for s in self.shares()
        )
        return (
            f"{self.kernel}: {self.samples} samples, {self.unassigned} unassigned; {parts or 'no model line'}"
        )


def line_ops(text: str) -> set[str]:
    """The compute ops of one generated Triton line (data movement left out)."""
    code = text.split("#", 1)[0]
    ops = {m.group(1) for m in _CALL.finditer(code)} - _DATA_OPS
    ops |= {_BINOPS[m.group(1)] for m in _BINOP.finditer(code)}
    return ops


def _names(op: str, code: str) -> bool:
    spellings = _SPELLINGS.get(op, (f".{op}(", f"{op}("))
    return any(s in code for s in spellings)


_FRAME = re.compile(r'File "(.+)", line (\d+), in .+\n\s*(.*)')


def _innermost(stack_trace: str) -> ModelLine | None:
    """The model line of one FX stack trace: its innermost frame in the user's files (an op called
    inside torch, e.g. F.gelu, belongs to the user's line that called it), with the code of the
    innermost frame of all (where the op is spelled out, for matching generated lines to it)."""
    from dlpt.model.source_files import is_library_file

    frames = _FRAME.findall(stack_trace + "\n")
    if not frames:
        return None
    code = frames[-1][2].strip()
    for f, ln, _text in reversed(frames):
        if not is_library_file(f):
            return ModelLine(f, int(ln), code)
    f, ln, _text = frames[-1]
    return ModelLine(f, int(ln), code)


def kernel_model_lines() -> dict[str, list[ModelLine]]:
    """Kernel name -> the model lines its nodes came from (Inductor's provenance tracking; empty
    when it was off while the kernel compiled). Kernels of the same name in several graphs merge."""
    debug = sys.modules.get("torch._inductor.debug")
    live = getattr(debug, "_inductor_kernel_stack_trace", None)
    traces: dict[str, list[str]] = dict(_recorded)
    if isinstance(live, dict):  # a compile under way, or a torch that keeps them
        for key, stacks in live.items():
            traces.setdefault(str(key), []).extend(str(st) for st in stacks or [])
    out: dict[str, list[ModelLine]] = defaultdict(list)
    for key, stacks in traces.items():
        name = str(key).rsplit(":", 1)[0]  # "triton_poi_fused_add_sin_0:3" (the debug handle)
        for st in stacks or []:
            ml = _innermost(str(st))
            if ml and all((m.file, m.line, m.code) != (ml.file, ml.line, ml.code) for m in out[name]):
                out[name].append(ml)
    return dict(out)


@functools.lru_cache(maxsize=512)
def _source_lines(path: str) -> tuple[str, ...]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return tuple(f.readlines())
    except OSError:
        return ()


_ASSIGNED = re.compile(r"^\s*(tmp\d+)\s*=")
_TMP = re.compile(r"\btmp\d+\b")
#: Data-only lines followed, at most, to reach a line with an op (loads through a broadcast...).
_FOLLOW = 4


@dataclass
class _KernelCode:
    """The lines of one generated kernel function: what each computes and where values flow."""

    text: dict[int, str] = field(default_factory=dict)  # line number -> text
    defines: dict[str, int] = field(default_factory=dict)  # tmpN -> the line assigning it
    users: dict[str, list[int]] = field(default_factory=dict)  # tmpN -> lines reading it

    def reads(self, line: int) -> list[str]:
        text = self.text.get(line, "").split("#", 1)[0]
        m = _ASSIGNED.match(text)
        rhs = text[m.end() :] if m else text
        return _TMP.findall(rhs)


def _kernel_code(src: tuple[str, ...], fn: str) -> _KernelCode:
    """The body of ``def fn(`` in ``src`` (the whole file when the def is not found)."""
    first, last = 1, len(src)
    for i, text in enumerate(src, 1):
        if text.lstrip().startswith(f"def {fn}("):
            first = i
            for j in range(i + 1, len(src) + 1):
                t = src[j - 1]
                if t.strip() and not t[0].isspace():  # the next top-level statement
                    last = j - 1
                    break
            break
    code = _KernelCode()
    for i in range(first, last + 1):
        code.text[i] = src[i - 1]
        m = _ASSIGNED.match(src[i - 1].split("#", 1)[0])
        if m:
            code.defines.setdefault(m.group(1), i)
    for i in code.text:
        for v in code.reads(i):
            code.users.setdefault(v, []).append(i)
    return code


def _line_targets(text: str, model_lines: list[ModelLine]) -> list[ModelLine]:
    ops = line_ops(text)
    return [m for m in model_lines if any(_names(op, m.code) for op in ops)]


def _followed_targets(code: _KernelCode, line: int, model_lines: list[ModelLine]) -> list[ModelLine]:
    """For a line without an op of its own: the model lines of the ops its value flows into (a
    load's users) or of the value it writes (a store's producer), through data-only lines."""
    text = code.text.get(line, "")
    m = _ASSIGNED.match(text.split("#", 1)[0])
    found: list[ModelLine] = []
    seen: set[int] = {line}
    # A line assigning a value: forward to its users. A store: backward to its producers.
    frontier = list(code.users.get(m.group(1), [])) if m else []
    forward = bool(m)
    if not m and "store(" in text:
        frontier = [code.defines[v] for v in code.reads(line) if v in code.defines]
    for _ in range(_FOLLOW):
        nxt: list[int] = []
        for ln in frontier:
            if ln in seen:
                continue
            seen.add(ln)
            targets = _line_targets(code.text.get(ln, ""), model_lines)
            if targets:
                found += [t for t in targets if t not in found]
                continue
            if forward:
                d = _ASSIGNED.match(code.text.get(ln, "").split("#", 1)[0])
                nxt += code.users.get(d.group(1), []) if d else []
            else:
                nxt += [code.defines[v] for v in code.reads(ln) if v in code.defines]
        if not nxt:
            break
        frontier = nxt
    return found


def split_kernel_lines(
    rows: list[dict[str, Any]], model_lines: dict[str, list[ModelLine]] | None = None
) -> list[KernelSplit]:
    """Split the samples of Inductor kernels (``rows``: PC sampling's per-line records,
    ``{function, file, line, samples}``) among their model lines."""
    model_lines = kernel_model_lines() if model_lines is None else model_lines
    splits: dict[str, KernelSplit] = {}
    codes: dict[tuple[str, str], _KernelCode] = {}
    for r in rows:
        fn, path = str(r["function"]), str(r["file"])
        if fn not in model_lines or not path:
            continue
        ks = splits.setdefault(fn, KernelSplit(fn, model_lines=model_lines[fn]))
        n = int(r["samples"])
        ks.samples += n
        code = codes.get((path, fn))
        if code is None:
            code = codes[(path, fn)] = _kernel_code(_source_lines(path), fn)
        line = int(r["line"])
        targets = _line_targets(code.text.get(line, ""), ks.model_lines)
        if not targets:
            targets = _followed_targets(code, line, ks.model_lines)
        if not targets:
            ks.unassigned += n
            continue
        for i, m in enumerate(targets):  # evenly, the remainder to the first ones
            part = n // len(targets) + (1 if i < n % len(targets) else 0)
            ks.assigned[(m.file, m.line)] = ks.assigned.get((m.file, m.line), 0) + part
    return list(splits.values())
