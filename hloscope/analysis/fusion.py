"""Kernels and launches of one module: the walk of what the program executes.

`analyze_module` walks the entry computation and what it calls for execution and
classifies each instruction with `hloscope.analysis.kernels`, counting launches the way
XLA's runtime makes them (each rule cites where XLA does it):

- `call` is inlined, except a CPU "small call" (one compiled kernel) and a GPU command
  buffer (one graph launch);
- a `while` with a `known_trip_count` runs its body N times and never its condition;
  without one, one trip is assumed and the count is flagged inexact;
- `conditional` branches are counted per branch, the costliest one in the total;
- an async pair (`all-gather-start`/`-done`, or `async-start` wrapping any op) is one
  kernel, reported under the wrapped op's name (`Kernel.hlo_ops`);
- a `__custom_fusion` wrapping one library call is that call;
- `partition-id`/`replica-id` launch on the GPU and the CPU; on the GPU a copy fusion
  runs one memcpy per output and a reduction using atomics first runs an initializer;
  on a TPU each half of an async pair is an op and a scalar copy is none (the rules that
  differ by platform are `kernels.RUNTIMES`).

Applied to an after-optimization module it counts kernels and launches; applied to a
before-optimization module it counts the ops eager execution would launch one by one.
Every walk is linear in the module's size (one visit per computation, no recursion).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, NamedTuple

from hloscope.analysis import kernels as K
from hloscope.analysis.memo import LazyTuple
from hloscope.hlo.model import Computation, HloModule, Instruction, Shape

CPU_CALL = "cpu-call"
"""The kind of a CPU small call: a `call` XLA compiled into one kernel."""
COMMAND_BUFFER = "command-buffer"
"""The kind of a GPU command buffer: a `call` launched as one CUDA graph."""


class Executed(NamedTuple):
    """One instruction as the walk meets it (a named tuple: a walk of a big module
    makes one per instruction, and a frozen dataclass costs several times as much to
    make).

    Attributes:
        instruction: The instruction.
        computation: The computation it is in.
        cls: Its class in `hloscope.analysis.kernels` (FUSION, UNFUSED, ...).
        times: How many times it runs per execution of the module, summed over every
            call site of its computation; None when a surrounding while loop has no
            known trip count.
        scope: The op_name prefix the call inliner would give it (`jit(f)/jit(relu)`
            for what a `call` calls), or "" at the top level; from the first call site.
        branch: `conditional_name:index` for instructions inside a conditional branch
            (the first call site's).
    """

    instruction: Instruction
    computation: Computation
    cls: str
    times: int | None
    scope: str = ""
    branch: str | None = None


@dataclass(frozen=True, slots=True)
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
        thunk_ops: One name per launch of one run of the instruction, as XLA's runtime
            reports it in a profile (`hlo_op=`): its own name; for an `async-start` the
            wrapped op's (`all-to-all.3`); for a custom fusion the library call's
            (`custom-call.220`); a GPU copy fusion's name once per output (one memcpy
            each); a GPU reduction needing atomics adds its reduce's initializer. Empty
            means `(name,)`. `launches` counts them all.

    Example:
        >>> k = hloscope.open_run("tests/data/tf_dense_relu").kernels()[0]
        >>> k.name, k.kind, [i.opcode for i in k.ops]
        ('MatMul.2', 'unfused:dot', ['dot'])
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
    thunk_ops: tuple[str, ...] = ()

    @property
    def hlo_ops(self) -> tuple[str, ...]:
        """Every instruction name the runtime reports for this kernel, each once."""
        return tuple(dict.fromkeys(self.thunk_ops)) if self.thunk_ops else (self.name,)

    @property
    def thunks(self) -> int:
        """Launches per run of the instruction (`launches` = runs x thunks)."""
        return len(self.thunk_ops) or 1

    def launches_of(self, hlo_op: str) -> int | None:
        """Launches per execution reported under `hlo_op` (None: a trip count unknown)."""
        if self.launches is None:
            return None
        per_run = self.thunk_ops.count(hlo_op) if self.thunk_ops else int(hlo_op == self.name)
        return self.launches // self.thunks * per_run

    @property
    def instruction_count(self) -> int:
        """How many compute instructions it contains."""
        return len(self.ops)

    @property
    def opcodes(self) -> tuple[str, ...]:
        """The opcodes of `ops`, in order. A kernel a worker process analysed knows them
        without its instructions (`analysis.pool`: its `ops` are read again from the
        file only when asked for)."""
        sent: tuple[str, ...] | None = getattr(self.ops, "opcodes", None)
        return sent if sent is not None else tuple([i.opcode for i in self.ops])

    @property
    def is_fusion(self) -> bool:
        """Whether it is a fusion: several HLO ops XLA made into one kernel (a `fusion`
        instruction, or one an async pair wraps), not a call run as one kernel."""
        return self.cls == K.FUSION and self.kind not in (CPU_CALL, COMMAND_BUFFER)

    def __repr__(self) -> str:
        launches = "?" if self.launches is None else str(self.launches)
        return (
            f"Kernel({self.name!r}, kind={self.kind!r}, launches={launches}, "
            f"hlo_ops={self.instruction_count}, shape={self.shape.text!r})"
        )

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

    Example:
        >>> ins = hloscope.inspect_run('tests/data/jax_scan_profile')
        >>> after = ins.module('0010.jit_layers').after
        >>> [(loop.name, loop.trip_count) for loop in after.loops]
        [('while.6', 6)]
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

    Example:
        >>> after = hloscope.inspect_run("tests/data/jax_mlp").module('0030.jit_mlp').after
        >>> after.branches  # a module without a conditional has none
        ()
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
        ops: Compute instructions executed per execution of the module, counted by
            the walk that counts launches: every call site of a computation, loop
            bodies times their known trip count, the costliest conditional branch.
            For a module before optimization: what eager execution would launch one
            by one (README, "How kernels are counted").
        kernels: The kernels (each executed instruction that launches one), in order.
        fusions: Kernels that are fusions (`Kernel.is_fusion`): `fusion` instructions
            that launch, so never more than `kernels`.
        launches: Kernel launches per execution. A conditional contributes its
            costliest branch; a loop without known trip count contributes one trip.
        launches_exact: False when a loop trip count was unknown or a conditional
            made the count depend on the data.
        kernels_by_kind: Kernels per kind (see `Kernel.kind`).
        loops: The while loops met, with their trip counts.
        branches: Every conditional branch, with its own launches.
        platform: The runtime the launches were counted for (`gpu`, `cpu`, `tpu`), or None.

    Example:
        >>> after = hloscope.inspect_run("tests/data/jax_mlp").module('0030.jit_mlp').after
        >>> after.kernel_count, after.launches, after.instructions
        (11, 11, 125)
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
    platform: str | None = None

    @property
    def kernel_count(self) -> int:
        """Number of kernels (each counted once, however often it runs)."""
        return len(self.kernels)

    @cached_property
    def kernel_of(self) -> Mapping[str, str]:
        """Kernel name by each name the runtime reports it under (`Kernel.hlo_ops`):
        what a trace's `hlo_op` is booked to."""
        return {op: k.name for k in self.kernels for op in k.hlo_ops}


def trip_count(inst: Instruction) -> int | None:
    """XLA's `known_trip_count` of a while loop from its backend_config, if any."""
    config = inst.backend_config
    if isinstance(config, dict):
        known = config.get("known_trip_count")
        n = str(known.get("n", "")) if isinstance(known, dict) else ""
        # ASCII digits of a 64-bit count only: `str.isdigit` also passes `²`, and a
        # 5,000-digit `n` is past int()'s limit
        if n.isascii() and n.isdigit() and len(n) <= 19:
            return int(n)
    return None


def is_small_call(inst: Instruction) -> bool:
    """Whether XLA's CPU backend compiled this `call` into one kernel.

    XLA marks such calls `frontend_attributes={xla_cpu_small_call="true"}` and emits the
    whole callee as one function (`call_computation_kernel_module` in the dump); the CPU
    runtime runs it as one thunk reported under the call's name (a JAX profile of
    `jit__threefry_split` shows `hlo_op=call`, not the callee's instructions).
    """
    return inst.opcode == "call" and 'xla_cpu_small_call="true"' in inst.attributes.get(
        "frontend_attributes", ""
    )


def is_command_buffer(inst: Instruction) -> bool:
    """Whether this `call` runs a GPU command buffer (a CUDA graph) as one launch.

    XLA's `CommandBufferScheduling` pass outlines runs of commands into a computation named
    `command_buffer*` and calls it; the runtime records them once and launches the graph
    as one `CommandBufferThunk` under the call's name.
    """
    return inst.opcode == "call" and any(n.startswith("command_buffer") for n in inst.calls())


def _callees(
    inst: Instruction, scope: str, branch: str | None
) -> list[tuple[str, str, str | None, int | None]]:
    """`(computation, scope, branch, factor)` for what a control instruction runs, where
    factor is how many times per execution of the instruction (None: unknown)."""
    op = inst.opcode
    if op == "call":
        inner = _join_scope(scope, inst)
        return [(name, inner, branch, 1) for name in inst.calls()]
    if op == "while":
        n = trip_count(inst)
        body = [(name, scope, branch, n) for name in inst.calls("body")]
        if n is not None:
            # XLA's WhileThunk runs the body N times and never the condition when the
            # trip count is known (xla/backends/gpu/runtime/while_thunk.cc; the CPU
            # runtime's WhileThunk does the same). Otherwise it evaluates the condition
            # once more than the body: with the trip unknown, one trip is assumed.
            return body
        cond = [(name, scope, branch, None) for name in inst.calls("condition")]
        return cond + body
    if op == "conditional":
        names = inst.calls("branch_computations") or (
            inst.calls("true_computation") + inst.calls("false_computation")
        )
        return [(name, scope, f"{inst.name}:{i}", 1) for i, name in enumerate(names)]
    return []


def _is_control(inst: Instruction, cls: str) -> bool:
    """Whether the walk goes into what `inst` calls (rather than counting it as one
    kernel: async wrappers, CPU small calls and command buffers run as one launch)."""
    return (
        cls == K.CONTROL
        and inst.opcode != "async-start"
        and not (is_small_call(inst) or is_command_buffer(inst))
    )


def walk(module: HloModule, platform: str | None = None) -> Iterator[Executed]:
    """Yield what one execution of the module runs, each instruction once, in program order.

    Control-flow instructions are yielded too (class CONTROL), before their callees. A
    computation called from several places is yielded once, at its first call site, with
    `times` summed over all of them; the walk is linear in the size of the module and
    uses no recursion, however deep the calls nest.

    Args:
        module: The module.
        platform: `kernels.GPU`/`CPU`/`TPU`, or None to infer it (`kernels.platform`).
    """
    return _walk(module, platform if platform is not None else K.platform(module))


def _walk(module: HloModule, platform: str | None) -> Iterator[Executed]:
    """`walk` on a known platform (None: none was found, not to infer it again)."""
    comps = module.computation_map
    times = _computation_times(module, platform)
    seen: set[str] = {module.entry.name}
    stack: list[tuple[Computation, Iterator[Instruction], str, str | None]] = [
        (module.entry, iter(module.entry.instructions), "", None)
    ]
    while stack:
        comp, rest, scope, branch = stack[-1]
        inst = next(rest, None)
        if inst is None:
            stack.pop()
            continue
        cls = _class(inst, platform)
        yield Executed(inst, comp, cls, times.get(comp.name), scope, branch)
        if cls != K.CONTROL or not _is_control(inst, cls):
            continue
        met = _first_met(inst, scope, branch, comps, seen)
        stack.extend((c, iter(c.instructions), inner, tag) for c, inner, tag in reversed(met))


def entered(module: HloModule) -> Iterator[tuple[Computation, str]]:
    """The computations `walk` goes into, in the order it first meets an instruction of
    each, with the scope of that first call site: what a pass that needs no classes
    or counts reads of the walk. It looks only at the instructions that call
    computations (of the rest, the walk yields every one, in text order).
    """
    platform = K.platform(module)
    comps = module.computation_map
    seen: set[str] = {module.entry.name}
    # (computation, its calling instructions not yet met or None before it is entered,
    # scope, branch), as `_walk`'s stack
    stack: list[tuple[Computation, Iterator[Instruction] | None, str, str | None]] = [
        (module.entry, None, "", None)
    ]
    while stack:
        comp, rest, scope, branch = stack[-1]
        if rest is None:
            if comp.instructions:  # the walk yields nothing of an empty computation
                yield comp, scope
            rest = filter(_calls, comp.instructions)
            stack[-1] = (comp, rest, scope, branch)
        inst = next(rest, None)
        if inst is None:
            stack.pop()
            continue
        if not _is_control(inst, _class(inst, platform)):
            continue
        met = _first_met(inst, scope, branch, comps, seen)
        stack.extend((c, None, inner, tag) for c, inner, tag in reversed(met))


def _calls(inst: Instruction) -> bool:
    return bool(inst.called)


def _first_met(
    inst: Instruction,
    scope: str,
    branch: str | None,
    comps: Mapping[str, Computation],
    seen: set[str],
) -> list[tuple[Computation, str, str | None]]:
    """The computations a control instruction runs that the walk has not met yet (now
    in `seen`), in the order it runs them, each with its scope and branch."""
    met = []
    for name, inner, tag, _ in _callees(inst, scope, branch):
        callee = comps.get(name)
        if callee is not None and name not in seen:
            seen.add(name)
            met.append((callee, inner, tag))
    return met


def _class(inst: Instruction, platform: str | None) -> str:
    """The class an instruction launches as: an async wrapper as the op it wraps."""
    cls = K.classify(inst, platform)
    if inst.opcode == "call" and (is_small_call(inst) or is_command_buffer(inst)):
        return K.FUSION
    return cls


def _computation_times(module: HloModule, platform: str | None) -> dict[str, int | None]:
    """How many times each executed computation runs per execution of the module.

    Callers come before callees in a topological order of the call graph (HLO has no
    recursion), so one pass sums every call site's count: linear in the module's size
    where a walk per call site would be exponential in the nesting depth.
    """
    comps = module.computation_map
    edges: dict[str, list[tuple[str, int | None]]] = {}
    order: list[str] = []  # post-order of an iterative depth-first search
    state: dict[str, int] = {module.entry.name: 0}
    stack = [(module.entry.name, iter(_edges(comps[module.entry.name], platform)))]
    edges[module.entry.name] = []
    while stack:
        name, rest = stack[-1]
        edge = next(rest, None)
        if edge is None:
            stack.pop()
            state[name] = 1
            order.append(name)
            continue
        edges[name].append(edge)
        callee = edge[0]
        if callee in comps and callee not in state:
            state[callee] = 0
            edges[callee] = []
            stack.append((callee, iter(_edges(comps[callee], platform))))
    times: dict[str, int | None] = {name: 0 for name in order}
    times[module.entry.name] = 1
    for name in reversed(order):
        n = times[name]
        for callee, factor in edges[name]:
            if callee not in times:
                continue
            old = times[callee]
            add = None if n is None or factor is None else n * factor
            times[callee] = None if old is None or add is None else old + add
    return times


def _edges(comp: Computation, platform: str | None) -> Iterator[tuple[str, int | None]]:
    for inst in comp.instructions:
        # only an instruction that calls a computation has edges (checked first: cheap)
        if inst.called and _is_control(inst, _class(inst, platform)):
            for name, _, _, factor in _callees(inst, "", None):
                yield name, factor


def _join_scope(scope: str, call: Instruction) -> str:
    """The op_name prefix XLA's call inliner gives to the callee's instructions."""
    name = call.metadata.op_name if call.metadata and call.metadata.op_name else ""
    if not name:
        return scope
    return name if not scope or name.startswith(scope) else f"{scope}/{name}"


def fused_ops(module: HloModule, inst: Instruction) -> tuple[Instruction, ...]:
    """The compute instructions inside a fusion (or a call run as one kernel), nested
    fusions and called computations expanded.

    Parameters, tuples, get-tuple-elements and bitcasts are left out; constants,
    broadcasts and every other instruction that computes something are kept. Each
    computation is expanded once, without recursion.
    """
    comps = module.computation_map
    out: list[Instruction] = []
    seen: set[str] = set()
    # A stack of instruction iterators expands each callee in place, in text order.
    stack: list[Iterator[Instruction]] = []

    def enter(names: list[str]) -> None:
        for name in reversed(names):
            comp = comps.get(name)
            if comp is not None and name not in seen:
                seen.add(name)
                stack.append(iter(comp.instructions))

    enter(inst.calls())
    while stack:
        i = next(stack[-1], None)
        if i is None:
            stack.pop()
        elif i.called and i.opcode in _EXPANDED:
            enter(i.calls())
        elif i.opcode not in _NOT_OPS:
            out.append(i)
    return tuple(out)


_NOT_OPS = frozenset({"parameter", "tuple", "get-tuple-element", "bitcast"})
# What a kernel's callees hold that runs inside it: nested fusions, and the control flow
# of a computation compiled as one kernel (CPU small calls, async wrappers).
_EXPANDED = frozenset({"fusion", "call", "while", "conditional", "async-start"})


def analyze_module(
    module: HloModule, platform: str | None = None, *, memo: KernelMemo | None = None
) -> ModuleAnalysis:
    """Count the ops, kernels and launches of one module, as XLA's runtime runs them.

    Args:
        module: A parsed module, before or after optimization.
        platform: `kernels.GPU`, `CPU` or `TPU`; None infers it from the module
            (`kernels.platform`: backend configs, library calls, the file name). It
            decides the launches that depend on the runtime (`kernels.RUNTIMES`:
            partition-id and replica-id on GPU and CPU; on the GPU only, one memcpy per
            output of a copy fusion and the initializer of a reduction using atomics;
            on a TPU, both halves of an async pair and no scalar copy).
        memo: Kept between calls on successive versions of one module (XLA's per-pass
            dumps, parsed with `hloscope.hlo.series`, share `Instruction` objects): a
            kernel that calls no computation is taken from it when the same instruction
            runs in the same place with the same operands and users.

    Returns:
        The counts and the kernel list.
    """
    platform = platform if platform is not None else K.platform(module)
    # How many use each instruction: counted as asked (`_UserCounts`), or the memo's
    counts: _UserCounts | None = None
    users: Mapping[tuple[str, str], int]
    if memo is None:
        users = counts = _UserCounts(module)
    else:
        users = memo.users(module)
    # Each kernel, or what makes a kernel of one op (`_OneOp`), made when first read:
    # before optimization every op is one, and only a diagram reads them (the 536k of
    # the 107 MB module took 2 s of its 3 s analysis).
    kernels: list[Kernel | _OneOp] = []
    kinds: Counter[str] = Counter()
    fusions = one_ops = 0
    launch_total = 0
    exact = True
    loops: list[Loop] = []
    branch_launches: dict[str, int] = {}
    by_branch: dict[tuple[str, int], str] = {}

    for ex in _walk(module, platform):
        inst, comp = ex.instruction, ex.computation
        if ex.cls == K.CONTROL and _is_control(inst, ex.cls):
            if inst.opcode == "while":
                n = trip_count(inst)
                loops.append(Loop(inst.name, comp.name, n))
                exact = exact and n is not None
            elif inst.opcode == "conditional":
                exact = False
                for index, name in enumerate(
                    inst.calls("branch_computations")
                    or (inst.calls("true_computation") + inst.calls("false_computation"))
                ):
                    by_branch[(inst.name, index)] = name
            continue
        if ex.cls == K.FREE or (ex.cls == K.CONTROL and not inst.called):
            continue
        if counts is not None and ex.cls == K.UNFUSED and not inst.called:
            # one op, no library's: launched as often as its computation runs (its
            # users counted when its kernel is made)
            kernels.append(_OneOp(inst, comp, ex.times, ex.branch, counts))
            kinds[K.unfused_kind(inst.opcode)] += 1
            one_ops += 1
            times = ex.times if ex.times is not None else 1
        else:
            if memo is not None and not inst.called:
                kernel = memo.kernel(module, inst, comp, ex, users, platform)
            else:
                kernel = _kernel(module, inst, comp, ex, users, platform)
            if kernel is None:
                continue
            kernels.append(kernel)
            kinds[kernel.kind] += 1
            # Fusions that launch: a fusion in a loop's condition the runtime never
            # evaluates, or inside a CPU small call (one kernel), runs as no kernel of
            # its own.
            fusions += kernel.is_fusion
            # With a loop's trip count unknown, one trip is assumed (and flagged inexact).
            times = kernel.launches if kernel.launches is not None else kernel.thunks
        if ex.branch is not None:
            branch_launches[ex.branch] = branch_launches.get(ex.branch, 0) + times
        else:
            launch_total += times

    branches = [
        Branch(cond, index, name, branch_launches.get(f"{cond}:{index}", 0))
        for (cond, index), name in sorted(by_branch.items())
    ]
    # A conditional runs one branch: count its costliest one.
    per_cond: dict[str, int] = {}
    for b in branches:
        per_cond[b.conditional] = max(per_cond.get(b.conditional, 0), b.launches)
    launch_total += sum(per_cond.values())

    return ModuleAnalysis(
        name=module.name,
        instructions=module.instruction_count,
        # The README defines ops as what the launch walk counts; before optimization
        # nothing fuses, so each op is one launch (a call site per call, not per
        # called computation).
        ops=launch_total,
        kernels=_Kernels(kernels) if one_ops else tuple(kernels),  # type: ignore[arg-type]
        fusions=fusions,
        launches=launch_total,
        launches_exact=exact,
        kernels_by_kind=dict(kinds.most_common()),
        loops=tuple(loops),
        branches=tuple(branches),
        platform=platform,
    )


class _OneOp(NamedTuple):
    """What makes the kernel of one op that calls nothing and is no library's (`_one_op`,
    when `_Kernels` are first read)."""

    inst: Instruction
    comp: Computation
    times: int | None
    branch: str | None
    # The module's user counts, read when the kernel is made: counting the users of a
    # big module's 536k ops took 0.5 s of its analysis, and no report reads them.
    users: _UserCounts


def _one_op(
    inst: Instruction, comp: Computation, times: int | None, branch: str | None, users: int
) -> Kernel:
    """The kernel of an op that calls nothing and is no library's, read by `users`
    instructions of `comp`."""
    return Kernel(
        inst.name, comp.name, K.UNFUSED, K.unfused_kind(inst.opcode), inst.opcode,
        inst.shape, times, None, (inst,), inst.shape.byte_size, _bytes_in(inst, comp),
        False, users, inst.is_root, branch,
    )  # fmt: skip


def _bytes_in(inst: Instruction, comp: Computation) -> int:
    """What an instruction reads: its operands' results."""
    scope = comp.by_name
    total = 0
    for o in inst.operands:
        source = scope.get(o)
        if source is not None:
            total += source.shape.byte_size
    return total


class _Kernels(LazyTuple[Kernel]):
    """An analysis's kernels, those of one op (`_OneOp`) made when first read."""

    def __init__(self, found: list[Kernel | _OneOp]) -> None:
        super().__init__(len(found))
        self._found: list[Kernel | _OneOp] | None = found

    def _make(self) -> tuple[Kernel, ...]:
        found, self._found = self._found, None
        assert found is not None
        made: list[Kernel] = []
        here, counted = None, {}  # the computation of the last one-op kernel, its users
        for k in found:
            if not isinstance(k, _OneOp):
                made.append(k)
                continue
            inst, comp, times, branch, users = k
            if comp is not here:
                here, counted = comp, users.of(comp.name)
            made.append(_one_op(inst, comp, times, branch, counted.get((comp.name, inst.name), 0)))
        return tuple(made)


def reanalyze(
    old: HloModule,
    previous: ModuleAnalysis,
    module: HloModule,
    platform: str | None,
    memo: KernelMemo,
) -> ModuleAnalysis | None:
    """`analyze_module(module, platform, memo=memo)`, from the analysis of an earlier
    version of the module, when neither version's entry runs another computation (no
    call, while, conditional or async wrapper into one that launches), so that every
    kernel is an instruction of the entry: what XLA's simplification passes change in a
    module without control flow. Only the entry is walked, and only the instructions
    that changed (or whose operands, users or called computations did) are looked at.

    Args:
        old: The earlier version.
        previous: `analyze_module(old, platform)`.
        module: The new version.
        platform: As for `analyze_module`; the same for both.
        memo: The memo the analyses share.

    Returns:
        The analysis, equal to `analyze_module`'s; None when the change is not of that
        kind (analyse the module whole).
    """
    entry, old_entry = module.entry, old.entry
    if (
        previous.platform != platform
        or previous.loops
        or previous.branches
        or entry.name != old_entry.name
    ):
        return None
    # An instruction's kernel is the earlier one when it is the same instruction object
    # calling the same computations, with the same users and operands: it is not a
    # changed one, not an operand of a changed one (its users changed), and no operand
    # of it changed (their shapes).
    old_by_name = old_entry.by_name
    changed = {i.name for i in entry.instructions if old_by_name.get(i.name) is not i}
    new_names = entry.by_name
    changed.update(i.name for i in old_entry.instructions if new_names.get(i.name) is not i)
    same = _SameCallees(old, module, memo)
    for inst in entry.instructions:
        if inst.called and inst.name not in changed and not same.all(inst.calls()):
            changed.add(inst.name)
    touched = set(changed)
    for inst in entry.instructions:
        if inst.name in changed:
            touched.update(inst.operands)
        elif not changed.isdisjoint(inst.operands):
            touched.add(inst.name)
    for inst in old_entry.instructions:
        if inst.name in changed:
            touched.update(inst.operands)
    earlier = {k.name: k for k in previous.kernels}
    if any(k.computation != entry.name for k in previous.kernels):
        return None  # the earlier version ran kernels outside its entry
    users: Mapping[tuple[str, str], int] | None = None
    kernels: list[Kernel] = []
    launch_total = 0
    for inst in entry.instructions:
        if inst.name not in touched:  # the same instruction in the same place
            kernel = earlier.get(inst.name)
            if kernel is not None:
                kernels.append(kernel)
                launch_total += kernel.launches if kernel.launches is not None else kernel.thunks
            continue
        cls = _class(inst, platform)
        if cls == K.CONTROL:
            return None  # the entry runs another computation: walk the module
        if cls == K.FREE:
            continue
        if users is None:
            users = _users_of(entry, touched)
        ex = Executed(inst, entry, cls, 1)
        kernel = (
            _kernel(module, inst, entry, ex, users, platform)
            if inst.called
            else memo.kernel(module, inst, entry, ex, users, platform)
        )
        if kernel is None:
            continue
        kernels.append(kernel)
        launch_total += kernel.launches if kernel.launches is not None else kernel.thunks
    fused = module.fused_computations
    return ModuleAnalysis(
        name=module.name,
        instructions=module.instruction_count,
        ops=launch_total,
        kernels=tuple(kernels),
        fusions=sum(
            1
            for c in module.computations
            if c.name not in fused
            for i in c.instructions
            if i.opcode == "fusion"
        ),
        launches=launch_total,
        launches_exact=previous.launches_exact,
        kernels_by_kind=dict(Counter(k.kind for k in kernels).most_common()),
        loops=(),
        branches=(),
        platform=platform,
    )


class _SameCallees:
    """Whether computations are the same objects in two versions of a module, and so
    are all the computations they call."""

    def __init__(self, old: HloModule, new: HloModule, memo: KernelMemo) -> None:
        self.old, self.new = old.computation_map, new.computation_map
        self.memo = memo
        self.known: dict[str, bool] = {}

    def all(self, names: Iterable[str]) -> bool:
        return all(self.one(n) for n in names)

    def one(self, name: str) -> bool:
        found = self.known.get(name)
        if found is not None:
            return found
        self.known[name] = True  # HLO has no recursion; a cycle would end here
        comp = self.new.get(name)
        found = comp is self.old.get(name) and (comp is None or self.all(self.memo.callees(comp)))
        self.known[name] = found
        return found


class KernelMemo:
    """Kernels of instructions that call no computation, kept across `analyze_module`
    calls on successive versions of one module.

    Such a kernel is a function of its instruction (the same object), the computation it
    runs in (by name), how often and in which branch it runs, its users and the shapes
    of its operands; those make the key. Keys hold `id()`s of instructions and shapes
    that the stored kernels keep alive.
    """

    def __init__(self) -> None:
        self._kernels: dict[tuple[object, ...], Kernel | None] = {}
        # what the ids in the keys stand for, kept alive so that no id is reused
        self._alive: list[tuple[Instruction, tuple[Shape, ...]]] = []
        self._users: dict[int, tuple[Computation, dict[tuple[str, str], int]]] = {}
        self._callees: dict[int, tuple[Computation, list[str]]] = {}
        self.hits = 0

    def callees(self, comp: Computation) -> list[str]:
        """The computations a computation's instructions call, once per object."""
        found = self._callees.get(id(comp))
        if found is None or found[0] is not comp:
            names = [n for i in comp.instructions if i.called for n in i.calls()]
            found = self._callees[id(comp)] = (comp, names)
        return found[1]

    def users(self, module: HloModule) -> dict[tuple[str, str], int]:
        """`_UserCounts(module)` made whole, each computation's counted once per
        object."""
        out: dict[tuple[str, str], int] = {}
        seen: dict[int, tuple[Computation, dict[tuple[str, str], int]]] = {}
        for comp in module.computations:
            part = self._users.get(id(comp))
            if part is None or part[0] is not comp:
                part = (comp, _computation_users(comp))
            seen[id(comp)] = part
            out.update(part[1])
        self._users = seen  # only the latest version's: what the next one shares
        return out

    def kernel(
        self,
        module: HloModule,
        inst: Instruction,
        comp: Computation,
        ex: Executed,
        users: Mapping[tuple[str, str], int],
        platform: str | None,
    ) -> Kernel | None:
        """`_kernel(...)`, from the memo when it holds it."""
        scope = comp.by_name
        shapes = tuple(scope[o].shape for o in inst.operands if o in scope)
        key = (
            id(inst), comp.name, ex.cls, ex.times, ex.branch, platform,
            users.get((comp.name, inst.name), 0), tuple(map(id, shapes)),
        )  # fmt: skip
        if key in self._kernels:
            self.hits += 1
            return self._kernels[key]
        kernel = self._kernels[key] = _kernel(module, inst, comp, ex, users, platform)
        self._alive.append((inst, shapes))
        return kernel


def _kernel(
    module: HloModule,
    inst: Instruction,
    comp: Computation,
    ex: Executed,
    users: Mapping[tuple[str, str], int],
    platform: str | None,
) -> Kernel | None:
    if ex.cls == K.UNFUSED and not inst.called:
        # most kernels of a big module before optimization: one op, no library's
        return _one_op(inst, comp, ex.times, ex.branch, users.get((comp.name, inst.name), 0))
    cls, kind = ex.cls, K.kernel_kind(inst, platform)
    library = cls != K.UNFUSED and K.is_library_kernel(inst)
    fused = inst.calls()[0] if inst.called else None
    thunk_ops: tuple[str, ...] = (inst.name,)
    if inst.opcode == "async-start":
        wrapped = _wrapped(module, inst, platform)
        if not wrapped:
            return None  # wraps nothing that launches (a host computation, ...)
        # XLA's runtime runs the wrapped op(s) and reports them under their own names
        # (`hlo_op=all-to-all.3`); the `-done` half launches nothing.
        ops: tuple[Instruction, ...] = tuple(
            op for w in wrapped for op in (fused_ops(module, w) if w.opcode == "fusion" else (w,))
        )
        first = wrapped[0]
        cls = _class(first, platform)
        kind, library = K.kernel_kind(first, platform), K.is_library_kernel(first)
        thunk_ops = tuple(w.name for w in wrapped)
    elif ex.cls == K.FUSION:
        ops = fused_ops(module, inst)
        if is_small_call(inst):
            kind = CPU_CALL
        elif is_command_buffer(inst):
            kind = COMMAND_BUFFER
        call = _wrapped_library_call(module, inst)
        if call is not None:
            # A `__custom_fusion` address computation (a cuBLAS gemm on a dynamic slice)
            # runs as that library call (xla/service/gpu/fusions/custom.cc,
            # DynamicSliceFusion) and the runtime reports the call's name
            # (`hlo_op=custom-call.220`).
            cls, kind, library = K.CUSTOM_CALL, K.kernel_kind(call), True
            thunk_ops = (call.name,)
        else:
            rt = K.runtime(platform)
            if rt.memcpy_per_output:
                thunk_ops = (inst.name,) * _memcpy_count(module, inst)
            if rt.reduction_initializers:
                thunk_ops += _reduction_initializers(module, inst)
    else:
        ops, fused = (inst,), None
    launches = None if ex.times is None else ex.times * len(thunk_ops)
    return Kernel(
        name=inst.name,
        computation=comp.name,
        cls=cls,
        kind=kind,
        opcode=inst.opcode,
        shape=inst.shape,
        launches=launches,
        fused_computation=fused,
        ops=ops,
        bytes_out=inst.shape.byte_size,
        bytes_in=_bytes_in(inst, comp),
        library=library,
        users=users.get((comp.name, inst.name), 0),
        is_root=inst.is_root,
        branch=ex.branch,
        thunk_ops=thunk_ops if thunk_ops != (inst.name,) else (),
    )


def _wrapped(module: HloModule, inst: Instruction, platform: str | None) -> list[Instruction]:
    """The instructions an `async-start` runs: those of its wrapped computation that launch."""
    out = []
    for name in inst.calls():
        comp = module.computation_map.get(name)
        if comp is None:
            continue
        for i in comp.instructions:
            cls = _class(i, platform)
            if cls not in (K.FREE, K.CONTROL) or (cls == K.CONTROL and i.called):
                out.append(i)
    return out


def _wrapped_library_call(module: HloModule, inst: Instruction) -> Instruction | None:
    """The library custom call a `__custom_fusion` fusion wraps, if it wraps exactly one."""
    if inst.opcode != "fusion" or K.backend_fusion_kind(inst) != "__custom_fusion":
        return None
    comp = module.computation_map.get(inst.calls()[0]) if inst.called else None
    if comp is None:
        return None
    calls = [i for i in comp.instructions if K.classify(i) == K.CUSTOM_CALL]
    return calls[0] if len(calls) == 1 else None


def _memcpy_count(module: HloModule, inst: Instruction) -> int:
    """Thunks a GPU loop fusion runs: one per output when every output is a copy of a
    parameter with the same layout, else 1.

    XLA emits such a fusion as a `MemcpyFusion`: one device-to-device copy thunk per
    output, all under the fusion's name (`GetCopyFusion` in
    xla/service/gpu/fusions/fusions.cc; a MaxText trace shows `copy_fusion` 4 times per
    execution for 4 copies).
    """
    if inst.fusion_kind != "kLoop" or K.backend_fusion_kind(inst) is not None:
        return 1
    comp = module.computation_map.get(inst.calls()[0]) if inst.called else None
    if comp is None:
        return 1
    root = comp.root
    roots = [comp.by_name.get(o) for o in root.operands] if root.opcode == "tuple" else [root]
    for r in roots:
        source = comp.by_name.get(r.operands[0]) if r is not None and r.operands else None
        if r is None or r.opcode != "copy" or source is None or source.opcode != "parameter":
            return 1
        if _layout(r.shape) != _layout(source.shape):
            return 1
    return len(roots)


def _reduction_initializers(module: HloModule, inst: Instruction) -> tuple[str, ...]:
    """The reduces of a GPU reduction fusion whose output XLA initialises in a thunk of its
    own before the reduction kernel, reported under the reduce's name (`reduce.80.1`).

    XLA does so when the reduction is not race free, i.e. blocks combine partial results
    with atomics (`ReductionIsRaceFree` in xla/service/gpu/reduction_utils.cc): a row
    reduction over more than 1024 threads x 16 elements = 16384 elements per row, or a
    column reduction over more than 32 x 128 = 4096 rows. Reductions over a mix of
    minor and major dimensions are taken as race free.
    """
    if inst.fusion_kind != "kInput":
        return ()
    comp = module.computation_map.get(inst.calls()[0]) if inst.called else None
    if comp is None:
        return ()
    root = comp.root
    roots = [comp.by_name.get(o) for o in root.operands] if root.opcode == "tuple" else [root]
    return tuple(r.name for r in roots if r is not None and _needs_atomics(comp, r))


def _needs_atomics(comp: Computation, reduce: Instruction) -> bool:
    if reduce.opcode != "reduce" or not reduce.operands:
        return False
    operand = comp.by_name.get(reduce.operands[0])
    raw = reduce.attributes.get("dimensions", "")
    if operand is None or not operand.shape.dimensions:
        return False
    reduced = {int(d) for d in raw.strip("{}").split(",") if d.strip().isdigit()}
    dims = operand.shape.dimensions
    minor_to_major = _layout(operand.shape) or tuple(reversed(range(len(dims))))
    order = [d for d in minor_to_major if dims[d] != 1]  # size-1 dimensions do not matter
    if not reduced or not order:
        return False
    flags = [d in reduced for d in order]
    size = 1
    for d in order:
        size *= dims[d] if d in reduced else 1
    if all(flags[: flags.count(True)]):  # the reduced dimensions are the minor ones
        return size > 1024 * 16
    if not any(flags[: flags.count(False)]):  # the kept dimensions are the minor ones
        return flags.count(False) < len(flags) and size > 32 * 128
    return False


def _layout(shape: Shape) -> tuple[int, ...] | None:
    return shape.layout.minor_to_major if shape.layout is not None else None


class _UserCounts(Mapping[tuple[str, str], int]):
    """(computation, instruction) -> how many instructions of the computation use it,
    each computation's counted when first asked: kernels run in the computations the
    walk enters, never in fused ones, which hold most of an optimized module's
    instructions (889k of the 934k of the 153 MB module: 0.77 s of its 2 s analysis)."""

    def __init__(self, module: HloModule) -> None:
        self._module = module
        self._counts: dict[str, dict[tuple[str, str], int]] = {}

    def of(self, name: str) -> dict[tuple[str, str], int]:
        """The counts of computation `name`'s instructions."""
        found = self._counts.get(name)
        if found is None:
            comp = self._module.computation_map.get(name)
            found = self._counts[name] = _computation_users(comp) if comp is not None else {}
        return found

    def __getitem__(self, key: tuple[str, str]) -> int:
        return self.of(key[0])[key]

    def get(self, key: tuple[str, str], default: Any = None) -> Any:
        return self.of(key[0]).get(key, default)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return (key for comp in self._module.computations for key in self.of(comp.name))

    def __len__(self) -> int:
        return sum(len(self.of(comp.name)) for comp in self._module.computations)


def _users_of(comp: Computation, names: set[str]) -> dict[tuple[str, str], int]:
    """`_computation_users(comp)` for these instructions only."""
    counts: dict[tuple[str, str], int] = {}
    name = comp.name
    for inst in comp.instructions:
        if names.isdisjoint(inst.operands):
            continue
        for operand in names.intersection(inst.operands):
            key = (name, operand)
            counts[key] = counts.get(key, 0) + 1
    return counts


def _computation_users(comp: Computation) -> dict[tuple[str, str], int]:
    """(computation, instruction) -> how many instructions of the computation use it."""
    counts: dict[tuple[str, str], int] = {}
    get = counts.get
    name = comp.name
    for inst in comp.instructions:
        operands = inst.operands
        for operand in operands if len(operands) < 2 else set(operands):
            key = (name, operand)
            counts[key] = get(key, 0) + 1
    return counts
