"""speedscope's JSON file format (https://www.speedscope.app/file-format-schema.json): one
"sampled" profile per metric with any value; each tree node with a self value is one sample whose
stack is its path from the root and whose weight is that value. Open it at speedscope.app or with
``npx speedscope FILE``. Raw totals over the profiled window (not per step), from the run's
view's whole tree, so the weights of all samples sum to the session's total of the metric."""

from __future__ import annotations

from typing import Any

from dlpt._version import __version__
from dlpt.model.metrics import METRICS, Metric
from dlpt.model.session import Session
from dlpt.model.tree import Node
from dlpt.renderers.exports.stacks import frame_label, program_name, stacks
from dlpt.views.run import RunView, view_of

__all__ = ["SPEEDSCOPE_SCHEMA", "speedscope"]

SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"
_UNITS = {"ns": "nanoseconds", "bytes": "bytes", "count": "none"}


def speedscope(
    source: Session | RunView, metric: str | Metric | None = None, show_all: bool | None = None
) -> dict[str, Any]:
    """The speedscope file of a session or of the run's view of it (``show_all`` None: as the
    view is): one profile per metric with a non-zero total; ``metric`` (default: GPU time if
    any, else CPU op time) is the one speedscope opens."""
    sv = view_of(source, show_all)
    session, root = sv.session, sv.whole
    first = sv.metric(metric)
    frames: list[dict[str, Any]] = []
    index: dict[tuple[str, str, int], int] = {}

    def frame_of(node: Node) -> int:
        key = (frame_label(node), node.file, node.line)
        i = index.get(key)
        if i is None:
            i = index[key] = len(frames)
            f: dict[str, Any] = {"name": key[0]}
            if node.kind == "frame" and node.file:
                f.update(file=node.file, line=node.line)
            frames.append(f)
        return i

    profiles: list[dict[str, Any]] = []
    active = 0
    for m in METRICS.values():
        total = m(root.inclusive)
        if total <= 0:
            continue
        if m.name == first.name:
            active = len(profiles)
        samples, weights = [], []
        for path, v in stacks(root, m):
            # Work recorded on the root itself (no context at all) gets a frame of its own.
            samples.append([frame_of(n) for n in path] if path else [frame_of(root)])
            weights.append(v)
        profiles.append(
            {
                "type": "sampled",
                "name": m.label,
                "unit": _UNITS[m.unit],
                "startValue": 0,
                "endValue": total,
                "samples": samples,
                "weights": weights,
            }
        )
    return {
        "$schema": SPEEDSCOPE_SCHEMA,
        # Right after the schema: how dlpt recognises its own export before replacing a file
        # (dlpt.files.own_files), whatever the length of the name.
        "exporter": f"dlpt {__version__}",
        "name": program_name(session),
        "activeProfileIndex": active,
        "profiles": profiles,
        "shared": {"frames": frames},
    }
