"""Where a generated wrapper line's model frames come from (issue 48): Inductor's kernel
provenance first, its line map next, the line reading the buffer a line writes last; the
module's loading code is said to be that, not counted as unmapped."""

from __future__ import annotations

import json
import textwrap
from types import SimpleNamespace

import pytest

from dlpt.capture.compile import inductor_lines, provenance, wrapper_lines

# Shaped like a CPU wrapper of torch 2.13 compiled with provenance tracking on.
WRAPPER = textwrap.dedent("""\
    # AOT ID: ['0_forward']
    import torch
    cpp_fused_tanh_0 = async_compile.cpp_pybinding(['float*'], r'''
    extern "C" void kernel(float* out_ptr0) {}
    ''')
    async_compile.wait(globals())

    class Runner:
        def call(self, args):
            buf1 = empty_strided_cpu((1, ), (1, ), torch.int64)
            # Topologically Sorted Source Nodes: [], Original ATen: []
            # [Provenance debug handles] aten.randint.low_out:1
            aten.randint.low_out(-9223372036854775808, 9223372036854775807, [1], out=buf1)
            buf2 = empty_strided_cpu((8, ), (1, ), torch.float32)
            # [Provenance debug handles] cpp_fused_tanh_0:2
            cpp_fused_tanh_0(buf2, buf1)
            del buf1
            # [Provenance debug handles] extern_kernels.mm:3
            extern_kernels.mm(buf2, buf2, out=buf2)
            return (buf2, )
    """)
SEEDS, TANH, MM, LOAD, WAIT = 13, 16, 19, 3, 6
TRACE = 'File "/src/model.py", line {}, in forward\n    code\n'


class LineMap:
    """PyCodeCache stand-in: the line map gives the mm line model.py:30 and nothing else."""

    def __init__(self, path):
        self.linemaps = {path: object()}

    def stack_frames_for_code(self, path, line):
        return [{"filename": "/src/model.py", "line": 30, "name": "forward"}] if line == MM else None


@pytest.fixture
def wrapper(tmp_path):
    p = tmp_path / "cabcdef.py"
    p.write_text(WRAPPER)
    wrapper_lines.wrapper_text.cache_clear()
    traces = {
        "aten.randint.low_out:1": [],
        "cpp_fused_tanh_0:2": [TRACE.format(20), TRACE.format(21)],
        "extern_kernels.mm:3": [TRACE.format(29), TRACE.format(30)],
    }
    provenance._record(
        SimpleNamespace(cache_key="cabcdef", inductor_provenance_stack_traces_str=json.dumps(traces))
    )
    yield str(p)
    provenance._by_key.pop("cabcdef", None)
    wrapper_lines.wrapper_text.cache_clear()


def test_wrapper_text_reads_functions_handles_and_readers(wrapper):
    text = wrapper_lines.wrapper_text(wrapper)
    assert text.handles == {
        SEEDS: "aten.randint.low_out:1",
        TANH: "cpp_fused_tanh_0:2",
        MM: "extern_kernels.mm:3",
    }
    assert text.at_load(LOAD) and text.at_load(WAIT) and not text.at_load(TANH)
    assert not text.at_load(len(text.lines) + 5)  # a line the file does not have: not known
    assert text.reader_of(SEEDS) == TANH  # the `del buf1` after it is no reader


def test_provenance_first_the_line_maps_node_kept_the_reader_last(wrapper):
    cache = LineMap(wrapper)
    where = {line: wrapper_lines.model_frames(cache, wrapper, line) for line in (SEEDS, TANH, MM, LOAD)}
    # No line-map entry: the kernel's last node with a stack trace.
    assert (where[TANH].source, where[TANH].frames[0]["line"]) == ("provenance", 21)
    # The line map's node is one of the kernel's: kept (a fused kernel stays where it was).
    assert (where[MM].source, where[MM].frames[0]["line"]) == ("provenance", 30)
    # The seeds have no stack trace anywhere: they go where their reader goes.
    assert (where[SEEDS].source, where[SEEDS].frames[0]["line"]) == ("reader", 21)
    assert where[LOAD].loading and where[LOAD].frames == []


def test_without_provenance_the_line_map_serves(wrapper):
    provenance._by_key.pop("cabcdef")
    cache = LineMap(wrapper)
    assert wrapper_lines.model_frames(cache, wrapper, MM).source == "line map"
    assert wrapper_lines.model_frames(cache, wrapper, TANH).frames == []


def node(nid, parent, kind, name, file="", line=0, **m):
    return {"id": nid, "parent": parent, "kind": kind, "name": name, "file": file, "line": line, "m": m}


def test_loading_lines_get_a_scope_and_are_not_unmapped(wrapper, monkeypatch):
    monkeypatch.setattr(inductor_lines, "_mapper", lambda: LineMap(wrapper))
    nodes = [
        node(0, -1, "root", "<root>"),
        node(1, 0, "frame", "<module>", wrapper, WAIT),
        node(2, 1, "op", "aten::empty", calls=1),
        node(3, 0, "frame", "call", wrapper, SEEDS),
        node(4, 3, "op", "aten::randint", calls=1, kernels=1),
    ]
    result = inductor_lines.map_generated_frames(nodes)
    assert (result.unmapped_frames, result.unmapped_kernels) == (0, 0)
    by_id = {n["id"]: n for n in result.nodes}
    empty = next(n for n in result.nodes if n["name"] == "aten::empty")
    assert (by_id[empty["parent"]]["kind"], by_id[empty["parent"]]["name"]) == (
        "scope",
        inductor_lines.LOADING,
    )
    seeds = next(n for n in result.nodes if n["name"] == "aten::randint")
    assert (by_id[seeds["parent"]]["file"], by_id[seeds["parent"]]["line"]) == ("/src/model.py", 21)


def test_provenance_level_is_the_programs_again_after_a_profile():
    config = pytest.importorskip("torch._inductor.config")
    # torch's own patch, not monkeypatch: undoing a setting monkeypatch found through the config's
    # proxy deletes it, and torch 2.14 then hides it from every later compile in the process.
    with config.patch({"trace.provenance_tracking_level": 0}):
        provenance.enable()
        assert config.trace.provenance_tracking_level == 2
        provenance.restore()
        assert config.trace.provenance_tracking_level == 0
    with config.patch({"trace.provenance_tracking_level": 1}):  # the program's own choice
        provenance.enable()
        provenance.restore()
        assert config.trace.provenance_tracking_level == 1
