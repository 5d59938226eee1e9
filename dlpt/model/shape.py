"""Checking loosely typed JSON against dataclasses: the session format's typed parts (``meta``,
node extras) are dataclasses (dlpt.model.meta), and :func:`builder` turns a class into the
function that checks a parsed value all the way down and returns the typed object.

A field's annotation says what it holds:

- ``int``: a count or a time in ns, an int (not a bool) in [0, 2**63): a signed 64-bit integer,
  what the analysis computes in (torch's int64 tensors: a larger value in a hostile file crashed
  the report across ranks), far above any real count; ``bool``, ``str``; ``float``: any number;
  ``Any``: anything.
- ``Annotated[T, check]``: ``check(value, where)`` says what is allowed (a signed integer, a
  duration in seconds, a row of integers); the value is kept as it is.
- ``list[T]``, ``dict[str, T]``, a nested dataclass, ``T | None``.
- A field without a default is a required key. One with a default may be absent (it then reads
  as the default); ``null`` where it is present is refused unless the field is :func:`nullable`.

Keys a class does not name are allowed (producers may add metadata without a format bump) and
ignored here; the mapping they came in keeps them.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin, get_type_hints

from dlpt.model.safe_text import escape_control

__all__ = [
    "MAX_INT",
    "MAX_INT_TEXT",
    "SchemaError",
    "Build",
    "builder",
    "build_present",
    "build_checked",
    "check_int",
    "nullable",
    "short",
    "signed_int",
    "seconds",
    "line_number",
    "str_or_num",
    "int_row",
    "lenient_build",
]

MAX_INT = 2**63  # exclusive bound of every count and time in a session: an int64 holds it
MAX_INT_TEXT = "2**63"

#: Checks ``value`` (found at ``where``) and returns its typed form.
Build = Callable[[Any, str], Any]
#: Checks ``value`` found at ``where`` (raises SchemaError); the value is kept as it is.
Check = Callable[[Any, str], None]

_T = TypeVar("_T")
_NULLABLE = "dlpt.nullable"


class SchemaError(Exception):
    """``where`` (e.g. ``meta.compile[0].line``) and what is wrong with it."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where} {problem}")


def nullable(default: Any = None) -> Any:
    """A field that may be absent or ``null`` (reads as ``default``)."""
    return dataclasses.field(default=default, metadata={_NULLABLE: True})


def short(v: object) -> str:
    """A short repr for messages (a huge value in a hostile file must not flood them)."""
    text = type(v).__name__ if isinstance(v, (dict, list)) else repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def check_int(v: object) -> bool:
    """A count or a time in ns: an int (not a bool) in [0, 2**63)."""
    return type(v) is int and 0 <= v < MAX_INT


# -- leaf checks (used through Annotated, or by the plain types below) ----------------------------


def _u64(v: Any, where: str) -> None:
    if not check_int(v):
        raise SchemaError(where, f"must be a non-negative integer below {MAX_INT_TEXT}, got {short(v)}")


def signed_int(v: Any, where: str) -> None:
    if type(v) is not int or not -MAX_INT < v < MAX_INT:
        raise SchemaError(where, f"must be an integer, got {short(v)}")


def _str(v: Any, where: str) -> None:
    if type(v) is not str:
        raise SchemaError(where, f"must be a string, got {short(v)}")


def _bool(v: Any, where: str) -> None:
    if type(v) is not bool:
        raise SchemaError(where, f"must be true or false, got {short(v)}")


def _num(v: Any, where: str) -> None:
    if type(v) not in (int, float):
        raise SchemaError(where, f"must be a number, got {short(v)}")


def seconds(v: Any, where: str) -> None:
    """A duration in seconds: a finite number >= 0 (NaN, infinities and negative times are what
    a broken clock or a hostile file holds, never a measurement)."""
    if type(v) not in (int, float) or not 0 <= v < float("inf"):
        raise SchemaError(where, f"must be a duration in seconds (a finite number >= 0), got {short(v)}")


