"""Source op -> kernel: which of the user's ops ended up in which kernel, and which not.

Every HLO instruction carries the framework op it came from in its metadata (TensorFlow
`op_type`/`op_name`, JAX `op_name` such as `jit(mlp)/dot_general`, and a source
location). `trace` joins the before- and after-optimization modules on those names:
for each kernel the source ops it contains, for each source op the kernels it landed in,
and for source ops that vanished the evidence of why (constant folding, dead code, a
no-op that became a bitcast). Reasons are only claimed where the modules show them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from hloscope.analysis import kernels as K
from hloscope.analysis.fusion import Kernel, ModuleAnalysis, walk
from hloscope.analysis.fusion_log import FusionDecisions
from hloscope.hlo.model import HloModule, Instruction, SourceLocation

# Ops that only move or relabel data; XLA's simplifier routinely merges them away.
_DATA_MOVEMENT = frozenset(
    {
        "reshape",
        "transpose",
        "broadcast",
        "bitcast",
        "copy",
        "convert",
        "slice",
        "bitcast-convert",
        "get-tuple-element",
        "tuple",
    }
)

# TensorFlow's plumbing around the traced function: not user ops.
_PLUMBING = frozenset({"XLA_Args", "XLA_Retvals"})

FUSED = "fused"  # shares a kernel with other source ops
ALONE = "alone"  # every kernel it is in holds only this source op
FOLDED = "folded"  # computed from constants only: constant folding removed it
DEAD = "dead"  # its result was not used: dead code elimination removed it
FREE = "free"  # still there, but only as instructions that launch nothing (bitcast...)
REMOVED = "removed"  # gone, and the modules give no evidence why


@dataclass(frozen=True)
class SourceOp:
    """A framework op as the metadata names it.

    Attributes:
        name: TensorFlow op_name or JAX op_name path (`jit(mlp)/jit(relu)/max`).
        type: TensorFlow op_type (`MatMul`), when present.
        location: Where in the user's code it was created, when known.
    """

    name: str
    type: str | None = None
    location: SourceLocation | None = None

    @property
    def label(self) -> str:
        """`name` with the TensorFlow op type when it differs: `dense/MatMul (MatMul)`."""
        if self.type and self.type != self.name.rsplit("/", 1)[-1]:
            return f"{self.name} ({self.type})"
        return self.name


@dataclass(frozen=True)
class Placement:
    """Where one source op went.

    Attributes:
        op: The source op.
        status: FUSED, ALONE, FOLDED, DEAD, FREE or REMOVED.
        kernels: The kernels (instruction names) it landed in.
        shares_with: Other source ops in those kernels.
        bytes: Bytes its kernels read and write (the memory traffic it costs when alone).
        before: HLO instructions it had before optimization.
        after: HLO instructions it has after optimization.
        evidence: Why it is alone or gone, as the modules show it; "" when they show
            nothing (and then hloscope says XLA gave no reason).
    """

    op: SourceOp
    status: str
    kernels: tuple[str, ...]
    shares_with: tuple[str, ...]
    bytes: int
    before: int
    after: int
    evidence: str = ""


@dataclass(frozen=True)
class Provenance:
    """The join of a module's before and after forms on source op names.

    Attributes:
        placements: One per source op, in first-seen order.
        kernel_ops: For each kernel (by name), the source ops it contains.
        kernels_by_line: Source location -> number of kernels with an op from there.
    """

    placements: tuple[Placement, ...]
    kernel_ops: Mapping[str, tuple[SourceOp, ...]]
    kernels_by_line: Mapping[str, int]

    def unfused(self) -> list[Placement]:
        """Source ops that run alone, biggest memory traffic first."""
        alone = [p for p in self.placements if p.status == ALONE]
        return sorted(alone, key=lambda p: -p.bytes)

    def find(self, pattern: str) -> list[Placement]:
        """Placements whose op name, type or location contains `pattern` (any case)."""
        needle = pattern.lower()
        return [
            p
            for p in self.placements
            if needle in p.op.name.lower()
            or (p.op.type and needle in p.op.type.lower())
            or (p.op.location and needle in str(p.op.location).lower())
        ]


def is_framework_file(path: str) -> bool:
    """Whether a source path lies inside TensorFlow, Keras or JAX rather than user code.

    TensorFlow records the line in its own `ops.py` that created every op; such
    locations say nothing about the user's model and are left out of per-line counts.
    """
    return any(part in path for part in _FRAMEWORK_PATHS)


_FRAMEWORK_PATHS = (
    "/site-packages/tensorflow/",
    "/site-packages/keras/",
    "/site-packages/jax/",
    "/site-packages/flax/",
    "/tensorflow/python/",
)


def source_op(module: HloModule, inst: Instruction, scope: str = "") -> SourceOp | None:
    """The source op an instruction came from, or None when metadata names none."""
    md = inst.metadata
    if md is None or not md.op_name or md.op_name in _PLUMBING:
        return None
    name = md.op_name
    if scope and not name.startswith(scope):
        name = f"{scope}/{name}"
    return SourceOp(name, md.op_type, module.source_location(inst))


def trace(
    after: HloModule,
    analysis: ModuleAnalysis,
    before: HloModule | None = None,
    decisions: FusionDecisions | None = None,
) -> Provenance:
    """Join source ops to kernels.

    Args:
        after: The module after optimization.
        analysis: `analyze_module(after)`.
        before: The module before optimization, when the dump has it; without it only
            ops that survive are reported.
        decisions: XLA's priority-fusion log for this module (GPU), when the dump has
            one: its reasons are joined to the ops that run alone.

    Returns:
        The provenance of every source op.
    """
    kernel_ops: dict[str, tuple[SourceOp, ...]] = {}
    op_kernels: dict[str, list[Kernel]] = {}
    ops: dict[str, SourceOp] = {}
    after_count: Counter[str] = Counter()
    for kernel in analysis.kernels:
        found: dict[str, SourceOp] = {}
        for inst in kernel.ops:
            op = source_op(after, inst)
            if op is not None:
                found.setdefault(op.name, op)
                after_count[op.name] += 1
        kernel_ops[kernel.name] = tuple(found.values())
        for name, op in found.items():
            ops.setdefault(name, op)
            op_kernels.setdefault(name, []).append(kernel)

    # Instructions of the after module that launch nothing (bitcasts, tuples, ...).
    free_after: set[str] = set()
    for ex in walk(after):
        if ex.cls == K.FREE:
            op = source_op(after, ex.instruction, ex.scope)
            if op is not None:
                free_after.add(op.name)

    before_ops: dict[str, list[Instruction]] = {}
    evidence: dict[str, tuple[str, str]] = {}
    if before is not None:
        before_ops, evidence = _before_evidence(before)
        for name, insts in before_ops.items():
            if name not in ops:
                md_op = source_op(before, insts[0])
                ops[name] = SourceOp(
                    name, md_op.type if md_op else None, md_op.location if md_op else None
                )

    placements = []
    for name, op in ops.items():
        kernels = op_kernels.get(name, [])
        n_before = len(before_ops.get(name, ()))
        if kernels:
            others = sorted({o.name for k in kernels for o in kernel_ops[k.name]} - {name})
            status = FUSED if others else ALONE
            traffic = sum(k.bytes_in + k.bytes_out for k in kernels)
            placements.append(
                Placement(
                    op,
                    status,
                    tuple(k.name for k in kernels),
                    tuple(others),
                    traffic,
                    n_before,
                    after_count[name],
                    _why_alone(kernels, decisions) if status == ALONE else "",
                )
            )
        elif name in free_after:
            placements.append(
                Placement(
                    op,
                    FREE,
                    (),
                    (),
                    0,
                    n_before,
                    0,
                    "only instructions that launch nothing remain (bitcast, tuple, ...)",
                )
            )
        else:
            status, why = evidence.get(name, (REMOVED, ""))
            placements.append(Placement(op, status, (), (), 0, n_before, 0, why))

    by_line: Counter[str] = Counter()
    for kernel in analysis.kernels:
        lines = {
            str(o.location)
            for o in kernel_ops[kernel.name]
            if o.location and not is_framework_file(o.location.file)
        }
        for line in lines:
            by_line[line] += 1
    return Provenance(tuple(placements), kernel_ops, dict(by_line.most_common()))


def _why_alone(kernels: Iterable[Kernel], decisions: FusionDecisions | None) -> str:
    """Facts that explain a lone kernel; never a guess at XLA's reasons.

    XLA's own reasons come first when its priority-fusion log names the kernel or one of
    the instructions in it.
    """
    facts: list[str] = []
    for k in kernels:
        if decisions is not None:
            reasons = decisions.reasons([k.name, *(i.name for i in k.ops)])
            if reasons:
                facts.append(f"XLA's fusion log: {'; '.join(reasons)}")
        if k.library:
            facts.append(f"{k.name} is a library call ({k.kind})")
        elif k.cls == K.COLLECTIVE:
            facts.append(f"{k.name} is a collective")
        elif k.cls == K.UNFUSED:
            facts.append(f"{k.name} is an unfused {k.opcode}")
        if k.users > 1:
            facts.append(f"{k.users} consumers")
        if k.is_root:
            facts.append(f"it is the result of computation {k.computation}")
    return "; ".join(dict.fromkeys(facts))


def _before_evidence(
    before: HloModule,
) -> tuple[dict[str, list[Instruction]], dict[str, tuple[str, str]]]:
    """Source ops of the before module and, for each, FOLDED/DEAD evidence if any."""
    by_op: dict[str, list[tuple[str, Instruction]]] = {}
    constant: set[tuple[str, str]] = set()
    live: set[tuple[str, str]] = set()
    for comp_name, insts in _executed_by_computation(before).items():
        comp = before.computation_map[comp_name]
        index = comp.by_name
        # Constant-ness flows forward through operands, in text order (XLA prints
        # operands before users).
        for inst, scope in insts:
            if inst.opcode in ("constant", "iota") or (
                inst.operands
                and inst.opcode not in ("parameter", "rng", "rng-bit-generator", "infeed")
                and all((comp_name, o) in constant for o in inst.operands if o in index)
                and all(o in index for o in inst.operands)
            ):
                constant.add((comp_name, inst.name))
            op = source_op(before, inst, scope)
            if op is not None and inst.opcode != "parameter":
                by_op.setdefault(op.name, []).append((comp_name, inst))
        # Liveness flows backward from the root.
        stack = [comp.root.name]
        while stack:
            name = stack.pop()
            if (comp_name, name) in live or name not in index:
                continue
            live.add((comp_name, name))
            stack.extend(index[name].operands)
    evidence: dict[str, tuple[str, str]] = {}
    for name, places in by_op.items():
        keys = [(comp_name, i.name) for comp_name, i in places]
        if all(k in constant for k in keys):
            evidence[name] = (FOLDED, "computed from constants only (constant folding)")
        elif not any(k in live for k in keys):
            evidence[name] = (DEAD, "its result is never used (dead code)")
        else:
            opcodes = sorted({i.opcode for _, i in places})
            if set(opcodes) <= _DATA_MOVEMENT:
                evidence[name] = (
                    REMOVED,
                    f"it was only {', '.join(opcodes)}, which optimization merged into "
                    "neighbouring ops",
                )
    return {name: [i for _, i in insts] for name, insts in by_op.items()}, evidence


def _executed_by_computation(
    module: HloModule,
) -> dict[str, list[tuple[Instruction, str]]]:
    out: dict[str, list[tuple[Instruction, str]]] = {}
    seen: set[tuple[str, str]] = set()
    for ex in walk(module):
        key = (ex.computation.name, ex.instruction.name)
        if key in seen:
            continue
        seen.add(key)
        out.setdefault(ex.computation.name, []).append((ex.instruction, ex.scope))
    return out


# --- op -> kernel, for each instruction before optimization ------------------------------


def kernels_of_before_ops(
    before: HloModule,
    after: HloModule,
    provenance: Provenance,
    analysis: ModuleAnalysis | None = None,
) -> dict[str, tuple[str, ...]]:
    """Before-optimization instruction name -> every kernel it went to, in kernel order.

    The join is on source op names (`Provenance.kernel_ops`): an op goes to the kernels
    holding an instruction with its op name, preferring those where that instruction has
    the same opcode; an op that is still a kernel under its own name goes there first.
    Ops whose source op reached no kernel (folded, dead, only bitcasts now) are left out.

    Args:
        before: The module before optimization.
        after: The module after optimization.
        provenance: `trace(after, analysis, before)`.
        analysis: `analyze_module(after)`; computed when not given.

    Returns:
        The kernels of every op that reached one, the op's own kernel first.
    """
    if analysis is None:
        from hloscope.analysis.fusion import analyze_module

        analysis = analyze_module(after)
    by_op: dict[str, list[str]] = {}
    for kernel_name, ops in provenance.kernel_ops.items():
        for sop in ops:
            by_op.setdefault(sop.name, []).append(kernel_name)
    by_op_code: dict[tuple[str, str], list[str]] = {}
    own: dict[str, str] = {}
    for k in analysis.kernels:
        own[k.name] = k.opcode
        for inst in k.ops:
            fused_op = source_op(after, inst)
            if fused_op is not None:
                names = by_op_code.setdefault((fused_op.name, inst.opcode), [])
                if k.name not in names:
                    names.append(k.name)
    out: dict[str, tuple[str, ...]] = {}
    for ex in walk(before):
        inst = ex.instruction
        if ex.cls in (K.FREE, K.CONTROL) or inst.name in out:
            continue
        found: list[str] = []
        if own.get(inst.name) == inst.opcode:
            found.append(inst.name)
        op = source_op(before, inst, ex.scope)
        if op is not None:
            found.extend(by_op_code.get((op.name, inst.opcode)) or by_op.get(op.name, []))
        if found:
            out[inst.name] = tuple(dict.fromkeys(found))
    return out


def kernel_of_before_ops(
    before: HloModule,
    after: HloModule,
    provenance: Provenance,
    analysis: ModuleAnalysis | None = None,
) -> dict[str, str]:
    """Before-optimization instruction name -> the (first) kernel it went to.

    See `kernels_of_before_ops` for the join and for every kernel of an op that went to
    several.

    Args:
        before: The module before optimization.
        after: The module after optimization.
        provenance: `trace(after, analysis, before)`.
        analysis: `analyze_module(after)`; computed when not given.
    """
    return {k: v[0] for k, v in kernels_of_before_ops(before, after, provenance, analysis).items()}
