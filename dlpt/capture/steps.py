"""Steps: detected from optimizer steps without code changes (:class:`OptimizerHook`), marked by
``prof.step()``, or the calls of a function named with ``--step-on`` / ``step_on=``
(:mod:`dlpt.capture.step_on`; inference has no optimizer). What each step counts as is
:mod:`dlpt.capture.schedule`'s decision: a manual ``prof.step()`` takes over from optimizer
detection from its first call on, so a loop that does both is not counted twice; calls of a
``step_on`` function are the only steps when one is named.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dlpt.capture.import_hooks import when_imported


class OptimizerHook:
    """Calls ``callback`` after every ``torch.optim`` optimizer step until :meth:`remove`.

    Under ``torch.compile(opt.step)`` Dynamo would trace into the hook (and warn about our native
    calls), so the hook is wrapped with ``torch._dynamo.disable`` and runs as plain Python after
    the compiled step. Dynamo is only imported by the program: the plain hook is swapped for the
    wrapped one when the program imports it (nothing can be compiled before that)."""

    def __init__(self, callback: Callable[[], None]) -> None:
        def on_optimizer_step(*_args: Any, **_kw: Any) -> None:
            callback()

        self._hook = on_optimizer_step
        self._handle: Any = self._register(on_optimizer_step)
        self._cancel = when_imported("torch._dynamo", self._disable_for_dynamo)

    @staticmethod
    def _register(hook: Callable[..., None]) -> Any:
        from torch.optim.optimizer import register_optimizer_step_post_hook

        return register_optimizer_step_post_hook(hook)

    def _disable_for_dynamo(self, dynamo: Any) -> None:
        if self._handle is None:
            return
        self._handle.remove()
        self._handle = self._register(dynamo.disable(self._hook))

    def remove(self) -> None:
        self._cancel()
        if self._handle is not None:
            self._handle.remove()
            self._handle = None
