"""Kernels launched from Inductor's generated wrapper: graph id and fused ATen ops read from the
wrapper's comments, kernel names told apart per graph, user frames inserted from the line map."""

from __future__ import annotations

import logging
import sys
import textwrap

import pytest

from dlpt.capture.compile import failures, inductor_lines

# Shaped like a CUDA wrapper written by Inductor (torch 2.11): definition-site comments above
# each kernel, call-site comments above each launch.
WRAPPER = textwrap.dedent("""\
    # AOT ID: ['1_backward']
    from ctypes import c_void_p
    async_compile = AsyncCompile()

    # kernel path: /tmp/torchinductor_root/ab/cabc.py
    # Topologically Sorted Source Nodes: [layer_norm], Original ATen: [aten.native_layer_norm, aten.native_layer_norm_backward]
    # Source node to ATen node mapping:
    #   layer_norm => add, mul
    triton_per_fused_native_layer_norm_0 = async_compile.triton('triton_per_fused_native_layer_norm_0', \'\'\'
    import triton
    @triton.jit
    def triton_per_fused_native_layer_norm_0(in_ptr0, xnumel):
        pass
    \'\'\', device_str='cuda')

    triton_poi_fused_gelu_1 = async_compile.triton('triton_poi_fused_gelu_1', \'\'\'
    def triton_poi_fused_gelu_1(): pass
    \'\'\', device_str='cuda')

    def call(args):
        buf0 = empty_strided_cuda((8, 16), (16, 1), torch.float32)
        # Topologically Sorted Source Nodes: [gelu], Original ATen: [aten.gelu, aten.gelu_backward]
        stream0 = get_raw_stream(0)
        triton_poi_fused_gelu_1.run(buf0, 128, stream=stream0)
        triton_per_fused_native_layer_norm_0.run(buf0, 8, stream=stream0)
        return (buf0, )
    """)


@pytest.fixture
def wrapper(tmp_path):
    p = tmp_path / "cwrapper.py"
    p.write_text(WRAPPER)
    inductor_lines.wrapper_info.cache_clear()
    yield str(p)
    inductor_lines.wrapper_info.cache_clear()


def test_wrapper_info_reads_graph_and_fused_ops(wrapper):
    graph, fused = inductor_lines.wrapper_info(wrapper)
    assert graph == "1_backward"
    assert fused["triton_per_fused_native_layer_norm_0"] == (
        "aten.native_layer_norm",
        "aten.native_layer_norm_backward",
    )
    # From the call-site comment (the stream lookup sits in between).
    assert fused["triton_poi_fused_gelu_1"] == ("aten.gelu", "aten.gelu_backward")


def test_wrapper_info_of_missing_file_is_empty(tmp_path):
    assert inductor_lines.wrapper_info(str(tmp_path / "gone.py")) == ("", {})


class FakeCache:
    """Stands in for PyCodeCache: one generated module whose line 23 came from model.py:7."""

    def __init__(self, path):
        self.linemaps = {path: object()}
        self.path = path

    def stack_frames_for_code(self, path, line):
        assert path == self.path
        return [{"name": "forward", "filename": "/src/model.py", "line": 7}] if line == 23 else None


def test_kernels_under_generated_frames_are_labelled_and_mapped(wrapper, monkeypatch):
    monkeypatch.setattr(inductor_lines, "_mapper", lambda: FakeCache(wrapper))
    nodes = [
        {"id": 0, "parent": -1, "kind": "root", "name": "<root>", "file": "", "line": 0, "m": {}},
        {"id": 1, "parent": 0, "kind": "frame", "name": "call", "file": wrapper, "line": 23, "m": {}},
        {
            "id": 2,
            "parent": 1,
            "kind": "kernel",
            "name": "triton_poi_fused_gelu_1",
            "file": "",
            "line": 0,
            "m": {"gpu_ns": 5},
            "x": {"full_name": "triton_poi_fused_gelu_1"},
        },
        {
            "id": 3,
            "parent": 0,
            "kind": "kernel",
            "name": "triton_poi_fused_gelu_1",
            "file": "",
            "line": 0,
            "m": {"gpu_ns": 2},
            "x": {"full_name": "triton_poi_fused_gelu_1"},
        },
    ]
    out = inductor_lines.map_generated_frames(nodes).nodes
    by_parent = {n["id"]: n for n in out}
    gen = next(n for n in out if n["kind"] == "frame" and n["file"] == wrapper)
    assert gen["x"]["generated"] == "inductor"
    user = next(n for n in out if n["file"] == "/src/model.py")
    assert user["parent"] == gen["id"] and user["line"] == 7
    labelled = next(n for n in out if n["kind"] == "kernel" and n["parent"] == user["id"])
    assert labelled["name"] == "triton_poi_fused_gelu_1 [1_backward]"
    assert labelled["x"]["graph"] == "1_backward"
    assert labelled["x"]["fuses"] == ["aten.gelu", "aten.gelu_backward"]
    # A kernel not launched from generated code keeps its name.
    plain = next(n for n in out if n["kind"] == "kernel" and by_parent[n["parent"]]["kind"] == "root")
    assert plain["name"] == "triton_poi_fused_gelu_1" and "graph" not in plain.get("x", {})
    assert sum(n["m"].get("gpu_ns", 0) for n in out) == 7


