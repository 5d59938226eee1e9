"""Steps on compiled functions: the ``--step-on`` wrapper runs outside Dynamo.

``--step-on f`` wraps ``f`` (:mod:`dlpt.capture.step_on`); a program that then calls
``g = torch.compile(f)`` hands Dynamo the wrapper as the first frame to compile. Dynamo traces it,
``torch.compiler.is_compiling()`` is a constant True in the trace, and the compiled code runs
``f``'s graph without ever calling the profile's begin and end: no step is counted. A compiled
module does the same with its wrapped ``forward``: ``torch.compile(model)`` and
``model.compile()`` run ``Module.__call__`` outside Dynamo (a torch.nn file Dynamo skips as a
first frame) and compile the first frame beneath it, the wrapper.

Dynamo keeps a strategy per code object for the frames it is handed
(``torch._dynamo.eval_frame.skip_code``: ``FrameAction.SKIP`` for that frame, ``DEFAULT`` for
the frames it calls). With it on the wrapper's code, such a first frame runs as plain Python and
counts the call, and Dynamo compiles the function the wrapper calls instead: the same graph as
without dlpt. A wrapper reached inside code Dynamo is tracing is inlined as before (the strategy
applies to frames Dynamo is handed, not to calls it traces), so a function named inside a
compiled region neither breaks the graph nor counts. Checked against torch 2.11 and 2.13.

The strategy stays on the wrapper's code for the rest of the process: compiled functions made
while a profile ran may still hold wrappers, and a wrapper whose profile has stopped only calls
through. ``torch._dynamo`` is never imported for this (two seconds): the strategy goes in when
the program imports it, which it must before anything compiles.
"""

from __future__ import annotations

from collections.abc import Callable
from types import CodeType, ModuleType

from dlpt.capture.compile import failures
from dlpt.capture.import_hooks import when_imported

__all__ = ["run_outside_dynamo"]


def _skip(module: ModuleType, code: CodeType) -> None:
    skip = getattr(module, "skip_code", None)
    if not callable(skip):
        failures.record("step_skip", detail="torch._dynamo.eval_frame has no skip_code")
        return
    try:
        skip(code)
    except Exception as e:  # noqa: BLE001 - another Dynamo: compiled steps go uncounted; counted
        failures.record("step_skip", e)


def run_outside_dynamo(code: CodeType) -> Callable[[], None]:
    """Have Dynamo run frames of ``code`` as plain Python when it is handed one to compile, and
    compile what they call (now if the program has imported Dynamo, else when it does). Returns
    a function that cancels what has not happened yet."""
    return when_imported("torch._dynamo.eval_frame", lambda module: _skip(module, code))