def str_or_num(v: Any, where: str) -> None:
    if type(v) not in (str, int, float):
        raise SchemaError(where, f"must be a string or a number, got {short(v)}")


def line_number(k: Any, where: str) -> None:
    """A dict key that is a line number written as a decimal string (``meta.sources``)."""
    if type(k) is not str or not k.isdigit() or not k.isascii():
        raise SchemaError(where, "must be a line number written as a decimal string")


def int_row(width: int, signed: tuple[int, ...] = ()) -> Check:
    """A list of ``width`` integers, non-negative but for the positions in ``signed`` (>= -1)."""

    int_only = {int}

    def run(v: Any, where: str) -> None:
        if type(v) is not list or len(v) != width or set(map(type, v)) != int_only:
            raise SchemaError(where, f"must be a list of {width} integers, got {short(v)}")
        # The common case in builtins (a timeline holds 500,000 rows); the loop checks rows with
        # a negative value (-1 where ``signed`` allows it) and says what is wrong.
        if max(v) < MAX_INT and min(v) >= 0:
            return
        for i, x in enumerate(v):
            if not (-1 if i in signed else 0) <= x < MAX_INT:
                raise SchemaError(f"{where}[{i}]", f"is out of range: {x}")

    return run


_PLAIN: dict[Any, Check] = {int: _u64, bool: _bool, str: _str, float: _num}

# Predicates true for values a check accepts (false for some it also accepts): what a container
# tests first, so that the message naming an item (a string built per item: seconds for the
# 100,000 lines of ``meta.sources``) is built only to say what is wrong.
_QUICK: dict[Any, Callable[[Any], bool]] = {
    _str: lambda v: type(v) is str,
    _u64: check_int,
    line_number: lambda k: type(k) is str and k.isdigit() and k.isascii(),
}


def _keep(check: Check) -> Build:
    def run(v: Any, where: str) -> Any:
        check(v, where)
        return v

    run.check = check  # type: ignore[attr-defined]
    return run


_BUILDERS: dict[Any, Build] = {}


def builder(tp: Any) -> Build:
    """The function that checks a value against ``tp`` and returns its typed form (cached)."""
    made = _BUILDERS.get(tp)
    if made is None:
        made = _BUILDERS[tp] = _make(tp)
    return made


def _quick_of(build: Build) -> Callable[[Any], bool] | None:
    return _QUICK.get(getattr(build, "check", None))


def _make(tp: Any) -> Build:
    if tp is Any:
        return lambda v, _where: v
    if tp in _PLAIN:
        return _keep(_PLAIN[tp])
    origin = get_origin(tp)
    if origin is Annotated:
        check = next(a for a in tp.__metadata__ if callable(a))
        return _keep(check)
    if origin in (Union, types.UnionType):
        inner = [a for a in get_args(tp) if a is not type(None)]
        if len(inner) != 1:
            raise TypeError(f"unsupported union {tp!r}")
        return builder(inner[0])  # None is the field's business (nullable or absent)
    if origin is list:
        return _list_of(builder(get_args(tp)[0]))
    if origin is dict:
        key_tp, value_tp = get_args(tp)
        return _dict_of(builder(key_tp), builder(value_tp))
    if dataclasses.is_dataclass(tp):
        return _object(typing.cast(type, tp))
    raise TypeError(f"unsupported annotation {tp!r}")


def _list_of(item: Build) -> Build:
    ok = _quick_of(item)
    kept = hasattr(item, "check")  # items kept as they are: the list is returned as it is

    def run(v: Any, where: str) -> Any:
        if type(v) is not list:
            raise SchemaError(where, f"must be a list, got {short(v)}")
        if kept:
            for i, x in enumerate(v):
                if ok is None or not ok(x):
                    item(x, f"{where}[{i}]")
            return v
        return [item(x, f"{where}[{i}]") for i, x in enumerate(v)]

    return run


