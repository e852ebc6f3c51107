"""Fuzzing the parser with mutated real modules (issue 14): a model or a parse error with
a line and column, never another exception, never a hang. A longer run with figures is
`benchmarks/fuzz_bench.py`."""

from __future__ import annotations

import random

import pytest

from tests.conftest import CORPUS, DATA
from tests.hlo.fuzzing import check_contract, mutate, seed_modules

SEED = 14
MUTATIONS = 1000
# Each input is a small module; real ones parse and analyse in milliseconds. The bound
# only catches hangs and super-linear blow-ups, not slowness.
SECONDS_PER_INPUT = 5.0


def _run(seeds: list[str], n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    violations = []
    for i in range(n):
        text = mutate(rng.choice(seeds), rng)
        outcome = check_contract(text, SECONDS_PER_INPUT)
        if outcome.kind == "violation":
            violations.append(f"input {i} (seed {seed}): {outcome.detail}\n{text[:300]!r}")
    return violations


@pytest.mark.skipif(not (CORPUS / "hlo").is_dir(), reason="../shared/corpus absent")
def test_mutated_corpus_modules_keep_the_contract() -> None:
    seeds = seed_modules([CORPUS / "hlo"], max_chars=40_000)
    assert len(seeds) > 20
    assert _run(seeds, MUTATIONS, SEED) == []


def test_mutated_captured_dumps_keep_the_contract() -> None:
    seeds = seed_modules([DATA], max_chars=40_000)
    assert len(seeds) > 10
    assert _run(seeds, MUTATIONS // 2, SEED + 1) == []


def test_the_unmutated_seeds_parse() -> None:
    # The mutations start from valid modules: otherwise every input is rejected at once
    # and the fuzzing tests nothing past the first line.
    seeds = seed_modules([DATA], max_chars=40_000)
    outcomes = [check_contract(s, SECONDS_PER_INPUT).kind for s in seeds]
    assert outcomes.count("parsed") == len(seeds)
