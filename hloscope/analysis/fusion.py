"""Kernels and launches of one module: the walk of what the program executes.

`analyze_module` walks the entry computation and what it calls for execution (`call`
inlined; `while` body and condition multiplied by the `known_trip_count` XLA put in
backend_config; `conditional` branches counted per branch; async pairs once) and
classifies each instruction with `hloscope.analysis.kernels`. Applied to an
after-optimization module it counts kernels and launches; applied to a
before-optimization module it counts the ops eager execution would launch one by one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from hloscope.analysis import kernels as K
from hloscope.hlo.model import Computation, HloModule, Instruction, Shape


@dataclass(frozen=True)
class Executed:
    """One instruction as the walk meets it.

    Attributes:
        instruction: The instruction.
        computation: The computation it is in.
        cls: Its class in `hloscope.analysis.kernels` (FUSION, UNFUSED, ...).
        times: How many times it runs per execution of the module; None when a
            surrounding while loop has no known trip count.
        scope: The op_name prefix the call inliner would give it (`jit(f)/jit(relu)`
            for what a `call` calls), or "" at the top level.
        branch: `conditional_name:index` for instructions inside a conditional branch.
    """

    instruction: Instruction
    computation: Computation
    cls: str
    times: int | None
    scope: str = ""
    branch: str | None = None


@dataclass(frozen=True)
class Kernel:
    """One kernel of an after-optimization module.

    Attributes:
        name: The instruction name (what profilers show for it).
        computation: The computation it runs in.
        cls: FUSION, CUSTOM_CALL, COLLECTIVE or UNFUSED.
        kind: The kind it is counted under (`kLoop`, `__triton_gemm`,
            `custom-call:__cublas$gemm`, `all-reduce`, `unfused:dot`, ...).
        opcode: The instruction's opcode.
        shape: Its result shape.
        launches: Launches per execution (None when a loop trip count is unknown).
        fused_computation: For fusions, the computation it calls.
        ops: The compute instructions it contains: the fused computation's
            instructions (nested fusions included), or the instruction itself.
        bytes_out: Bytes it writes (its result).
        bytes_in: Bytes it reads (its operands' results).
        library: Whether it is a library call rather than generated code.
        users: How many instructions of its computation use its result.
        is_root: Whether it is its computation's root.
        branch: The conditional branch it runs in, if any.
    """

    name: str
    computation: str
    cls: str
    kind: str
    opcode: str
    shape: Shape
    launches: int | None
    fused_computation: str | None
    ops: tuple[Instruction, ...]
    bytes_out: int
    bytes_in: int
    library: bool
    users: int
    is_root: bool
    branch: str | None = None

    @property
    def instruction_count(self) -> int:
        """How many compute instructions it contains."""
        return len(self.ops)

    def _repr_html_(self) -> str:
        from hloscope.render.display import repr_html  # the one allowed upward reach

        return repr_html(self)


@dataclass(frozen=True)
class Loop:
    """A while loop met by the walk.

    Attributes:
        name: The `while` instruction.
        computation: Where it is.
        trip_count: XLA's known_trip_count, or None when XLA did not determine it.
    """

    name: str
    computation: str
    trip_count: int | None


@dataclass(frozen=True)
class Branch:
    """One branch of a conditional, with the launches it makes when taken.

    Attributes:
        conditional: The `conditional` instruction.
        index: Branch index (0 = true branch for a predicated conditional).
        computation: The branch computation.
        launches: Kernel launches inside the branch per time it is taken.
    """

    conditional: str
    index: int
    computation: str
    launches: int


@dataclass(frozen=True)
class ModuleAnalysis:
    """What one module executes.

    Attributes:
        name: The HloModule name.
        instructions: Every instruction of the module, fused computations included.
        ops: Executed compute instructions, each counted once (for a module before
            optimization: what eager execution would launch one by one).
        kernels: The kernels (each executed instruction that launches one), in order.
        fusions: Fusion instructions outside fused computations.
        launches: Kernel launches per execution. A conditional contributes its
            costliest branch; a loop without known trip count contributes one trip.
        launches_exact: False when a loop trip count was unknown or a conditional
            made the count depend on the data.
        kernels_by_kind: Kernels per kind (see `Kernel.kind`).
        loops: The while loops met, with their trip counts.
        branches: Every conditional branch, with its own launches.
    """

    name: str
    instructions: int
    ops: int
    kernels: tuple[Kernel, ...]
    fusions: int
    launches: int
    launches_exact: bool
    kernels_by_kind: dict[str, int] = field(default_factory=dict)
    loops: tuple[Loop, ...] = ()
    branches: tuple[Branch, ...] = ()

    @property
    def kernel_count(self) -> int:
        """Number of kernels (each counted once, however often it runs)."""
        return len(self.kernels)


def trip_count(inst: Instruction) -> int | None:
    """XLA's `known_trip_count` of a while loop from its backend_config, if any."""
    config = inst.backend_config
    if isinstance(config, dict):
        known = config.get("known_trip_count")
        if isinstance(known, dict) and str(known.get("n", "")).isdigit():
            return int(known["n"])
    return None


def walk(module: HloModule) -> Iterator[Executed]:
    """Yield what one execution of the module runs, in program order.

    Control-flow instructions are yielded too (class CONTROL), before their callees.
    A computation called from several places is walked once per call site.
    """
    comps = module.computation_map

    def visit(
        comp: Computation, times: int | None, scope: str, branch: str | None, depth: int
    ) -> Iterator[Executed]:
        if depth > 64:  # HLO has no recursion; this only guards against a broken module
            return
        for inst in comp.instructions:
            cls = K.classify(inst)
            yield Executed(inst, comp, cls, times, scope, branch)
            if cls != K.CONTROL:
                continue
            op = inst.opcode
            if op in ("call", "async-start"):
                inner_scope = _join_scope(scope, inst) if op == "call" else scope
                for name in inst.calls():
                    if name in comps:
                        yield from visit(comps[name], times, inner_scope, branch, depth + 1)
            elif op == "while":
                n = trip_count(inst)
                body_times = None if times is None or n is None else times * n
                cond_times = None if body_times is None else body_times + (times or 0)
                for name in inst.calls("condition"):
                    if name in comps:
                        yield from visit(comps[name], cond_times, scope, branch, depth + 1)
                for name in inst.calls("body"):
                    if name in comps:
                        yield from visit(comps[name], body_times, scope, branch, depth + 1)
            elif op == "conditional":
                names = inst.calls("branch_computations") or (
                    inst.calls("true_computation") + inst.calls("false_computation")
                )
                for index, name in enumerate(names):
                    if name in comps:
                        tag = f"{inst.name}:{index}"
                        yield from visit(comps[name], times, scope, tag, depth + 1)

    yield from visit(module.entry, 1, "", None, 0)


def _join_scope(scope: str, call: Instruction) -> str:
    """The op_name prefix XLA's call inliner gives to the callee's instructions."""
    name = call.metadata.op_name if call.metadata and call.metadata.op_name else ""
    if not name:
        return scope
    return name if not scope or name.startswith(scope) else f"{scope}/{name}"


def fused_ops(module: HloModule, inst: Instruction) -> tuple[Instruction, ...]:
    """The compute instructions inside a fusion, nested fusions expanded.

    Parameters, tuples, get-tuple-elements and bitcasts are left out; constants,
    broadcasts and every other instruction that computes something are kept.
    """
    comps = module.computation_map
    out: list[Instruction] = []

    def visit(comp_name: str, depth: int) -> None:
        comp = comps.get(comp_name)
        if comp is None or depth > 16:
            return
        for i in comp.instructions:
            if i.opcode == "fusion":
                for name in i.calls():
                    visit(name, depth + 1)
            elif i.opcode not in _NOT_OPS:
                out.append(i)

    for name in inst.calls():
        visit(name, 0)
    return tuple(out)


_NOT_OPS = frozenset({"parameter", "tuple", "get-tuple-element", "bitcast"})


def analyze_module(module: HloModule) -> ModuleAnalysis:
    """Count the ops, kernels and launches of one module.

    Args:
        module: A parsed module, before or after optimization.

    Returns:
        The counts and the kernel list.
    """
    users = _user_counts(module)
    kernels: list[Kernel] = []
    seen: dict[tuple[str, str], int] = {}  # (computation, instruction) -> index in kernels
    launch_total = 0
    exact = True
    ops = 0
    op_seen: set[tuple[str, str]] = set()
    loops: list[Loop] = []
    branch_launches: dict[str, int] = {}
    by_branch: dict[tuple[str, int], tuple[str, int]] = {}

    for ex in walk(module):
        inst, comp = ex.instruction, ex.computation
        if ex.cls == K.CONTROL:
            if inst.opcode == "while":
                n = trip_count(inst)
                loops.append(Loop(inst.name, comp.name, n))
                exact = exact and n is not None
            elif inst.opcode == "conditional":
                exact = False
                names = inst.calls("branch_computations") or (
                    inst.calls("true_computation") + inst.calls("false_computation")
                )
                for index, name in enumerate(names):
                    by_branch[(inst.name, index)] = (name, 0)
            continue
        if ex.cls == K.FREE:
            continue
        key = (comp.name, inst.name)
        if key not in op_seen:
            op_seen.add(key)
            ops += 1
        times = ex.times if ex.times is not None else 1
        if ex.branch is not None:
            branch_launches[ex.branch] = branch_launches.get(ex.branch, 0) + times
        else:
            launch_total += times
        position = seen.get(key)
        if position is None:
            seen[key] = len(kernels)
            kernels.append(_kernel(module, inst, comp, ex, users))
        else:
            old = kernels[position]
            more = None if old.launches is None or ex.times is None else old.launches + ex.times
            kernels[position] = replace(old, launches=more)

    branches = []
    for (cond, index), (name, _) in sorted(by_branch.items()):
        branches.append(Branch(cond, index, name, branch_launches.get(f"{cond}:{index}", 0)))
    # A conditional runs one branch: count its costliest one.
    per_cond: dict[str, int] = {}
    for b in branches:
        per_cond[b.conditional] = max(per_cond.get(b.conditional, 0), b.launches)
    launch_total += sum(per_cond.values())

    kinds = Counter(k.kind for k in kernels)
    fusions = sum(
        1
        for c in module.computations
        if c.name not in module.fused_computations
        for i in c.instructions
        if i.opcode == "fusion"
    )
    return ModuleAnalysis(
        name=module.name,
        instructions=module.instruction_count,
        ops=ops,
        kernels=tuple(kernels),
        fusions=fusions,
        launches=launch_total,
        launches_exact=exact,
        kernels_by_kind=dict(kinds.most_common()),
        loops=tuple(loops),
        branches=tuple(branches),
    )


def _kernel(
    module: HloModule,
    inst: Instruction,
    comp: Computation,
    ex: Executed,
    users: dict[tuple[str, str], int],
) -> Kernel:
    scope = comp.by_name
    bytes_in = sum(scope[o].shape.byte_size for o in inst.operands if o in scope)
    if ex.cls == K.FUSION:
        ops = fused_ops(module, inst)
        fused = inst.calls()[0] if inst.called else None
    else:
        ops, fused = (inst,), None
    return Kernel(
        name=inst.name,
        computation=comp.name,
        cls=ex.cls,
        kind=K.kernel_kind(inst),
        opcode=inst.opcode,
        shape=inst.shape,
        launches=ex.times,
        fused_computation=fused,
        ops=ops,
        bytes_out=inst.shape.byte_size,
        bytes_in=bytes_in,
        library=K.is_library_kernel(inst),
        users=users.get((comp.name, inst.name), 0),
        is_root=inst.is_root,
        branch=ex.branch,
    )


def _user_counts(module: HloModule) -> dict[tuple[str, str], int]:
    counts: dict[tuple[str, str], int] = {}
    for comp in module.computations:
        for inst in comp.instructions:
            for operand in set(inst.operands):
                key = (comp.name, operand)
                counts[key] = counts.get(key, 0) + 1
    return counts
