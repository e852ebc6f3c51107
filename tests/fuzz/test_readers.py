"""Fuzzing every reader in CI (issue 25): binary HLO, HLO text, trace.json, XSpace,
nsys-jax archives and run folders with their caches. Each case runs in a worker process
under the limits of the long campaign (2 GB of address space, 60 s), so that a hang or
a blow-up fails the test instead of the suite. `benchmarks/fuzz_bench.py` runs the same
generators at length and prints the figures the README quotes.
"""

from __future__ import annotations

import pytest

from tests.fuzz.harness import Campaign
from tests.fuzz.readers import READERS, available

SEED = 25
CASES = 24


@pytest.fixture(scope="module")
def campaign() -> Campaign:
    with Campaign() as c:
        yield c  # type: ignore[misc]


@pytest.mark.parametrize("reader", sorted(READERS))
def test_the_reader_keeps_its_contract(campaign: Campaign, reader: str) -> None:
    if not available(reader):
        pytest.skip(f"{reader}: its seeds need ../shared/gpu (see its README.md)")
    violations = []
    kinds = set()
    for i in range(CASES):
        r = campaign.run(reader, SEED, i)
        kinds.add(r.kind)
        if r.kind in ("traceback", "hang", "blow-up", "contract", "unbuilt"):
            violations.append(f"case {i} ({reader} {SEED} {i}): {r.kind}\n{r.detail}")
    assert violations == []
    # The generators reach both sides of the contract: inputs read, inputs refused.
    assert kinds >= {"read", "rejected"}, kinds
