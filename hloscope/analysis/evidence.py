"""What counts as evidence that a source op is in a kernel, and what stands in without it.

`provenance.trace` credits an op to a kernel only through instructions that do the op's
work. XLA copies constants (and broadcasts of them) into every fusion that uses them,
keeping the metadata of the op that first made them: a Keras `Relu`'s `constant(0)`
ends up in a dozen kernels that never compute a maximum. This module says which
instructions are such free copies (`constant_like`, `is_work`), finds the op a removed
op was merged into by common-subexpression elimination (`cse_twins`), and infers the
ops of kernels that hold no evidence at all (`infer_kernel_ops`), always marked as
inferred. The user's source line is the first stack frame outside the frameworks
(`user_location`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

from hloscope.analysis.fusion import Kernel
from hloscope.analysis.memo import ByModule
from hloscope.hlo.model import Computation, HloModule, Instruction, SourceLocation

# Ops that only move or relabel data: free when all they move is a constant.
DATA_MOVEMENT = frozenset(
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
# Instructions that compute nothing themselves.
_NO_WORK = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "bitcast"})
# Never merged by XLA's CSE (side effects, or a value of their own).
_UNIQUE = frozenset(
    {
        "parameter",
        "rng",
        "rng-bit-generator",
        "rng-get-and-update-state",
        "infeed",
        "outfeed",
        "send",
        "recv",
        "custom-call",
        "after-all",
        "all-reduce",
        "all-gather",
        "partition-id",
        "replica-id",
    }
)

# Source paths inside the frameworks (and hloscope's own runner): not the user's code.
FRAMEWORK_PATHS = (
    "/site-packages/tensorflow/",
    "/site-packages/keras/",
    "/site-packages/jax/",
    "/site-packages/jaxlib/",
    "/site-packages/flax/",
    "/site-packages/optax/",
    "/site-packages/tf_keras/",
    "/site-packages/torch/",
    "/site-packages/torch_xla/",
    "/site-packages/torchax/",
    "/site-packages/functorch/",
    "/tensorflow/python/",
    "/hloscope/capture/",
    "<frozen ",
)


@functools.lru_cache(maxsize=4096)
def is_framework_file(path: str) -> bool:
    """Whether a source path lies inside TensorFlow, Keras, JAX, PyTorch (or hloscope's
    runner)."""
    # Cached: a module's thousands of frames name a few hundred files.
    return any(part in path for part in FRAMEWORK_PATHS)


def constant_like(module: HloModule) -> frozenset[int]:
    """`id()` of every constant and every data movement of constants only, in `module`.

    A fused computation's parameter counts as a constant when the fusion passes one in
    (XLA's CPU `wrapped_broadcast` of a `constant(0)`). XLA prints operands before
    their users, so each pass goes in text order; passes repeat while fusion parameters
    change (callees print before callers). Ids are of the module's own `Instruction`
    objects (which are not hashable) and hold while the module lives.
    """
    return _constant_like(module)


def _find_constant_like(module: HloModule) -> frozenset[int]:
    out: set[int] = set()
    comps = module.computation_map
    while True:
        # Within a computation one pass in text order finds all; only a fusion
        # parameter marked in this pass (its callee printed, and read, before) can
        # mark more in the next.
        marked = False
        for comp in module.computations:
            # its constant-like instructions by name, as found (not `comp.by_name`,
            # which the module would keep: a dict per fused computation, 44k and 30 MB
            # in a big module, issue 27)
            here = {inst.name for inst in comp.instructions if id(inst) in out}
            for inst in comp.instructions:
                if inst.opcode == "constant" or (
                    inst.opcode in DATA_MOVEMENT
                    and inst.operands
                    and all(o in here for o in inst.operands)
                ):
                    out.add(id(inst))
                    here.add(inst.name)
                elif inst.opcode == "fusion":
                    marked = _mark_parameters(inst, here, comps, out) or marked
        if not marked:
            return frozenset(out)


def _mark_parameters(
    fusion: Instruction,
    here: Collection[str],
    comps: Mapping[str, Computation],
    out: set[int],
) -> bool:
    """Mark the parameters of `fusion`'s callees that it passes a constant-like
    operand (`here`: those of its computation, by name); whether any was not marked
    yet."""
    # the numbers of the constant-like operands: most fusions pass none
    passed = {n for n, name in enumerate(fusion.operands) if name in here}
    if not passed:
        return False
    marked = False
    for name in fusion.calls():
        callee = comps.get(name)
        if callee is None:
            continue
        for param in callee.parameters:
            if param.parameter_number in passed and id(param) not in out:
                out.add(id(param))
                marked = True
    return marked


def is_work(inst: Instruction, free: frozenset[int]) -> bool:
    """Whether `inst` does work of its own: not a parameter, constant, tuple, bitcast, or
    a broadcast/reshape/... of constants only (`free` = `constant_like(module)`)."""
    return inst.opcode not in _NO_WORK and id(inst) not in free


@dataclass(frozen=True)
class Twin:
    """An instruction XLA's CSE can replace by an identical earlier one.

    Attributes:
        instruction: The instruction that goes away.
        kept: The identical instruction that stays (the first in text order).
    """

    instruction: Instruction
    kept: Instruction


def cse_twins(module: HloModule) -> dict[tuple[str, str], Twin]:
    """For each instruction of a before-optimization module that computes exactly what an
    earlier one in its computation computes, that earlier one, by (computation, name).

    Identical means the same opcode, shape, attributes (literal included) and operands,
    operands compared the same way (value numbering in text order) and called
    computations compared by structure (two reducers that both add), which is what XLA's
    `HloCSE` pass merges (xla/hlo/transforms/simplifiers/hlo_cse.cc); instructions with
    side effects never are.
    """
    out: dict[tuple[str, str], Twin] = {}
    shapes: dict[str, object] = {}  # computation -> its structure, names left out
    # Only a called computation's structure is ever compared (`called` below).
    callees = {c.name for comp in module.computations for i in comp.instructions for c in i.called}
    for comp in module.computations:  # callees print before their callers
        canon: dict[str, str] = {}
        # By everything but the attributes, the first instruction seen; once a second
        # one comes, by attributes too. Most keys have one instruction, whose
        # attributes are then never read (a big module's are text until asked).
        first: dict[tuple[object, ...], Instruction | dict[object, Instruction]] = {}
        structure: list[object] | None = None
        order: dict[str, int] = {}
        if comp.name in callees:
            structure, order = [], {i.name: n for n, i in enumerate(comp.instructions)}
        for inst in comp.instructions:
            called = (
                tuple([(c.role, shapes.get(c.name, c.name)) for c in inst.called])
                if inst.called
                else ()
            )
            attrs: tuple[tuple[str, str], ...] | None = None
            if structure is not None:
                attrs = _cse_attributes(inst)
                operands = tuple(order.get(o, -1) for o in inst.operands)
                structure.append(
                    (inst.opcode, inst.shape.text, inst.literal, attrs, called, operands)
                )
            if inst.opcode in _UNIQUE:
                canon[inst.name] = inst.name
                continue
            key = (
                inst.opcode,
                inst.shape.text,
                inst.literal,
                tuple([canon.get(o, o) for o in inst.operands]),
                called,
            )
            found = first.get(key)
            if found is None:
                first[key] = kept = inst
            else:
                if isinstance(found, Instruction):
                    found = first[key] = {_cse_attributes(found): found}
                kept = found.setdefault(attrs or _cse_attributes(inst), inst)
            canon[inst.name] = canon.get(kept.name, kept.name)
            if kept is not inst:
                out[(comp.name, inst.name)] = Twin(inst, kept)
        if structure is not None:
            shapes[comp.name] = tuple(structure)
    return out


def _cse_attributes(inst: Instruction) -> tuple[tuple[str, str], ...]:
    """An instruction's attributes as CSE compares them: metadata and the callee names
    do not make instructions different."""
    skip = {"metadata", *(c.role for c in inst.called)}
    return tuple(sorted((k, v) for k, v in inst.attributes.items() if k not in skip))


@dataclass(frozen=True)
class Inferred:
    """Source ops given to a kernel that holds no instruction naming one.

    Attributes:
        ops: The op names, in order.
        how: Where they came from: `its reducer`, `the kernel instruction`,
            `a constant it holds`, `its producer X`, `its consumer X`.

    Example:
        >>> m = hloscope.inspect_run('tests/data/keras_cnn_fit', timings=False).main[0]
        >>> [(name, i.how) for name, i in m.provenance.inferred.items()][:1]
        [('wrapped_broadcast', 'the kernel instruction')]
    """

    ops: tuple[str, ...]
    how: str


def infer_kernel_ops(
    module: HloModule,
    kernels: Iterable[Kernel],
    evidenced: Mapping[str, tuple[str, ...]],
    name_of: Callable[[Instruction], str | None],
) -> dict[str, Inferred]:
    """Source ops for the kernels without evidence, each with how it was inferred.

    In order: the metadata of computations the kernel's instructions call (the reducer of
    a CPU `wrapped_reduce-window`), the kernel instruction's own metadata, the free
    instructions it holds (a constant it materialises), then its neighbours: the kernels
    producing its operands, else those consuming its result.

    Args:
        module: The module after optimization.
        kernels: Its kernels.
        evidenced: Kernel name -> source op names backed by instructions doing work.
        name_of: An instruction's source op name, or None.
    """
    kernels = list(kernels)
    out: dict[str, Inferred] = {}
    for k in kernels:
        if evidenced.get(k.name):
            continue
        found = _from_own(module, k, name_of)
        if found is not None:
            out[k.name] = found
    neighbours = _neighbours(module, kernels)
    known = {**evidenced, **{k: v.ops for k, v in out.items()}}
    changed = True
    while changed:  # a kernel fed only by inferred kernels infers from them in turn
        changed = False
        for k in kernels:
            if known.get(k.name):
                continue
            found = _from_neighbours(neighbours.get(k.name, ([], [])), known)
            if found is not None:
                out[k.name] = found
                known[k.name] = found.ops
                changed = True
    return out


def _from_neighbours(
    sides: tuple[list[str], list[str]], known: Mapping[str, tuple[str, ...]]
) -> Inferred | None:
    for side, names in zip(("producer", "consumer"), sides, strict=True):
        for other in names:
            if known.get(other):
                return Inferred(known[other], f"its {side} {other}")
    return None


def _from_own(
    module: HloModule, k: Kernel, name_of: Callable[[Instruction], str | None]
) -> Inferred | None:
    comps = module.computation_map
    called = [  # parameters carry the frontend's unscoped name (`reduce_sum`)
        i2
        for i in k.ops
        for c in i.calls()
        if c in comps
        for i2 in comps[c].instructions
        if i2.opcode != "parameter"
    ]
    head = _kernel_instruction(module, k)
    for how, insts in (
        ("its reducer", called),
        ("the kernel instruction", [head] if head is not None else []),
        ("a constant it holds", list(k.ops)),
    ):
        names = tuple(dict.fromkeys(n for n in map(name_of, insts) if n))
        if names:
            return Inferred(names, how)
    return None


def _kernel_instruction(module: HloModule, k: Kernel) -> Instruction | None:
    comp = module.computation_map.get(k.computation)
    return comp.by_name.get(k.name) if comp is not None else None


def _neighbours(module: HloModule, kernels: list[Kernel]) -> dict[str, tuple[list[str], list[str]]]:
    """Kernel -> (kernels producing its operands, kernels consuming it), looking through
    instructions that launch nothing (bitcasts, tuples, ...)."""
    names = {k.name for k in kernels}
    out: dict[str, tuple[list[str], list[str]]] = {n: ([], []) for n in names}
    for comp in module.computations:
        # `comp.by_name`, which the module keeps: only for a computation that holds
        # kernels, not for each fused one
        index: Mapping[str, Instruction] | None = None
        for inst in comp.instructions:
            if inst.name not in names:
                continue
            if index is None:
                index = comp.by_name
            for producer in _through_free(inst.operands, index, names):
                out[inst.name][0].append(producer)
                out.setdefault(producer, ([], []))[1].append(inst.name)
    return out


def _through_free(
    operands: Iterable[str], index: Mapping[str, Instruction], names: set[str]
) -> list[str]:
    found: list[str] = []
    stack = list(operands)
    seen: set[str] = set()
    while stack:
        name = stack.pop(0)
        if name in seen or name not in index:
            continue
        seen.add(name)
        if name in names:
            found.append(name)
        elif index[name].opcode in ("bitcast", "get-tuple-element", "tuple", "copy-done"):
            stack.extend(index[name].operands)
    return found


Location = tuple[SourceLocation | None, bool]
_Where = int | tuple[str | None, int | None]  # a stack frame id, or an inline file and line
# Per live module, `user_location` by stack frame id (or inline file and line): a
# module's instructions share a few thousand frames, and a Keras frame's stack is dozens
# of frames deep. Dropped with the module (`memo.ByModule`).
_frame_memos: ByModule[dict[_Where, Location]] = ByModule(lambda module: {})


def user_location(module: HloModule, inst: Instruction) -> Location:
    """The first frame of `inst`'s stack outside the frameworks, and whether it is one.

    Walks the `StackFrames` parent links from the innermost frame outwards. When no frame
    is the user's (TensorFlow records only its own `ops.py`), returns the innermost
    location the dump has and False. Computed once per stack frame (or inline file and
    line) of a module.
    """
    return user_locator(module)(inst)


def user_locator(module: HloModule) -> Callable[[Instruction], Location]:
    """`user_location` for the instructions of `module`: its memo found once, for a
    pass over many of them."""
    memo, frames = _frame_memos(module), module.stack_frames

    def locate(inst: Instruction) -> Location:
        md = inst.metadata
        if md is None:
            return _user_location(module, inst)
        frame_id = md.stack_frame_id
        key: _Where
        if frame_id is None or frame_id not in frames:
            key = (md.source_file, md.source_line)  # no stack: these alone say where
        else:
            key = frame_id
        found = memo.get(key)
        if found is None:
            found = memo[key] = _user_location(module, inst)
        return found

    return locate


# File names that hold no place: TensorFlow's XLA bridge writes `source_file=
# "dummy_file_name" source_line=10` on every op of an auto-clustered graph that carries
# no debug info. Such an op has no source location.
PLACEHOLDER_FILES = frozenset({"dummy_file_name"})


def _user_location(module: HloModule, inst: Instruction) -> Location:
    stack = [f for f in module.stack(inst) if f.file not in PLACEHOLDER_FILES]
    for frame in stack:
        if not is_framework_file(frame.file):
            return frame, True
    loc = stack[0] if stack else module.source_location(inst)
    if loc is None or loc.file in PLACEHOLDER_FILES:
        return None, False
    return loc, not is_framework_file(loc.file)


# constant_like() by module (`memo.ByModule`): provenance and the op graph's colours
# both ask, a pass or more over a big module each (issue 27).
_constant_like = ByModule(_find_constant_like)
