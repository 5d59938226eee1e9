"""The checks of a session's loosely typed parts: ``meta`` (dlpt.model.meta.Meta) and the node
extras (``x``) that reports read (dlpt.model.meta.Extras), both defined once as dataclasses and
checked through them (dlpt.model.shape). docs/session-format.md describes the format.

Keys not typed there (in meta or in ``x``) are kept untouched: producers may add metadata
without a format bump. A typed meta key set to ``null`` reads as absent (older writers did that).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from dlpt.model.meta import Extras, Meta
from dlpt.model.shape import MAX_INT, MAX_INT_TEXT, SchemaError, build_checked, check_int

__all__ = [
    "SchemaError",
    "check_meta",
    "check_extras",
    "check_int",
    "MAX_INT",
    "MAX_INT_TEXT",
    "SCHEMA",
    "EXTRAS",
]

#: The typed meta keys.
SCHEMA = frozenset(f.name for f in dataclasses.fields(Meta))
#: The typed node extras.
EXTRAS = frozenset(f.name for f in dataclasses.fields(Extras))


def check_meta(meta: Mapping[str, Any]) -> Meta:
    """The typed meta; :class:`SchemaError` names the first typed key (or nested value) of the
    wrong shape."""
    return Meta.parse(meta)


def check_extras(x: Mapping[str, Any], where: str) -> Extras:
    """A node's ``x``, typed (:class:`Extras`, the keys present set); :class:`SchemaError` if
    it holds a typed key of the wrong shape."""
    return build_checked(Extras, x if type(x) is dict else dict(x), f"{where}.x")
