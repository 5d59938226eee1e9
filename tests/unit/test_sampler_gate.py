"""The host sampler is refused unless the user opts in (it crashed GPU runs in testing), with a
one-line usage error; off (the default) it needs nothing."""

from __future__ import annotations

import pytest

import dlpt
from dlpt.capture.host import DEFAULT_SAMPLE_HZ, EXPERIMENTAL_ENV, check_options
from dlpt.errors import UsageError


def test_the_sampler_is_off_by_default_and_refused_without_the_opt_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert DEFAULT_SAMPLE_HZ == 0
    monkeypatch.delenv(EXPERIMENTAL_ENV, raising=False)
    check_options(0, 0)  # off, and a timeline alone: fine
    check_options(0, 3)
    with pytest.raises(UsageError, match=f"experimental.*{EXPERIMENTAL_ENV}=1"):
        dlpt.profile(sample_hz=1000)
    monkeypatch.setenv(EXPERIMENTAL_ENV, "1")
    check_options(1000, 0)