def _dict_of(key: Build, item: Build) -> Build:
    ok, key_ok = _quick_of(item), _quick_of(key)
    kept = hasattr(item, "check")

    def run(v: Any, where: str) -> Any:
        if type(v) is not dict:
            raise SchemaError(where, f"must be an object, got {short(v)}")
        out = v if kept else {}
        for k, x in v.items():
            if key_ok is None or not key_ok(k):
                key(k, f"{where} key {short(k)}:")
            if kept:
                if ok is None or not ok(x):
                    item(x, f"{where}.{escape_control(k)}")
            else:
                out[k] = item(x, f"{where}.{escape_control(k)}")
        return out

    return run


def _object(cls: type) -> Build:
    hints = get_type_hints(cls, include_extras=True)
    fields = []
    for f in dataclasses.fields(cls):
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        fields.append((f.name, builder(hints[f.name]), required, bool(f.metadata.get(_NULLABLE))))

    def run(v: Any, where: str) -> Any:
        if type(v) is not dict:
            raise SchemaError(where, f"must be an object, got {short(v)}")
        kwargs: dict[str, Any] = {}
        for name, build, required, null_ok in fields:
            if name not in v:
                if required:
                    raise SchemaError(where, f"lacks the key {name!r}")
                continue
            x = v[name]
            if x is None and null_ok:
                continue
            kwargs[name] = build(x, f"{where}.{name}")
        return cls(**kwargs)

    return run


def build_fields(cls: type[_T], v: Mapping[str, Any], where: str, lenient: bool) -> _T:
    """``cls`` from the mapping ``v`` whose keys may each be ``null`` (read as absent): the top
    level of ``meta``. ``lenient``: a key of the wrong shape reads as :func:`lenient_build` reads
    it instead of raising (a session built in memory, whose producer is dlpt itself, is never
    refused)."""
    kwargs: dict[str, Any] = {}
    for name, build in _fields_of(cls):
        x = v.get(name)
        if x is None:
            continue
        if not lenient:
            kwargs[name] = build(x, f"{where}.{name}")
            continue
        try:
            kwargs[name] = build(x, f"{where}.{name}")
        except SchemaError:
            got = lenient_build(get_type_hints(cls, include_extras=True)[name], x, f"{where}.{name}")
            if got is not None:
                kwargs[name] = got
    return cls(**kwargs)


def lenient_build(tp: Any, v: Any, where: str) -> Any:
    """``v`` typed as ``tp``, or None when it is of the wrong shape, read as the defensive reads
    that the typed meta replaced read it: a list or an object of items (``list[T]``,
    ``dict[str, T]``) keeps its items of the right shape (a saved suggestion that is junk beside
    good ones), a record keeps its fields of the right shape (an optional field of the wrong
    shape reads as absent; a required one makes the record unreadable)."""
    try:
        return builder(tp)(v, where)
    except SchemaError:
        pass
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        (inner,) = [a for a in get_args(tp) if a is not type(None)]
        return lenient_build(inner, v, where)
    if origin is list and type(v) is list:
        item_tp = get_args(tp)[0]
        items = (lenient_build(item_tp, x, f"{where}[{i}]") for i, x in enumerate(v))
        return [x for x in items if x is not None]
    if origin is dict and type(v) is dict:
        key_tp, item_tp = get_args(tp)
        out = {}
        for k, x in v.items():
            if lenient_build(key_tp, k, where) is not None:
                got = lenient_build(item_tp, x, f"{where}.{k}")
                if got is not None:
                    out[k] = got
        return out
    if dataclasses.is_dataclass(tp) and type(v) is dict:
        return _lenient_object(typing.cast(type, tp), v, where)
    return None


def _lenient_object(cls: type, v: dict[str, Any], where: str) -> Any:
    hints = get_type_hints(cls, include_extras=True)
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        x = v.get(f.name)
        got = None if x is None else lenient_build(hints[f.name], x, f"{where}.{f.name}")
        if got is not None:
            kwargs[f.name] = got
        elif required:
            return None
    return cls(**kwargs)


