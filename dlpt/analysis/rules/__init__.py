"""The suggestion rules: each a function from an :class:`~dlpt.analysis.inputs.Analysis` to
findings, one concept per module. A rule reports nothing unless the run measured what its gain
estimate rests on, and each module's docstring gives its gain formula.
"""

from __future__ import annotations

from collections.abc import Callable

from dlpt.analysis.finding import Finding
from dlpt.analysis.inputs import Analysis
from dlpt.analysis.rules.activation_checkpointing import activation_checkpointing
from dlpt.analysis.rules.attention import attention_unfused
from dlpt.analysis.rules.compile import compile_events
from dlpt.analysis.rules.dataloader import data_loader_stall
from dlpt.analysis.rules.launch import launch_bound
from dlpt.analysis.rules.optimizer import optimizer_loop
from dlpt.analysis.rules.pinned import pinned_memory
from dlpt.analysis.rules.precision import fp32_matmul
from dlpt.analysis.rules.syncs import sync_in_step

__all__ = ["RULES", "Rule"]

Rule = Callable[[Analysis], list[Finding]]

RULES: tuple[Rule, ...] = (
    pinned_memory,
    sync_in_step,
    launch_bound,
    fp32_matmul,
    attention_unfused,
    optimizer_loop,
    data_loader_stall,
    compile_events,
    activation_checkpointing,
)
