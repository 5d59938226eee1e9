"""What a profile records: the arguments of ``dlpt.profile`` (:class:`CaptureOptions`), checked
when they are given, so that a bad value fails before the program runs, not at its end. The
command line and the notebook magic parse theirs into one (``RunOptions.capture``,
:mod:`dlpt.frontend.options`). The profile reads ``$DLPT_OPS`` when it is made, not here.
"""

from __future__ import annotations

from dataclasses import dataclass

from dlpt.capture.host import DEFAULT_SAMPLE_HZ, check_options
from dlpt.capture.pc_sampling import pc_sampling_steps
from dlpt.capture.step_on import parse_spec
from dlpt.errors import UsageError

__all__ = ["CaptureOptions"]


def _check_count(name: str, value: object, allow_none: bool) -> None:
    if value is None and allow_none:
        return
    if (
        not isinstance(value, int)
        or isinstance(value, bool)
        or value < 0
        or (name == "active" and value == 0)
    ):
        raise UsageError(
            f"{name} must be {'a positive' if name == 'active' else 'a non-negative'} integer, got {value!r}"
        )


@dataclass(frozen=True)
class CaptureOptions:
    """What a profile records, checked when made (UsageError names the bad value). Its arguments:

    Args:
        skip_first: steps to leave out as warm-up before counting (default None: until two steps
            in a row take the same time, see :mod:`dlpt.capture.warmup`); their work, like
            everything outside counted steps, is reported apart as once-work.
        active: steps to count after those (default: all the rest); the steps after them run
            untraced and measure the program's own step time.
        calibrate: run some steps untraced in the same run (windows of a few steps, see
            :mod:`dlpt.capture.schedule`) to measure the step time without dlpt's cost, which
            every derived figure (GPU idle share, MFU, suggested gains) then uses. False: every
            counted step is traced.
        gpu: capture GPU kernels, copies, memsets and syncs through CUPTI. Without a GPU, or if
            another profiler holds CUPTI, dlpt says so and records CPU-side attribution only.
        nested_ops: also record the ops that run inside other ops (``aten::mm`` under
            ``aten::matmul``, ``aten::mm`` under ``MmBackward0``). Off by default: kernels land on
            the same lines either way, and recording every nested op costs several times more
            per step on launch-bound work.
        step_on: the function whose outermost calls are the steps (``"generate"``,
            ``"GPT2LMHeadModel.forward"``, ``"pkg.mod:serve"``; see :mod:`dlpt.capture.step_on`), for
            inference loops, which have no optimizer step. Optimizer steps and ``prof.step()``
            are then ignored.
        sources: save the text of the profiled lines of your files (and 2 lines around each) in
            the session, so reports show the code as it was when it ran.
        flops: record the input shapes of the ops with a FLOP formula in torch's registry (and of
            elementwise ops, for their bytes), for FLOPs and TFLOP/s per line, MFU and the
            roofline bound. Off by default: torch then packs every op's arguments, which costs
            time on every op (README: "Why is this line slow").
        memory: record memory per line: what each line allocates, what it holds at each step's
            peak of allocated memory (a saved activation on its forward line) and what it held
            when an allocation failed (:mod:`dlpt.capture.memory`). Off by default: it costs
            time on every allocation.
        joinable: a ``dlpt.profile()`` started while this one runs joins it instead of raising
            ProfilerBusyError (``python -m dlpt`` starts its profile this way).
        sample_hz: how often the host sampler records the Python stack of every thread (host
            time per line, and which lines the host was in while the GPU idled); 0 turns it off.
        timeline: keep the events of this many counted steps, after the warm-up (ops, kernels, copies,
            syncs, host samples) for a timeline: ``meta.timeline``, the HTML report's timeline
            view and ``--export perfetto``. 0 (the default) keeps none.
        pc_sampling: CUPTI PC sampling for this many counted steps after the warm-up (True: 3):
            which source line inside each kernel is hot and why it stalls, and a fused Inductor
            kernel's samples shared among the model lines it fused (``meta.pc_sampling``;
            docs/pc-sampling.md). Off by default; the other steps run as without it.
        exact_ops: True: every op's start walks the Python stack, so every op's CPU time and
            calls land on its line. False: *lean*, op starts walk nothing; an op's line is found
            at its first launch (every kernel, copy, memset and sync keeps its exact line and
            op) or, if it made an autograd node, at its end; the CPU time of ops that launch
            nothing reaches lines through the host sampler (``sample_hz``). None (the default):
            ``$DLPT_OPS`` if set, else lean with GPU capture and exact without
            (:mod:`dlpt.capture.op_mode`; ``meta.capture.op_mode`` says which ran).
    """

    skip_first: int | None = None
    active: int | None = None
    calibrate: bool = True
    gpu: bool = True
    nested_ops: bool = False
    step_on: str | None = None
    sources: bool = True
    flops: bool = False
    joinable: bool = False
    memory: bool = False
    sample_hz: int = DEFAULT_SAMPLE_HZ
    timeline: int = 0
    pc_sampling: int | bool = False
    exact_ops: bool | None = None

    def __post_init__(self) -> None:
        _check_count("skip_first", self.skip_first, allow_none=True)
        check_options(self.sample_hz, self.timeline)
        _check_count("active", self.active, allow_none=True)
        if self.step_on is not None:
            parse_spec(self.step_on)  # a malformed name fails here, not at the end of the run
        # Normalised as the profile keeps them (a frozen dataclass: set once, here).
        for name in ("calibrate", "nested_ops", "sources", "flops", "memory", "joinable"):
            object.__setattr__(self, name, bool(getattr(self, name)))
        object.__setattr__(self, "pc_sampling", pc_sampling_steps(self.pc_sampling))
        if self.exact_ops is not None:
            object.__setattr__(self, "exact_ops", bool(self.exact_ops))