class NestedCache(FakeCache):
    """`call()` at line 30 runs partition_0, whose line 23 launches a kernel. Line 30 maps to a
    stale context (model.py:3), as Inductor's map gives the partition call line."""

    def stack_frames_for_code(self, path, line):
        return {
            23: [{"name": "forward", "filename": "/src/model.py", "line": 7}],
            30: [{"name": "forward", "filename": "/src/model.py", "line": 3}],
        }.get(line)


def test_only_the_innermost_generated_frame_maps(wrapper, monkeypatch):
    monkeypatch.setattr(inductor_lines, "_mapper", lambda: NestedCache(wrapper))
    nodes = [
        {"id": 0, "parent": -1, "kind": "root", "name": "<root>", "file": "", "line": 0, "m": {}},
        {"id": 1, "parent": 0, "kind": "frame", "name": "call", "file": wrapper, "line": 30, "m": {}},
        {"id": 2, "parent": 1, "kind": "frame", "name": "partition_0", "file": wrapper, "line": 23, "m": {}},
        {
            "id": 3,
            "parent": 2,
            "kind": "kernel",
            "name": "triton_poi_fused_gelu_1",
            "file": "",
            "line": 0,
            "m": {"gpu_ns": 5},
            "x": {"full_name": "triton_poi_fused_gelu_1"},
        },
    ]
    out = inductor_lines.map_generated_frames(nodes).nodes
    user = [n for n in out if n["file"] == "/src/model.py"]
    assert [(n["line"]) for n in user] == [7]
    assert all((n.get("x") or {}).get("generated") == "inductor" for n in out if n["file"] == wrapper)
    kernel = next(n for n in out if n["kind"] == "kernel")
    assert kernel["parent"] == user[0]["id"] and kernel["name"].endswith("[1_backward]")


class PartlyMappedCache(FakeCache):
    """Line 23 maps to model.py:7; line 40 (a launch too) has no entry in the line map."""

    def stack_frames_for_code(self, path, line):
        return super().stack_frames_for_code(path, line) if line == 23 else None


class BrokenCache(FakeCache):
    """A torch whose line-map lookup fails."""

    def stack_frames_for_code(self, path, line):
        raise KeyError(line)


def generated_launches(wrapper):
    return [
        {"id": 0, "parent": -1, "kind": "root", "name": "<root>", "file": "", "line": 0, "m": {}},
        {"id": 1, "parent": 0, "kind": "frame", "name": "call", "file": wrapper, "line": 23, "m": {}},
        {
            "id": 2,
            "parent": 1,
            "kind": "kernel",
            "name": "k1",
            "file": "",
            "line": 0,
            "m": {"gpu_ns": 5, "kernels": 2},
        },
        {"id": 3, "parent": 0, "kind": "frame", "name": "call", "file": wrapper, "line": 40, "m": {}},
        {"id": 4, "parent": 3, "kind": "op", "name": "aten::mm", "file": "", "line": 0, "m": {"calls": 1}},
        {
            "id": 5,
            "parent": 4,
            "kind": "kernel",
            "name": "k2",
            "file": "",
            "line": 0,
            "m": {"gpu_ns": 3, "kernels": 3},
        },
    ]


def test_generated_lines_without_a_model_line_are_counted(wrapper, monkeypatch):
    monkeypatch.setattr(inductor_lines, "_mapper", lambda: PartlyMappedCache(wrapper))
    before = failures.snapshot()
    result = inductor_lines.map_generated_frames(generated_launches(wrapper))
    assert (result.unmapped_frames, result.unmapped_kernels) == (1, 3)  # line 40 and the launches below it
    assert [n["line"] for n in result.nodes if n["file"] == "/src/model.py"] == [7]
    assert failures.since(before) == {}  # a line without an entry is not a failure


def test_a_failing_line_map_is_counted_and_logged(wrapper, monkeypatch, caplog):
    monkeypatch.setattr(inductor_lines, "_mapper", lambda: BrokenCache(wrapper))
    monkeypatch.setattr(logging.getLogger("dlpt"), "propagate", True)  # caplog listens at the root
    before = failures.snapshot()
    with caplog.at_level(logging.DEBUG, logger="dlpt"):
        result = inductor_lines.map_generated_frames(generated_launches(wrapper))
    assert failures.since(before) == {"line_map": 2}
    assert (result.unmapped_frames, result.unmapped_kernels) == (2, 5)
    # Nothing lost: the costs stay on the generated frames.
    assert sum(n["m"].get("gpu_ns", 0) for n in result.nodes) == 8
    logged = [r for r in caplog.records if r.name == "dlpt.capture.compile.failures"]
    assert len(logged) == 2 and all(isinstance(r.exc_info[1], KeyError) for r in logged)
    assert "line_map failed: KeyError" in logged[0].getMessage()


def test_inductor_never_imported_means_nothing_to_map(monkeypatch):
    # Generated code is loaded through torch._inductor.codecache: without it there is nothing to
    # map, and mapping must not import Inductor (seconds) to find that out.
    monkeypatch.delitem(sys.modules, "torch._inductor.codecache", raising=False)
    nodes = [{"id": 0, "parent": -1, "kind": "root", "name": "<root>", "file": "", "line": 0, "m": {}}]
    assert inductor_lines.map_generated_frames(nodes).nodes is nodes
    assert "torch._inductor.codecache" not in sys.modules
