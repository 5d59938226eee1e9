"""Every test run: the host sampler is experimental (dlpt/capture/host.py says why), so the tests
that exercise it opt in here, for this process and the programs it starts; one test checks that
it is refused without the opt-in (tests/unit/test_sampler_gate.py)."""

import os

os.environ.setdefault("DLPT_EXPERIMENTAL_SAMPLER", "1")
