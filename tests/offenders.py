"""One test per rule over many files, instead of one test case per file.

The rules that hold every source file (paths in comments, import layers, includes) ran as
thousands of parametrized cases, each failing alone. Here a rule's check runs on every file in
one test, and a failure lists every file that breaks it, with what the check found there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


def offenders(
    items: Iterable[T], check: Callable[[T], Iterable[str]], name: Callable[[T], str]
) -> dict[str, list[str]]:
    """What ``check`` finds in each item, by the item's name, for the items where it finds something."""
    found = {name(item): sorted(set(check(item))) for item in items}
    return {k: v for k, v in found.items() if v}


def assert_every_file(
    items: Iterable[T], check: Callable[[T], Iterable[str]], rule: str, name: Callable[[T], str] = str
) -> None:
    """Fail, listing every offender and what ``check`` found in it, unless ``check`` finds
    nothing in any of ``items``. No items fails too: a rule that checks nothing holds nothing."""
    items = list(items)
    assert items, f"{rule}: no files to check"
    bad = offenders(items, check, name)
    lines = [f"  {k}: {', '.join(v)}" for k, v in bad.items()]
    assert not bad, f"{rule}: {len(bad)} of {len(items)} files\n" + "\n".join(lines)