def build_present(cls: type[_T], v: Mapping[str, Any]) -> _T:
    """``cls`` from the keys of ``v`` it names, as :func:`build_fields` with ``lenient`` (a value
    of the wrong shape, or null, reads as absent), for a mapping of a few of many keys made per
    node (node extras: a million-node session): the fields present are set on an instance made
    without ``cls.__init__``, the others read as their defaults, which the dataclass keeps as
    class attributes (the generated ``__init__`` of a frozen class sets every field, 7 µs for
    dlpt.model.meta.Extras's 24; this takes what is present). ``cls`` is a frozen dataclass
    without slots or ``__post_init__`` whose every field has a plain default."""
    fields = _present_fields(cls)
    typed = {}
    for name, x in v.items():
        field = fields.get(name)
        if field is None or x is None:
            continue
        build, ok = field
        if ok is not None and ok(x):
            typed[name] = x
            continue
        try:
            typed[name] = build(x, name)
        except SchemaError:
            continue  # reads as absent
    return _made(cls, typed)


def build_checked(cls: type[_T], v: Any, where: str) -> _T:
    """``cls`` from ``v`` checked as :func:`builder` checks it (:class:`SchemaError` names the
    first field of the wrong shape, in ``cls``'s order), made as :func:`build_present` makes it
    (only the fields present set: a node's extras checked at load, kept for the reports that
    read them). ``cls`` is a class :func:`build_present` takes."""
    if type(v) is not dict:
        raise SchemaError(where, f"must be an object, got {short(v)}")
    fields = _present_fields(cls)
    typed = {}
    try:
        for name, x in v.items():
            field = fields.get(name)
            if field is None:
                continue
            build, ok = field
            if ok is not None and ok(x):
                typed[name] = x
            elif x is not None or name not in _nullable_fields(cls):
                typed[name] = build(x, f"{where}.{name}")
    except SchemaError:
        builder(cls)(v, where)  # raises the error the checks in field order name
        raise
    return _made(cls, typed)


def _made(cls: type[_T], fields: dict[str, Any]) -> _T:
    """An instance of ``cls`` (a class :func:`build_present` takes) with ``fields`` set, made
    without its ``__init__``: the fields not set read as the class's defaults."""
    made = object.__new__(cls)
    made.__dict__.update(fields)
    return made


def _nullable_fields(cls: type) -> frozenset[str]:
    made = _NULLABLE_FIELDS.get(cls)
    if made is None:
        names = (f.name for f in dataclasses.fields(cls) if f.metadata.get(_NULLABLE))
        made = _NULLABLE_FIELDS[cls] = frozenset(names)
    return made


_NULLABLE_FIELDS: dict[type, frozenset[str]] = {}


def _present_fields(cls: type) -> dict[str, tuple[Build, Callable[[Any], bool] | None]]:
    made = _PRESENT.get(cls)
    if made is None:
        for f in dataclasses.fields(cls):
            if f.default is dataclasses.MISSING or getattr(cls, f.name, dataclasses.MISSING) is not f.default:
                raise TypeError(f"{cls.__name__}.{f.name}: build_present needs a plain default")
        if hasattr(cls, "__slots__") or hasattr(cls, "__post_init__"):
            raise TypeError(f"{cls.__name__}: build_present needs no slots and no __post_init__")
        made = _PRESENT[cls] = {name: (build, _quick_of(build)) for name, build in _fields_of(cls)}
    return made


_PRESENT: dict[type, dict[str, tuple[Build, Callable[[Any], bool] | None]]] = {}
_FIELDS: dict[type, tuple[tuple[str, Build], ...]] = {}


def _fields_of(cls: type) -> tuple[tuple[str, Build], ...]:
    """(name, builder) of each field of ``cls``, made once (:func:`build_present` runs per node)."""
    made = _FIELDS.get(cls)
    if made is None:
        hints = get_type_hints(cls, include_extras=True)
        fields = dataclasses.fields(cls)
        made = _FIELDS[cls] = tuple((f.name, builder(hints[f.name])) for f in fields)
    return made
