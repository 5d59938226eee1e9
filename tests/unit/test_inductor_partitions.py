"""Graph partitions keep their line maps: same generated text, contexts at the right lines."""

from __future__ import annotations

import pytest

wrapper = pytest.importorskip("torch._inductor.codegen.wrapper")
utils = pytest.importorskip("torch._inductor.utils")

from dlpt.capture.compile import failures, inductor_partitions  # noqa: E402

PARTITION = (
    "def partition_0(args):\n"
    "    buf0 = empty_strided_cuda((8, 16), (16, 1), torch.float32)\n"
    "    # Topologically Sorted Source Nodes: [gelu], Original ATen: [aten.gelu]\n"
    "    triton_poi_fused_gelu_0.run(buf0, 128, stream=stream0)\n"
    "    extern_kernels.mm(buf0, buf0, out=buf1)\n"
    "    return (buf1, )\n"
)


class Holder:
    """The one attribute define_subgraph_launcher_fn touches."""

    def __init__(self) -> None:
        self.subgraph_definitions = utils.IndentedBuffer()
        self.subgraph_definitions.writeline("# before")


def splice(fn) -> utils.ValueWithLineMap:
    h = Holder()
    # Contexts before line 3 (the comment above the Triton launch) and line 5 (the mm).
    fn(h, "partition_0", utils.ValueWithLineMap(PARTITION, [(3, "gelu trace"), (5, "mm trace")]))
    return h.subgraph_definitions.getvaluewithlinemap()


def test_partition_line_map_survives_the_splice():
    # Installed for the rest of the process (as a profile does on its first compilation).
    assert inductor_partitions.install()
    patched = splice(wrapper.PythonWrapperCodegen.define_subgraph_launcher_fn)
    plain = splice(inductor_partitions._original)
    assert patched.value == plain.value  # the generated code is unchanged
    assert plain.line_map == []  # what Inductor does by itself: the map is lost
    lines = patched.value.split("\n")
    by_line = dict(patched.line_map)
    assert lines[by_line_of(by_line, "gelu trace") - 1].strip().startswith("# Topologically")
    assert lines[by_line_of(by_line, "mm trace") - 1].strip().startswith("extern_kernels.mm(")


def by_line_of(line_map: dict, ctx: str) -> int:
    return next(line for line, c in line_map.items() if c == ctx)


def test_a_method_that_no_longer_fits_is_left_alone_and_counted(monkeypatch):
    def define_subgraph_launcher_fn(self, name, subgraph_code):  # another torch's version
        self.subgraph_definitions.writeline(subgraph_code.value)

    monkeypatch.setattr(inductor_partitions, "_installed", False)
    monkeypatch.setattr(
        wrapper.PythonWrapperCodegen, "define_subgraph_launcher_fn", define_subgraph_launcher_fn
    )
    before = failures.snapshot()
    assert not inductor_partitions.install()
    assert wrapper.PythonWrapperCodegen.define_subgraph_launcher_fn is define_subgraph_launcher_fn
    assert failures.since(before) == {"partition_patch": 1}


def test_a_line_map_that_cannot_be_kept_falls_back_to_inductors_splice_and_is_counted():
    assert inductor_partitions.install()
    patched = wrapper.PythonWrapperCodegen.define_subgraph_launcher_fn
    before = failures.snapshot()
    h = Holder()
    patched(h, "partition_0", utils.ValueWithLineMap(PARTITION, [(3, "gelu trace", "unexpected")]))
    assert failures.since(before) == {"partition_line_map": 1}
    assert h.subgraph_definitions.getvaluewithlinemap().value == splice(inductor_partitions._original).value
