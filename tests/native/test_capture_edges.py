"""Capture in less common situations: generators and coroutines (frames owned by generator
objects), ops that raise, nested profiles of threads that outlive nothing. The profiler must
attribute correctly and never crash or hang."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
import torch

import dlpt
from tests.query import Q, line_of

HERE = __file__


def gen_ops(a, n):
    for _ in range(n):
        yield torch.sqrt(a.abs())  # @gen


async def coro_ops(a, n):
    out = a
    for _ in range(n):
        await asyncio.sleep(0)
        out = torch.erf(out)  # @coro
    return out


def names_under(q: Q, fn, tag: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for n in q.under_line(HERE, line_of(tag, fn)):
        if n["kind"] == "op":
            out[n["name"]] = out.get(n["name"], 0) + n["m"].get("calls", 0)
    return out


def test_ops_in_generators_and_coroutines_land_on_their_lines():
    a = torch.randn(16)
    with dlpt.profile() as prof:
        list(gen_ops(a, 4))
        asyncio.run(coro_ops(a, 3))
    q = Q(prof.session)
    assert names_under(q, gen_ops, "gen").get("aten::sqrt") == 4
    assert names_under(q, coro_ops, "coro").get("aten::erf") == 3


def bad_then_good(a, b):
    with contextlib.suppress(RuntimeError):
        torch.mm(a, b)  # @bad  (shapes do not match: raises inside the op)
    return torch.mm(a, a.T)  # @good


def test_an_op_that_raises_leaves_capture_consistent():
    a, b = torch.randn(4, 3), torch.randn(4, 3)
    with dlpt.profile() as prof:
        for _ in range(3):
            bad_then_good(a, b)
    q = Q(prof.session)
    good = names_under(q, bad_then_good, "good")
    assert good.get("aten::mm") == 3
    # The good line is not nested under the failing one.
    bad_ids = {n["id"] for n in q.under_line(HERE, line_of("bad", bad_then_good))}
    good_ids = {n["id"] for n in q.under_line(HERE, line_of("good", bad_then_good))}
    assert not bad_ids & good_ids


def test_the_program_exception_inside_a_profile_still_gives_a_session():
    with pytest.raises(ValueError), dlpt.profile() as prof:
        torch.ones(2) + 1
        raise ValueError("the program's own error")
    assert any(n["name"] == "aten::add" for n in prof.session.nodes)
    with dlpt.profile():  # and the next profile can start
        pass
