"""The suggestion rules: each a function from an :class:`~dlpt.insights.analysis.Analysis` to
findings, one concept per module. A rule reports nothing unless the run measured what its gain
estimate rests on, and each module's docstring gives its gain formula.
"""

from __future__ import annotations

from collections.abc import Callable

from dlpt.insights.analysis import Analysis
from dlpt.insights.finding import Finding
from dlpt.insights.rules.attention import attention_unfused
from dlpt.insights.rules.compile import compile_events
from dlpt.insights.rules.dataloader import data_loader_stall
from dlpt.insights.rules.launch import launch_bound
from dlpt.insights.rules.optimizer import optimizer_loop
from dlpt.insights.rules.pinned import pinned_memory
from dlpt.insights.rules.precision import fp32_matmul
from dlpt.insights.rules.syncs import sync_in_step

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
)
