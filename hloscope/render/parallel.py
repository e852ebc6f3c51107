"""A module's devices and collectives (`hloscope.analysis.parallel`) -> JSON and text.

`parallel_doc` fixes the `parallel` object of each module in `hloscope report --json`;
`parallel_lines` gives the terminal report's lines. Nothing here computes.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from hloscope.analysis.parallel import Collective, Parallelism, parallelism
from hloscope.analysis.report import ModuleReport
from hloscope.render.format import counted, fmt_bytes

__all__ = ["module_parallelism", "parallel_doc", "parallel_lines"]

# Collectives listed in the terminal, the most bytes per execution first.
SHOWN = 5


def module_parallelism(m: ModuleReport) -> Parallelism | None:
    """What a module's after-optimization HLO says about its devices (None: one device
    and no collective, or no after module)."""
    if m.after_module is None or m.after is None:
        return None
    return parallelism(m.after_module, m.after)


def parallel_doc(m: ModuleReport) -> dict[str, Any] | None:
    """A module's `parallel` object: `replicas`, `partitions`, `devices` (their
    product), `shardings` (`[{parameter, sharding}]` of the entry parameters that have
    one), `collectives` (`[{name, kind, group_size, groups, bytes_per_device,
    launches}]`: devices per group, groups, the bytes each device puts in (its
    operands), launches per execution); null for one device and no collective."""
    p = module_parallelism(m)
    if p is None:
        return None
    return {
        "replicas": p.replicas,
        "partitions": p.partitions,
        "devices": p.devices,
        "shardings": [{"parameter": name, "sharding": s} for name, s in p.shardings],
        "collectives": [
            {
                "name": c.name,
                "kind": c.kind,
                "group_size": c.group_size,
                "groups": c.groups,
                "bytes_per_device": c.bytes_per_device,
                "launches": c.launches,
            }
            for c in p.collectives
        ],
    }


def _devices(p: Parallelism) -> str:
    parts = []
    if p.partitions > 1:
        parts.append(counted(p.partitions, "partition"))
    if p.replicas > 1:
        parts.append(counted(p.replicas, "replica"))
    text = f"{p.devices}"
    joined = max((c.group_size or 0 for c in p.collectives), default=0)
    if p.devices == 1 and joined > 1:  # a binary dump keeps no header counts
        return f"not in the module's header; its collectives join up to {joined} devices"
    if parts:
        text += f" ({' × '.join(parts)}); this program is one device's: its shapes, bytes "
        text += "and FLOPs are per device"
    return text


def _collective(c: Collective) -> str:
    if c.group_size is None:
        over = "groups of different or unknown sizes"
    else:
        over = f"groups of {c.group_size}" if (c.groups or 1) > 1 else f"{c.group_size} devices"
    times = f" ×{c.launches}" if c.launches not in (None, 1) else ""
    return f"{c.name} ({c.kind} over {over}){times}: {fmt_bytes(c.bytes_per_device)} from each"


def parallel_lines(m: ModuleReport) -> list[Text]:
    """`devices:` and `collectives:` lines for a module on several devices; [] else."""
    p = module_parallelism(m)
    if p is None:
        return []
    lines = [Text.assemble(("devices: ", "bold"), _devices(p))]
    if p.shardings:
        shown = ", ".join(f"{name} {s}" for name, s in p.shardings[:4])
        more = f" +{len(p.shardings) - 4} more" if len(p.shardings) > 4 else ""
        lines.append(Text(f"parameters split by: {shown}{more}", style="dim"))
    if p.collectives:
        heavy = sorted(
            p.collectives, key=lambda c: (-(c.bytes_per_device * (c.launches or 1)), c.name)
        )
        text = "; ".join(_collective(c) for c in heavy[:SHOWN])
        if len(heavy) > SHOWN:
            text += f"; +{len(heavy) - SHOWN} more (--json lists all)"
        lines.append(Text.assemble(("collectives per device: ", "bold"), text))
    return lines
