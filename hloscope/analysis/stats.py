"""Module statistics: the counts `hloscope parse` prints (no fusion semantics here).

A plain function from a parsed module to a small frozen result; renderers print it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from hloscope.hlo.model import HloModule


@dataclass(frozen=True)
class ComputationStats:
    """One computation's line in the summary.

    Attributes:
        name: Computation name.
        instructions: Number of instructions.
        is_entry: Whether it is the entry computation.
        is_fused: Whether a fusion instruction calls it (`calls=`).

    Example:
        >>> m = hloscope.load_run("tests/data/jax_mlp").main().load_after()
        >>> stats = hloscope.module_stats(m)
        >>> [(c.name, c.instructions) for c in stats.computations if c.is_entry]
        [('main.3', 20)]
    """

    name: str
    instructions: int
    is_entry: bool
    is_fused: bool


@dataclass(frozen=True)
class ModuleStats:
    """What `hloscope parse` reports about a module.

    Attributes:
        name: The HloModule name.
        path: Where it was read from, if from a file.
        instructions: Instructions in all computations.
        computations: Per-computation counts, in text order.
        fusions_by_kind: Fusion instructions by `kind=` (kLoop, kInput, ...).
        opcodes: Opcode histogram over all computations, most common first.
        is_scheduled: Whether the module is scheduled (XLA's after-optimization output).
        not_understood: How many things the tolerant parser kept without understanding.

    Example:
        >>> m = hloscope.load_run("tests/data/jax_mlp").main().load_after()
        >>> stats = hloscope.module_stats(m)
        >>> stats.name, stats.instructions
        ('jit_mlp', 125)
    """

    name: str
    path: str | None
    instructions: int
    computations: tuple[ComputationStats, ...]
    fusions_by_kind: dict[str, int]
    opcodes: dict[str, int]
    is_scheduled: bool
    not_understood: int


def module_stats(module: HloModule) -> ModuleStats:
    """Count computations, instructions, fusions by kind and opcodes of a module.

    Args:
        module: A parsed module.

    Returns:
        The counts.

    Example:
        >>> m = hloscope.load_run("tests/data/jax_mlp").main().load_after()
        >>> stats = hloscope.module_stats(m)
        >>> stats.instructions, len(stats.computations)
        (125, 14)
    """
    fused = module.fused_computations
    opcodes: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    for _, inst in module.instructions():
        opcodes[inst.opcode] += 1
        if inst.opcode == "fusion":
            kinds[inst.attributes.get("kind", "?")] += 1
    return ModuleStats(
        name=module.name,
        path=module.path,
        instructions=module.instruction_count,
        computations=tuple(
            ComputationStats(c.name, len(c.instructions), c.is_entry, c.name in fused)
            for c in module.computations
        ),
        fusions_by_kind=dict(kinds.most_common()),
        opcodes=dict(opcodes.most_common()),
        is_scheduled=module.is_scheduled,
        not_understood=module.stats.total,
    )
