"""Graph partitions keep their line maps: same generated text, contexts at the right lines."""
from __future__ import annotations

import pytest

wrapper = pytest.importorskip("torch._inductor.codegen.wrapper")
utils = pytest.importorskip("torch._inductor.utils")

from dlpt.compile import inductor_partitions  # noqa: E402

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
