"""The native core's includes point downward (docs/architecture.md, "Native layers"), as
test_layers.py holds dlpt/'s imports: every file of csrc/ sits in one layer of LAYERS, and
includes only files of its own layer or of a lower one.

Producers of events (the op path in context/, the CUPTI tracer in cupti/) sit below their
consumers (host/, pcsampling/): they call the sinks declared in csrc/events.h, which the
consumers define, never a consumer's header. The includes that go up are the few in UPWARD,
each with its reason; a test fails when one of them is no longer there.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.offenders import assert_every_file

pytestmark = pytest.mark.torch_independent  # not rerun on CI's newest-torch leg (.ci/run)

CSRC = Path(__file__).resolve().parents[2] / "csrc"

#: csrc/'s layers, bottom first: (name, what it holds, the paths in it relative to csrc/; a
#: path ending in "/" is a folder, any other one a file or the stem of a .h/.cpp pair).
LAYERS: list[tuple[str, str, tuple[str, ...]]] = [
    (
        "base",
        "thread-contract markers, node ids, the clock, counters, options, dlpt's own threads, the"
        " warm-up's trend statistics",
        ("common.h", "clock", "counters.h", "options", "own_threads", "trend"),
    ),
    ("ending", "the end of the process after a signal: a C handler, a grace without the GIL", ("ending/",)),
    ("cct", "the calling-context tree and what hangs on it (epochs, busy time, correlation)", ("cct/",)),
    ("frames", "Python frames (the caller's; other threads' read fault-safely), code objects", ("frames/",)),
    ("session", "one profile's state: the tree, its threads, its code registry", ("session",)),
    ("events", "the sinks producers call and consumers define", ("events.h",)),
    ("context", "the op path: thread states, paths to nodes, aten op callbacks", ("context/",)),
    ("memory", "--memory: torch's allocator reports, live bytes per node", ("memory/",)),
    ("cupti", "CUPTI: the dlopen table, the tracer, attaching to a running capture", ("cupti/",)),
    ("pcsampling", "--pc-sampling: CUPTI's PC sampling and the cubins it points into", ("pcsampling/",)),
    ("host", "--sample-hz and --timeline: the sampler, idle blame, the timeline window", ("host/",)),
    ("controller", "start, steps and stop, over every subsystem", ("controller",)),
    ("export", "nodes and counters to Python", ("export/",)),
    ("bindings", "the module dlpt._C and the C++ unit seams", ("bindings.cpp", "testing/")),
]

#: Includes that go up a layer, each with the reason it stays: (file, included file) -> why.
UPWARD: dict[tuple[str, str], str] = {
    ("session.cpp", "context/thread_state.h"): (
        "the session creates, parks and reuses its threads' states (attach_thread, retire_thread);"
        " ThreadState's header needs the Session it belongs to, so these members are defined above both"
    ),
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(rel: str, layers: list[tuple[str, str, tuple[str, ...]]] = LAYERS) -> int:
    """Index in `layers` of `rel` (a path inside the csrc folder); -1 when no layer holds it."""
    stem = rel.rsplit(".", 1)[0]
    for i, (_, _, paths) in enumerate(layers):
        if any(
            rel.startswith(p) if p.endswith("/") else rel in (p, f"{p}.h", f"{p}.cpp") or stem == p
            for p in paths
        ):
            return i
    return -1


def native_files() -> list[str]:
    return sorted(str(p.relative_to(CSRC)) for p in CSRC.rglob("*") if p.suffix in (".h", ".cpp"))


def includes(rel: str) -> list[str]:
    """The csrc/ files `rel` includes with quotes, relative to csrc/ (resolved as the compiler
    does: beside the including file, then in csrc/, the build's include directory)."""
    here = (CSRC / rel).parent
    out = []
    for name in INCLUDE.findall((CSRC / rel).read_text()):
        for base in (here, CSRC):
            path = (base / name).resolve()
            if path.is_file():
                out.append(str(path.relative_to(CSRC)))
                break
        else:
            out.append(f"<unresolved {name}>")
    return out


def upward(
    graph: dict[str, list[str]], layers: list[tuple[str, str, tuple[str, ...]]] = LAYERS
) -> list[tuple[str, str]]:
    """The includes of `graph` that go to a higher layer."""
    return sorted((f, t) for f, ts in graph.items() for t in ts if layer_of(t, layers) > layer_of(f, layers))


GRAPH = {f: includes(f) for f in native_files()}


def test_every_native_file_has_a_layer() -> None:
    def no_layer(rel: str) -> list[str]:
        return [] if layer_of(rel) >= 0 else ["add it to LAYERS"]

    assert_every_file(native_files(), no_layer, "files of csrc/ in no layer", "csrc/{}".format)


def test_every_quoted_include_is_a_file_of_csrc() -> None:
    def unresolved(rel: str) -> list[str]:
        return [t for t in GRAPH[rel] if t.startswith("<unresolved")]

    assert_every_file(
        native_files(), unresolved, "quoted includes that are no file of csrc/", "csrc/{}".format
    )


def test_includes_point_downward() -> None:
    wrong = [e for e in upward(GRAPH) if e not in UPWARD]
    assert wrong == [], "includes going up a layer (csrc/events.h holds what producers call)"


def test_every_explained_upward_include_is_still_there() -> None:
    assert [e for e in UPWARD if e not in upward(GRAPH)] == []


def test_producers_reach_consumers_through_the_events_header() -> None:
    for producer in ("context/aten_ops.cpp", "cupti/tracer.cpp"):
        assert "events.h" in GRAPH[producer]
        assert not [t for t in GRAPH[producer] if t.startswith(("host/", "pcsampling/"))]


def test_the_check_catches_an_include_going_up() -> None:
    layers = [("low", "", ("a/",)), ("mid", "", ("m.h",)), ("high", "", ("b/",))]
    graph = {"a/x.cpp": ["a/y.h", "b/z.h"], "b/z.h": ["m.h", "a/y.h"], "m.h": []}
    assert upward(graph, layers) == [("a/x.cpp", "b/z.h")]
    assert layer_of("session.cpp") == layer_of("session.h") > layer_of("frames/code_registry.h")
    assert layer_of("nowhere/x.h") == -1
