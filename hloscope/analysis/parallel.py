"""How many devices a module runs on and what its collectives exchange, from its HLO.

A module compiled for several devices says so in its header (`replica_count=`,
`num_partitions=`), its entry parameters carry the shardings they were split by
(`sharding={devices=[4,1]<=[4]}`), and each collective names the groups of devices it
joins (`replica_groups=`, in any of XLA's three spellings). The after-optimization module
of an SPMD program is one device's program: its shapes, bytes and FLOPs are per device.
`parallelism` reads these facts; renderers show them beside the kernels.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from hloscope.analysis.fusion import ModuleAnalysis
from hloscope.analysis.kernels import COLLECTIVE
from hloscope.analysis.memo import PerModule
from hloscope.hlo.model import HloModule, Instruction

__all__ = ["Collective", "Parallelism", "group_shape", "parallelism", "remember_parallelism"]


@dataclass(frozen=True, slots=True)
class Collective:
    """One collective kernel, as one device runs it.

    Attributes:
        name: The kernel (the top-level instruction: `all-reduce.3`, `all-gather-start`).
        kind: What it does (`all-reduce`, `all-gather`, `collective-permute`, ...).
        group_size: Devices in each group it joins (None when the HLO does not say).
        groups: How many such groups run it at once (None when unknown).
        bytes_per_device: What each device puts in: its operands' bytes (the wire
            traffic depends on the algorithm; a ring all-reduce sends 2(n-1)/n of it).
        launches: Launches per execution (None: a loop's trip count is unknown).
    """

    name: str
    kind: str
    group_size: int | None
    groups: int | None
    bytes_per_device: int
    launches: int | None


@dataclass(frozen=True)
class Parallelism:
    """The devices a module was compiled for.

    Attributes:
        replicas: `replica_count` from the header (1 when absent).
        partitions: `num_partitions` from the header (1 when absent).
        shardings: (entry parameter, its `sharding=` text) for each parameter that has
            one, in parameter order.
        collectives: Its collective kernels, in kernel order.
    """

    replicas: int
    partitions: int
    shardings: tuple[tuple[str, str], ...]
    collectives: tuple[Collective, ...]

    @property
    def devices(self) -> int:
        """Devices one execution runs on: replicas times partitions."""
        return self.replicas * self.partitions


def parallelism(module: HloModule, analysis: ModuleAnalysis) -> Parallelism | None:
    """What a module's HLO says about the devices it runs on; None for a module compiled
    for one device with no collective.

    Computed once per (module, analysis) pair alive (`remember_parallelism` says one
    made elsewhere: a worker process of `hloscope.analysis.pool`).

    Args:
        module: The parsed after-optimization module.
        analysis: `analyze_module(module)` (its collective kernels).
    """
    return _found(module, analysis)


def remember_parallelism(
    module: HloModule, analysis: ModuleAnalysis, found: Parallelism | None
) -> None:
    """Keep `found` as `parallelism(module, analysis)`, while both live."""
    _found.remember(module, analysis, found)


def _parallelism(module: HloModule, analysis: ModuleAnalysis) -> Parallelism | None:
    replicas = _count(module.attributes.get("replica_count"))
    partitions = _count(module.attributes.get("num_partitions"))
    shardings = tuple(
        (p.name, p.attributes["sharding"].strip("{}"))
        for p in sorted(module.entry.parameters, key=lambda p: p.parameter_number or 0)
        if "sharding" in p.attributes
    )
    collectives = []
    for k in analysis.kernels:
        if k.cls != COLLECTIVE:
            continue
        inst = _carrier(k.ops, module, k.name)
        size, groups = (None, None)
        if inst is not None:
            size, groups = group_shape(inst, replicas, partitions)
        collectives.append(Collective(k.name, k.kind, size, groups, k.bytes_in, k.launches))
    if replicas * partitions == 1 and not collectives:
        return None
    return Parallelism(replicas, partitions, shardings, tuple(collectives))


def _count(text: str | None) -> int:
    return int(text) if text is not None and text.isdigit() and int(text) > 0 else 1


def _carrier(ops: tuple[Instruction, ...], module: HloModule, name: str) -> Instruction | None:
    """The instruction that holds the collective's groups: the kernel's own, or the
    collective an `async-start` wraps."""
    for inst in ops:
        if any(a in inst.attributes for a in ("replica_groups", "source_target_pairs")):
            return inst
    for _, inst in module.instructions():
        if inst.name == name:
            return inst
    return None


# `[2,4]<=[8]` or `[2,4]<=[4,2]T(1,0)`: groups x group size, over iota device ids.
_IOTA = re.compile(r"\[(\d+),(\d+)\]<=\[[\d,]+\](?:T\([\d,]+\))?")
# `mesh['x'=4,'y'=2] {'x'}`: the named mesh axes each group spans.
_MESH = re.compile(r"mesh\[(?P<axes>[^\]]*)\]\s*\{(?P<grouped>[^}]*)\}")
_AXIS = re.compile(r"'([^']*)'\s*=\s*(\d+)")


def group_shape(inst: Instruction, replicas: int, partitions: int) -> tuple[int | None, int | None]:
    """(devices per group, groups) of a collective, from its `replica_groups` (or a
    `collective-permute`'s `source_target_pairs`: the devices it moves data between,
    one group).

    Empty groups join every device of the mode XLA infers (`CollectiveOpGroupMode`):
    all replicas without a `channel_id`, all partitions with one, unless
    `use_global_device_ids` asks for global ids (which must be listed).
    """
    pairs = inst.attributes.get("source_target_pairs")
    if pairs is not None:
        ids = {int(x) for x in re.findall(r"\d+", pairs)}
        return (len(ids) or None), (1 if ids else None)
    raw = inst.attributes.get("replica_groups")
    if raw is None:
        return None, None
    text = raw.strip()
    iota = _IOTA.fullmatch(text)
    if iota:
        return int(iota.group(2)), int(iota.group(1))
    mesh = _MESH.fullmatch(text)
    if mesh:
        axes = {name: int(n) for name, n in _AXIS.findall(mesh.group("axes"))}
        grouped = re.findall(r"'([^']*)'", mesh.group("grouped"))
        if not axes or any(g not in axes for g in grouped):
            return None, None
        size = math.prod(axes[g] for g in grouped)
        return size, math.prod(axes.values()) // size
    listed = re.findall(r"\{([\d,\s]*)\}", text[1:-1] if text.startswith("{") else text)
    sizes = {len(g.split(",")) for g in listed if g.strip()}
    if sizes:  # groups of different sizes have no one size
        return (sizes.pop() if len(sizes) == 1 else None), len(listed)
    if "use_global_device_ids" in inst.attributes:
        return None, None
    whole = partitions if "channel_id" in inst.attributes else replicas
    return whole, 1


_found = PerModule(_parallelism)
