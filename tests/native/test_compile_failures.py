"""When a torch internal that the compile integration relies on fails (as after a torch upgrade),
the profile still completes, the failure is counted in ``meta.capture`` and the report says so."""

from __future__ import annotations

import io

import pytest
import torch
import torch._dynamo.callback
import torch._dynamo.utils
import torch._functorch.config
import torch._inductor.config
from torch._inductor.codecache import PyCodeCache

import dlpt
from dlpt.renderers.terminal.report import print_report


def mm_model(x, w):
    return x @ w


def header(session) -> str:
    from rich.console import Console

    out = io.StringIO()
    print_report(session, Console(file=out, width=220, color_system=None))
    return out.getvalue()


@pytest.fixture
def compiled():
    """An Inductor-compiled matmul (an extern aten::mm: no C++ build), compiled before profiling,
    without on-disk caches (a cached graph's line map names another checkout's files)."""
    torch._dynamo.reset()
    with (
        torch._inductor.config.patch({"fx_graph_cache": False}),
        torch._functorch.config.patch(enable_autograd_cache=False),
    ):
        fn = torch.compile(mm_model)
        x, w = torch.randn(16, 16), torch.randn(16, 16, requires_grad=True)
        fn(x, w).sum().backward()
        yield lambda: fn(x, w).sum().backward()


def test_a_failing_inductor_line_map_is_counted_and_reported(compiled, monkeypatch):
    with dlpt.profile() as prof:
        compiled()
    assert prof.session.meta["capture"]["compile_failures"] == {}  # working integration: nothing to say
    assert prof.session.meta["capture"]["inductor_unmapped_frames"] == 0
    assert "attribution incomplete" not in header(prof.session)

    def moved(path, line):
        raise AttributeError("'PyCodeCache' has no attribute 'linemaps'")

    monkeypatch.setattr(PyCodeCache, "stack_frames_for_code", moved)
    with dlpt.profile() as prof:
        compiled()
    capture = prof.session.meta["capture"]
    assert capture["compile_failures"]["line_map"] >= 2  # the forward and the backward wrapper
    assert capture["inductor_unmapped_frames"] == capture["compile_failures"]["line_map"]
    assert not any((n.get("x") or {}).get("mapped_from") for n in prof.session.nodes)
    text = header(prof.session)
    assert (
        f"{capture['inductor_unmapped_frames']} generated lines of Inductor's code could not be mapped"
        in text
    )
    assert (
        f"torch.compile attribution incomplete: line_map x{capture['compile_failures']['line_map']} failed"
        in text
    )


def test_unreadable_compile_metrics_are_counted_and_reported(monkeypatch):
    torch._dynamo.reset()
    fn = torch.compile(lambda x: x.cos() * 2, backend="eager")
    with dlpt.profile() as prof:
        monkeypatch.setattr(torch._dynamo.utils, "get_compilation_metrics", lambda: 1 / 0)
        fn(torch.randn(4))  # compiles: the compile-end callback cannot read the metrics
    assert prof.session.meta["compile"] == []
    assert prof.session.meta["capture"]["compile_failures"] == {
        "compile_metrics": 2
    }  # at compile end, at stop
    assert "torch.compile attribution incomplete: compile_metrics x2 failed" in header(prof.session)


def test_a_callback_that_cannot_be_registered_is_counted_and_the_rest_still_works(monkeypatch):
    def refuse(callback):
        raise TypeError("register_start_callback() takes a CallbackTrigger now")

    handler = torch._dynamo.callback.callback_handler
    monkeypatch.setattr(handler, "register_start_callback", refuse)
    torch._dynamo.reset()
    fn = torch.compile(lambda x: x.sin() + 1, backend="eager")
    end_callbacks = list(handler.end_callbacks)
    with dlpt.profile() as prof:
        fn(torch.randn(4))
    assert prof.session.meta["capture"]["compile_failures"] == {"dynamo_callbacks": 1}
    assert len(prof.session.meta["compile"]) == 1  # the end callback was registered and collected
    assert handler.end_callbacks == end_callbacks  # and removed again, without a second failure
