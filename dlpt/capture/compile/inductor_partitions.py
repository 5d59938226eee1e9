"""Keep Inductor's wrapper-line -> model-line map for graph partitions.

With CUDA graphs (``mode="reduce-overhead"``) Inductor splits a graph into partitions, each
generated as its own function (``partition_0``) and pasted into the wrapper module as plain text
(``PythonWrapperCodegen.define_subgraph_launcher_fn`` splices ``subgraph_code.value``). The
partition's line map, which ties each kernel launch to the FX nodes' stack traces, is dropped on
the way, so ``PyCodeCache.stack_frames_for_code`` knows nothing about those lines and every kernel
of a reduce-overhead model would stay on Inductor's generated file.

This module re-splices the same text with the line contexts kept in place. The generated code is
byte-for-byte what Inductor writes without it; only the line map it registers is complete. It is
installed at the start of the first compilation seen while a profile runs (importing Inductor
earlier would cost seconds) and stays for the rest of the process, so later compilations keep
their maps too. On a torch whose method does something else, nothing is patched, and each
compilation counts a ``partition_patch`` failure (:mod:`dlpt.capture.compile.failures`).
"""

from __future__ import annotations

import inspect
import textwrap
from typing import Any

from dlpt.capture.compile import failures

_EXPECTED = "subgraph_definitions.splice(subgraph_code.value)"
_installed = False
_original: Any = None  # Inductor's own method, kept for the patched one to fall back on


def install() -> bool:
    """Patch Inductor once; True if the patch is (now) in place."""
    global _installed, _original
    if _installed:
        return True
    try:
        from torch._inductor.codegen.wrapper import PythonWrapperCodegen
        from torch._inductor.utils import IndentedBuffer, LineContext

        original = PythonWrapperCodegen.define_subgraph_launcher_fn
        source = inspect.getsource(original)
    except Exception as e:  # noqa: BLE001 - another torch: leave it alone; counted
        failures.record("partition_patch", e)
        return False
    if _EXPECTED not in source:
        failures.record("partition_patch", detail=f"define_subgraph_launcher_fn no longer has {_EXPECTED!r}")
        return False

    def define_subgraph_launcher_fn(self: Any, name: str, subgraph_code: Any) -> None:
        value = getattr(subgraph_code, "value", None)
        line_map = getattr(subgraph_code, "line_map", None)
        if not isinstance(value, str) or not line_map:
            return original(self, name, subgraph_code)
        # Same lines the string splice would write (it dedents, strips the end, then writes each
        # line), with each line context placed before the line it describes (numbered from 1).
        try:
            contexts: dict[int, list[Any]] = {}
            for line_no, ctx in line_map:
                contexts.setdefault(line_no, []).append(ctx)
            code = textwrap.dedent(value).rstrip()
            if not code:
                return original(self, name, subgraph_code)
            buf = IndentedBuffer()
            for i, text in enumerate(code.split("\n"), start=1):
                for ctx in contexts.get(i, ()):
                    buf._lines.append(LineContext(ctx))
                buf._lines.append(text)
        except Exception as e:  # noqa: BLE001 - never break a compilation over a line map; counted
            failures.record("partition_line_map", e)
            return original(self, name, subgraph_code)
        self.subgraph_definitions.splice(buf)

    # Replacing a method is the point of this patch (mypy forbids assigning to methods).
    PythonWrapperCodegen.define_subgraph_launcher_fn = define_subgraph_launcher_fn  # type: ignore[method-assign]
    _original = original
    _installed = True
    return True
