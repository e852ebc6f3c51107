"""Fuzzing at length: mutated real HLO modules through the parser and the analyses.

The same mutations and contract as `tests/hlo/test_fuzz.py` (see `tests/hlo/fuzzing.py`):
each input gives a model or an `HloParseError` with a line and a column, never another
exception, never a run past the time bound; a model then goes through
`analyze_module`, `provenance.trace` and the networkx view. Seeds are the modules of
../shared/corpus/hlo (when present) and tests/data. Prints how many inputs ran, parsed
and were rejected, the slowest input, and every contract violation.

    PYTHONPATH=$PWD python benchmarks/fuzz_bench.py [--mutations 5000] [--seed 14]
        [--max-chars 200000] [--limit 10]

Exit status 1 when any input broke the contract.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.hlo.fuzzing import check_contract, mutate, seed_modules  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mutations", type=int, default=5000, help="inputs to try")
    ap.add_argument("--seed", type=int, default=14, help="random seed (runs repeat)")
    ap.add_argument("--max-chars", type=int, default=200_000, help="largest seed module")
    ap.add_argument("--limit", type=float, default=10.0, help="seconds allowed per input")
    args = ap.parse_args()

    folders = [ROOT.parent / "shared" / "corpus" / "hlo", ROOT / "tests" / "data"]
    seeds = seed_modules(folders, args.max_chars)
    if not seeds:
        print("no seed modules found", file=sys.stderr)
        return 2
    print(f"seeds: {len(seeds)} modules from {', '.join(str(f) for f in folders if f.is_dir())}")

    rng = random.Random(args.seed)
    kinds: Counter[str] = Counter()
    worst = (0.0, "")
    violations: list[str] = []
    t0 = time.perf_counter()
    for i in range(args.mutations):
        text = mutate(rng.choice(seeds), rng)
        outcome = check_contract(text, args.limit)
        kinds[outcome.kind] += 1
        if outcome.seconds > worst[0]:
            worst = (outcome.seconds, f"input {i} ({len(text):,} chars, {outcome.kind})")
        if outcome.kind == "violation":
            violations.append(f"input {i}: {outcome.detail.strip()}\n  text: {text[:200]!r}")
    total = time.perf_counter() - t0

    print(
        f"inputs: {args.mutations}  parsed: {kinds['parsed']}  rejected (HloParseError): "
        f"{kinds['rejected']}  contract violations: {kinds['violation']}"
    )
    print(f"worst time: {worst[0] * 1000:.1f} ms, {worst[1]}; total {total:.1f} s")
    for v in violations:
        print(v)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
