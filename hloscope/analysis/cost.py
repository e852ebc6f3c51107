"""Bytes and FLOPs per kernel and per module, as XLA's own cost analysis counts them.

A pure function of a parsed module and its `ModuleAnalysis`: `module_cost` gives each
kernel's bytes read, bytes written and FLOPs per run, the module's totals per execution
(each kernel times its runs), arithmetic intensity, and the bytes fusion kept out of
memory. The definitions follow `HloCostAnalysis` (openxla/xla
`xla/service/hlo_cost_analysis.cc`), which is what `compiled.cost_analysis()` reports:

- bytes: an instruction reads its operands and writes its result; a fusion reads each
  parameter once (a slice, dynamic-slice, broadcast or reshape user reads what it uses:
  `FusionParameterReadBytes`; per kernel also through a bitcast, as the GPU cost
  analysis's utilization does -- a loop body's dynamic-slice of a stacked weight reads
  one layer) plus its non-scalar constants, and writes its outputs (a
  dynamic-update-slice root only its update). Slices, gathers and scatters move what
  they touch; parameters, constants, bitcasts and get-tuple-element move nothing; a
  tuple writes its pointer table (8 bytes an element).
- FLOPs: one per output element of an elementwise op (transcendental ones -- exp, log,
  tanh, rsqrt, ... -- are counted apart, as XLA does), `2 x output x contracted` for a
  dot, `2 x` the valid (output, kernel) positions for a convolution (padding skipped),
  the reducer's FLOPs per reduced element for reduce and reduce-window, `n log2 n` for
  a sort.
- Library calls: a cuBLAS gemm or cuDNN convolution counts its dot's or convolution's
  FLOPs, as XLA's `GpuHloCostAnalysis` does; any other custom call has no known cost
  (XLA says -1): its operands and result are its bytes, and it is listed in
  `ModuleCost.unknown`. Collectives count no FLOPs. Approximate where XLA's is.
- Async pairs (`copy-start`/`copy-done`, `all-gather-start`/`-done`, `send`/`recv` and
  their dones, ...) per kernel: the buffer they move counted once, as the TPU compiler's
  cost analysis counts them (the per-op `bytes_accessed` a TPU profile carries: 5 GiB
  for each half of a 5 GiB `copy-start`/`copy-done`). The start reads its operands; a
  start whose result is a tuple (the aliased operand, the destination, a context)
  leaves the destination to its done, which writes it and reads nothing; a start whose
  result is the destination (`all-reduce-start`, an `async-start` computing its wrapped
  op) writes it, and its done moves nothing. Where the done launches nothing (GPU, CPU),
  the start's kernel carries both. XLA's generic `HloCostAnalysis` (what `xla_totals`
  and `compiled.cost_analysis()` report) instead counts a start as writing every leaf
  of its tuple: the aliased operand too (15 GiB for that 5 GiB copy).

`xla_totals` sums the entry computation as `HloCostAnalysis` does (a while loop's body
once), for checking against `cost_analysis()`; `ModuleCost` totals count every run of
every kernel per execution instead (a loop's body times its known trip count).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from hloscope.analysis.fusion import Kernel, ModuleAnalysis
from hloscope.analysis.kernels import ASYNC_DONE_OPCODES
from hloscope.analysis.memo import PerModule
from hloscope.hlo.model import ELEMENT_BITS, Computation, HloModule, Instruction, Shape
from hloscope.hlo.opcodes import async_wrapped_opcode

__all__ = [
    "ELEMENTWISE",
    "TRANSCENDENTAL",
    "Cost",
    "KernelCost",
    "ModuleCost",
    "instruction_cost",
    "kept_bytes",
    "module_cost",
    "xla_totals",
]

# What XLA's CPU and GPU compilers pass as the pointer size to ShapeUtil::ByteSizeOf: a
# tuple's buffer is its table of element pointers.
_POINTER_BYTES = 8

# HloCostAnalysis::HandleElementwiseOp counts these as transcendentals, not FLOPs.
TRANSCENDENTAL = frozenset(
    {
        "exponential", "log", "logistic", "power", "sqrt", "cbrt", "rsqrt", "tanh",
        "sine", "cosine", "tan", "exponential-minus-one", "log-plus-one", "atan2", "erf",
    }
)  # fmt: skip

ELEMENTWISE = TRANSCENDENTAL | frozenset(
    {
        "abs", "add", "and", "ceil", "clamp", "compare", "complex", "convert",
        "count-leading-zeros", "divide", "floor", "imag", "is-finite", "maximum", "minimum",
        "multiply", "negate", "not", "or", "popcnt", "real", "reduce-precision",
        "remainder", "round-nearest-afz", "round-nearest-even", "select", "shift-left",
        "shift-right-arithmetic", "shift-right-logical", "sign", "subtract", "xor",
        "stochastic-convert", "bitcast-convert",
    }
)  # fmt: skip

# No computation and no memory traffic (HandleParameter, HandleConstant, HandleBitcast,
# HandleGetTupleElement, HandleAfterAll, HandleAddDependency, HandleDomain).
_NO_TRAFFIC = frozenset(
    {"parameter", "constant", "bitcast", "get-tuple-element", "after-all", "add-dependency",
     "domain"}
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Cost:
    """What one run of an instruction computes and moves.

    Attributes:
        flops: Floating-point (and integer) operations, transcendentals excluded.
        transcendentals: exp, log, tanh, rsqrt, ... evaluations.
        bytes_read: Bytes read from memory.
        bytes_written: Bytes written to memory.

    Example:
        >>> ins = hloscope.inspect_run("tests/data/tf_dense_relu")
        >>> total = ins.cost(ins.main[0].key).total
        >>> total.bytes, round(total.intensity, 1)
        (295424.0, 14.3)
    """

    flops: float = 0.0
    transcendentals: float = 0.0
    bytes_read: float = 0.0
    bytes_written: float = 0.0

    @property
    def bytes(self) -> float:
        """Bytes moved: read plus written."""
        return self.bytes_read + self.bytes_written

    @property
    def intensity(self) -> float | None:
        """FLOPs per byte moved, or None when nothing is moved."""
        return self.flops / self.bytes if self.bytes else None

    def __add__(self, other: Cost) -> Cost:
        return Cost(
            self.flops + other.flops,
            self.transcendentals + other.transcendentals,
            self.bytes_read + other.bytes_read,
            self.bytes_written + other.bytes_written,
        )

    def scaled(self, n: float) -> Cost:
        """This cost `n` times over."""
        return Cost(
            self.flops * n, self.transcendentals * n, self.bytes_read * n, self.bytes_written * n
        )


@dataclass(frozen=True, slots=True)
class KernelCost:
    """One kernel's cost.

    Attributes:
        name: The kernel (instruction) name.
        kind: Its kind (see `Kernel.kind`).
        cost: What one run computes and moves.
        runs: Runs per execution of the module (None: a loop trip count is unknown).
        kept: Bytes fusion kept out of memory per run (see `kept_bytes`).
        known: False for a library call whose cost XLA does not know.
        narrow: Its matrix work (dot, convolution, gemm) takes 16-bit or narrower
            operands, the tensor cores' roof on GPUs.

    Example:
        >>> ins = hloscope.inspect_run("tests/data/tf_dense_relu")
        >>> k = ins.cost(ins.main[0].key).kernels[0]
        >>> k.name, k.cost.flops, k.known
        ('MatMul.2', 4194304.0, True)
    """

    name: str
    kind: str
    cost: Cost
    runs: int | None
    kept: int = 0
    known: bool = True
    narrow: bool = False


@dataclass(frozen=True)
class ModuleCost:
    """A module's cost per execution.

    Attributes:
        kernels: Each kernel's cost, in kernel order.
        total: Every kernel's cost times its runs (a kernel with an unknown trip count
            counted once).
        kept: Bytes fusion kept out of memory per execution.
        unknown: Kernels whose cost is not known (library calls), by name.

    Example:
        >>> ins = hloscope.inspect_run("tests/data/tf_dense_relu")
        >>> cost = ins.cost(ins.main[0].key)
        >>> cost.total.flops, len(cost.kernels)
        (4210688.0, 2)
    """

    kernels: tuple[KernelCost, ...]
    total: Cost
    kept: float
    unknown: tuple[str, ...] = ()

    @property
    def intensity(self) -> float | None:
        """FLOPs per byte moved over the whole module."""
        return self.total.intensity

    def kernel(self, name: str) -> KernelCost | None:
        """The cost of the kernel with this name, or None."""
        for k in self.kernels:
            if k.name == name:
                return k
        return None


def module_cost(module: HloModule, analysis: ModuleAnalysis) -> ModuleCost:
    """Each kernel's bytes and FLOPs, and the module's totals per execution.

    Computed once per (module, analysis) pair alive (`remember_cost` says one made
    elsewhere: a worker process of `hloscope.analysis.pool`).

    Args:
        module: The after-optimization module.
        analysis: Its `analyze_module` result (the kernels and their launches).
    """
    return _costs(module, analysis)


def remember_cost(module: HloModule, analysis: ModuleAnalysis, cost: ModuleCost) -> None:
    """Keep `cost` as `module_cost(module, analysis)`, while both live."""
    _costs.remember(module, analysis, cost)


def _module_cost(module: HloModule, analysis: ModuleAnalysis) -> ModuleCost:
    out: list[KernelCost] = []
    total, kept = Cost(), 0.0
    kernel_names = {k.name for k in analysis.kernels}
    users: dict[str, dict[str, list[Instruction]]] = {}  # per computation, when asked
    for k in analysis.kernels:
        inst, comp = _locate(module, k)
        if inst is None or comp is None:
            continue
        library = _library_cost(inst, comp) if inst.opcode == "custom-call" else None
        known = inst.opcode != "custom-call" or library is not None
        if library is None:
            library = (
                instruction_cost(inst, comp, module, through_bitcasts=True)
                if known
                else _io_bytes(inst, comp)
            )
        cost = library
        if _is_async_start(inst) or inst.opcode in ASYNC_DONE_OPCODES:
            if comp.name not in users:
                users[comp.name] = _users(comp)
            cost = _async_cost(inst, comp, module, users[comp.name], kernel_names)
        saved = kept_bytes(inst, module)
        runs = None if k.launches is None else k.launches // k.thunks
        narrow = _narrow(inst, comp, module)
        out.append(KernelCost(k.name, k.kind, cost, runs, saved, known, narrow))
        total = total + cost.scaled(runs or 1)
        kept += saved * (runs or 1)
    unknown = tuple(c.name for c in out if not c.known)
    return ModuleCost(tuple(out), total, kept, unknown)


# The first halves of XLA's async pairs (the seconds are `kernels.ASYNC_DONE_OPCODES`).
_ASYNC_STARTS = frozenset(
    {"copy-start", "all-gather-start", "all-reduce-start", "collective-permute-start",
     "send", "recv", "async-start"}
)  # fmt: skip


def _is_async_start(inst: Instruction) -> bool:
    """An async pair's start, XLA's sugar (`all-to-all-start`) included."""
    return inst.opcode in _ASYNC_STARTS or (
        inst.opcode.endswith("-start") and async_wrapped_opcode(inst.opcode) is not None
    )


def _writes_destination(start: Instruction) -> bool:
    """Whether a start's result is the pair's destination (`all-reduce-start`, an
    `async-start` running its wrapped op), rather than a tuple aliasing its operand
    beside the destination its done fills."""
    return (start.opcode == "async-start" and bool(start.called)) or not start.shape.is_tuple


def _async_cost(
    inst: Instruction,
    comp: Computation,
    module: HloModule,
    users: Mapping[str, list[Instruction]],
    kernels: set[str],
) -> Cost:
    """One half of an async pair, the buffer it moves counted once (module docstring);
    a start whose done is not a kernel carries the done's cost too."""
    if inst.opcode in ASYNC_DONE_OPCODES:
        start = inst
        while start.opcode in ASYNC_DONE_OPCODES and start.operands:  # through updates
            found = comp.by_name.get(start.operands[0])
            if found is None:
                break
            start = found
        if inst.opcode == "async-update" or _writes_destination(start):
            return Cost()
        done_bytes = sum(s.byte_size for s in inst.shape.leaves() if s.element_type != "token")
        return Cost(0.0, 0.0, 0.0, float(done_bytes))
    if inst.opcode == "async-start" and inst.called:
        cost = instruction_cost(inst, comp, module)  # the wrapped computation's
    else:
        flops, trans = _compute(inst, comp, module)
        read = sum(_size(_operand_shape(inst, comp, i)) for i in range(len(inst.operands)))
        written = 0.0 if inst.shape.is_tuple else float(inst.shape.byte_size)
        cost = Cost(flops, trans, float(read), written)
    done = inst
    while True:  # the done that ends the pair, through any async-update
        nxt = next((u for u in users.get(done.name, []) if u.opcode in ASYNC_DONE_OPCODES), None)
        if nxt is None:
            break
        done = nxt
    if done is not inst and done.name not in kernels:
        cost = cost + _async_cost(done, comp, module, users, kernels)
    return cost


def xla_totals(module: HloModule) -> Cost:
    """The module's cost summed as `HloCostAnalysis` sums it, to check against XLA.

    Every entry instruction once; a while loop's body and condition once; a conditional
    its costliest branch; a custom call counts -1 bytes and -1 FLOPs, as XLA marks it.
    """
    total = Cost()
    for inst in module.entry.instructions:
        total = total + instruction_cost(inst, module.entry, module)
    return total


def kept_bytes(inst: Instruction, module: HloModule) -> int:
    """Bytes a fusion kept out of memory: its intermediate results, each of which eager
    execution would have written and read back once (2 x its size).

    Approximate: an intermediate read by several ops would be read several times, and
    bitcasts, tuples and scalar constants, which eager execution would not materialise
    either, are left out. Zero for anything but a fusion.
    """
    if inst.opcode != "fusion":
        return 0
    total = 0
    for comp in _fused(inst, module):
        outputs = _outputs(comp)
        for fused in comp.instructions:
            if fused.name in outputs or fused.opcode in _NO_TRAFFIC or fused.opcode == "tuple":
                continue
            if fused.opcode == "fusion":
                total += kept_bytes(fused, module)
                continue
            total += 2 * fused.shape.byte_size
    return total


def instruction_cost(
    inst: Instruction, comp: Computation, module: HloModule, *, through_bitcasts: bool = False
) -> Cost:
    """What one run of `inst` computes and moves, as `HloCostAnalysis` counts it.

    Args:
        inst: Any instruction.
        comp: The computation it is in (its operands are looked up there).
        module: The module (for the computations it calls).
        through_bitcasts: A fusion parameter read through a bitcast by a slice or
            dynamic-slice counts only the slice, as `GpuHloCostAnalysis`'s utilization
            does; `HloCostAnalysis` counts the whole parameter there.
    """
    op = inst.opcode
    if op in _NO_TRAFFIC:
        return Cost()
    if op == "fusion":
        return _fusion_cost(inst, comp, module, through_bitcasts)
    if op in ("call", "while", "conditional", "async-start"):
        return _control_cost(inst, module)
    if op == "custom-call":
        return Cost(-1.0, 0.0, -1.0, 0.0)  # HandleCustomCall: unknown
    flops, trans = _compute(inst, comp, module)
    read, written = _traffic(inst, comp)
    return Cost(flops, trans, read, written)


def _control_cost(inst: Instruction, module: HloModule) -> Cost:
    """call/while: the callees once each (one trip); conditional: the costliest branch."""
    costs = [_computation_cost(module.computation_map[c.name], module) for c in inst.called
             if c.name in module.computation_map]  # fmt: skip
    if inst.opcode == "conditional" and costs:
        return Cost(*(max(getattr(c, f) for c in costs) for f in Cost.__slots__))
    total = Cost()
    for c in costs:
        total = total + c
    return total


def _computation_cost(comp: Computation, module: HloModule) -> Cost:
    total = Cost()
    for inst in comp.instructions:
        total = total + instruction_cost(inst, comp, module)
    return total


def _compute(inst: Instruction, comp: Computation, module: HloModule) -> tuple[float, float]:
    """(FLOPs, transcendentals) of one run of a non-fusion, non-control instruction."""
    op, shape = inst.opcode, inst.shape
    if op in ELEMENTWISE:
        n = float(shape.num_elements)
        return (0.0, n) if op in TRANSCENDENTAL else (n, 0.0)
    if op == "dot":
        lhs = _operand_shape(inst, comp, 0)
        dims = _ints(inst.attributes.get("lhs_contracting_dims", ""))
        width = math.prod(lhs.dimensions[d] for d in dims if d < len(lhs.dimensions))
        return 2.0 * shape.num_elements * width, 0.0
    if op == "convolution":
        return _convolution_flops(inst, comp), 0.0
    if op in ("reduce", "reduce-window", "map", "scatter", "select-and-scatter"):
        return _applied(inst, comp, module)
    if op == "sort":
        n = _operand_shape(inst, comp, 0).num_elements
        return float(n * max(0, (n - 1).bit_length())), 0.0
    if op in ("rng", "rng-bit-generator"):
        return 0.0, float(sum(s.num_elements for s in shape.leaves()))
    if op == "all-reduce" or op == "all-reduce-start":
        return float(sum(s.num_elements for s in shape.leaves())), 0.0
    return 0.0, 0.0


def _applied(inst: Instruction, comp: Computation, module: HloModule) -> tuple[float, float]:
    """FLOPs of ops applying a computation per element (reduce, map, scatter, ...)."""
    subs = [module.computation_map.get(c.name) for c in inst.called]
    sub = [_computation_cost(c, module) for c in subs if c is not None]
    per = sub[0] if sub else Cost()
    op = inst.opcode
    out = next(iter(inst.shape.leaves()), inst.shape)
    if op == "reduce":
        count = _operand_shape(inst, comp, 0).num_elements - out.num_elements
    elif op == "reduce-window":
        window = _window(inst.attributes.get("window", ""))
        count = (math.prod(w["size"] for w in window) - 1) * out.num_elements
    elif op == "map":
        count = out.num_elements
    elif op == "scatter":
        updates = _operand_shape(inst, comp, len(inst.operands) - 1)
        count = updates.num_elements
    else:  # select-and-scatter: window-1 selects and one scatter per source element
        source = _operand_shape(inst, comp, 1).num_elements
        window = _window(inst.attributes.get("window", ""))
        select = sub[0] if sub else Cost()
        scatter = sub[1] if len(sub) > 1 else Cost()
        total = select.scaled(source * (math.prod(w["size"] for w in window) - 1))
        total = total + scatter.scaled(source)
        return total.flops, total.transcendentals
    return per.flops * count, per.transcendentals * count


def _traffic(inst: Instruction, comp: Computation) -> tuple[float, float]:
    """(bytes read, bytes written) of one run of a non-fusion instruction."""
    op, size = inst.opcode, _size(inst.shape)
    if op in ("slice",):
        return size, size
    if op == "dynamic-slice":
        # XLA counts the first index operand only (from when there was one index array)
        return size + _size(_operand_shape(inst, comp, 1)), size
    if op == "dynamic-update-slice":
        update = _size(_operand_shape(inst, comp, 1))
        return update + _size(_operand_shape(inst, comp, 2)), update
    if op == "gather":
        return size + _size(_operand_shape(inst, comp, 1)), size
    if op == "scatter":
        n = (len(inst.operands) - 1) // 2
        updates = sum(_size(_operand_shape(inst, comp, n + 1 + i)) for i in range(n))
        return 2 * updates + _size(_operand_shape(inst, comp, n)), updates
    if op == "tuple":
        return 0.0, size
    if op == "transpose" and _is_bitcast_transpose(inst, comp):
        return 0.0, 0.0
    read = sum(_size(_operand_shape(inst, comp, i)) for i in range(len(inst.operands)))
    # a multi-output op (sort, variadic reduce) writes each of its arrays
    return float(read), float(sum(s.byte_size for s in inst.shape.leaves()))


def _library_cost(inst: Instruction, comp: Computation) -> Cost | None:
    """A cuBLAS gemm or cuDNN convolution, as GpuHloCostAnalysis::HandleCustomCall counts
    it (xla/service/gpu/model/gpu_hlo_cost_analysis.cc): the dot's or convolution's FLOPs
    from the call's dimension numbers; bytes: its operands and its result, without the
    scratch workspace a tuple result carries. None for any other library call."""
    target = inst.custom_call_target or ""
    out = inst.shape.tuple_shapes[0] if inst.shape.is_tuple else inst.shape
    read = float(sum(_size(_operand_shape(inst, comp, i)) for i in range(len(inst.operands))))
    if target.startswith("__cublas$"):
        config = inst.backend_config if isinstance(inst.backend_config, dict) else {}
        gemm = config.get("gemm_backend_config", config)
        dims = gemm.get("dot_dimension_numbers", {}) if isinstance(gemm, dict) else {}
        lhs = _operand_shape(inst, comp, 0)
        contracting = [int(d) for d in dims.get("lhs_contracting_dimensions", [])]
        width = math.prod(lhs.dimensions[d] for d in contracting if d < len(lhs.dimensions))
        return Cost(2.0 * out.num_elements * width, 0.0, read, float(out.byte_size))
    if target.startswith("__cudnn$conv"):
        flops = _convolution_flops(inst, comp, out)
        return Cost(flops, 0.0, read, float(out.byte_size))
    return None


_MATRIX_OPS = ("dot", "convolution", "custom-call")


def _narrow(inst: Instruction, comp: Computation, module: HloModule) -> bool:
    """Whether the kernel's matrix work reads 16-bit or narrower floats (bf16, f16, f8)."""
    places = [(inst, comp)] + [
        (f, body) for body in _fused(inst, module) for f in body.instructions
    ]
    for op, where in places:
        if op.opcode in _MATRIX_OPS and op.operands:
            lhs = _operand_shape(op, where, 0)
            bits = ELEMENT_BITS.get(lhs.element_type)
            if lhs.element_type.startswith(("bf", "f")) and bits is not None:
                return bits <= 16
    return False


def _io_bytes(inst: Instruction, comp: Computation) -> Cost:
    """A library call's operands read and result written: what the call must move at
    least (XLA does not know its cost)."""
    read, written = _traffic(inst, comp)
    return Cost(0.0, 0.0, read, written)


def _fusion_cost(
    inst: Instruction, comp: Computation, module: HloModule, through: bool = False
) -> Cost:
    """HandleFusion: FLOPs of the fused ops; bytes of the parameters as their users read
    them, large constants and the outputs -- never the intermediates."""
    fused = _fused(inst, module)
    if not fused:
        read, written = _traffic(inst, comp)
        return Cost(0.0, 0.0, read, written)
    body = fused[0]
    flops = trans = 0.0
    read = 0.0
    for f in body.instructions:
        if f.opcode == "fusion":
            inner = _fusion_cost(f, body, module, through)
            flops, trans = flops + inner.flops, trans + inner.transcendentals
            continue
        if f.opcode == "custom-call":
            continue
        if f.opcode in ("call", "while", "conditional"):
            sub = _control_cost(f, module)
            flops, trans = flops + sub.flops, trans + sub.transcendentals
            continue
        f_flops, f_trans = _compute(f, body, module)
        flops, trans = flops + f_flops, trans + f_trans
        if f.opcode == "constant" and f.shape.num_elements > 1:
            read += _size(f.shape)
    users = _users(body)
    for p in body.parameters:
        for leaf in _leaf_readers(p, users):
            read += _parameter_read(leaf, body, users, module, through)
    return Cost(flops, trans, read, _fusion_written(inst, body))


def _fusion_written(inst: Instruction, body: Computation) -> float:
    root = body.root
    if root.opcode == "dynamic-update-slice":
        return _size(_operand_shape(root, body, 1))
    if root.opcode == "tuple":
        total = 0.0
        for i, name in enumerate(root.operands):
            part = body.by_name.get(name)
            if part is not None and part.opcode == "dynamic-update-slice":
                total += _size(_operand_shape(part, body, 1))
            elif i < len(inst.shape.tuple_shapes):
                total += sum(_size(s) for s in inst.shape.tuple_shapes[i].leaves())
        return total
    return float(sum(_size(s) for s in inst.shape.leaves()))


def _leaf_readers(param: Instruction, users: Mapping[str, list[Instruction]]) -> list[Instruction]:
    """For a tuple parameter, the get-tuple-element reaching each leaf (as far as one
    exists); else the parameter itself."""
    if not param.shape.is_tuple:
        return [param]
    out = []
    for path in _leaf_paths(param.shape):
        at = param
        for index in path:
            nxt = next(
                (u for u in users.get(at.name, []) if u.opcode == "get-tuple-element"
                 and u.attributes.get("index") == str(index)),
                None,
            )  # fmt: skip
            if nxt is None:
                break
            at = nxt
        out.append(at)
    return out


def _leaf_paths(shape: Shape, prefix: tuple[int, ...] = ()) -> list[tuple[int, ...]]:
    if not shape.is_tuple:
        return [prefix]
    return [p for i, s in enumerate(shape.tuple_shapes) for p in _leaf_paths(s, (*prefix, i))]


def _parameter_read(
    param: Instruction,
    body: Computation,
    users: Mapping[str, list[Instruction]],
    module: HloModule,
    through: bool = False,
) -> float:
    """FusionParameterReadBytes: what the fusion reads of one parameter (`through`: see
    `instruction_cost`)."""
    size, seen_trivial = 0.0, False
    for user in users.get(param.name, []):
        op = user.opcode
        if op == "fusion":
            inner = _fused(user, module)
            for idx, name in enumerate(user.operands):
                if name == param.name and inner:
                    inner_params = inner[0].parameters
                    if idx < len(inner_params):
                        inner_users = _users(inner[0])
                        size += _parameter_read(
                            inner_params[idx], inner[0], inner_users, module, through
                        )
        elif op == "slice" or (op == "dynamic-slice" and user.operands[0] == param.name):
            size += _size(user.shape)
        elif op == "dynamic-update-slice" and user.operands[0] == param.name:
            continue  # aliased to the output
        elif op in ("broadcast", "reshape"):
            size += _size(param.shape)
        elif op == "bitcast" and through:
            part = _parameter_read(user, body, users, module, through)
            if part < _size(param.shape):
                size += part
            elif not seen_trivial:  # read whole: the same read as other plain users
                seen_trivial = True
                size += _size(param.shape)
        elif not seen_trivial:
            seen_trivial = True
            size += _size(param.shape)
    return size


def _convolution_flops(inst: Instruction, comp: Computation, out: Shape | None = None) -> float:
    """GetConvolutionFlops: 2 x in-features/group x out-features x batch/group x the
    valid (output, kernel) positions of each spatial dimension (padding skipped)."""
    lhs, rhs = _operand_shape(inst, comp, 0), _operand_shape(inst, comp, 1)
    result = out if out is not None else inst.shape
    labels = inst.attributes.get("dim_labels", "")
    m = re.fullmatch(r"(\w+)_(\w+)->(\w+)", labels)
    if m is None:
        return 0.0
    in_l, k_l, out_l = m.groups()
    spatial = [c for c in in_l if c.isdigit()]
    window = _window(inst.attributes.get("window", "")) or [{} for _ in spatial]
    positions = 1
    for i, dim in enumerate(spatial):
        w = window[i] if i < len(window) else {}
        positions *= _valid_positions(
            lhs.dimensions[in_l.index(dim)],
            rhs.dimensions[k_l.index(dim)],
            result.dimensions[out_l.index(dim)],
            w,
        )
    groups = int(inst.attributes.get("feature_group_count", "1"))
    batch_groups = int(inst.attributes.get("batch_group_count", "1"))
    in_feature = lhs.dimensions[in_l.index("f")]
    out_feature = result.dimensions[out_l.index("f")]
    batch = lhs.dimensions[in_l.index("b")]
    return 2.0 * (in_feature // groups) * out_feature * (batch // batch_groups) * positions


def _valid_positions(n_in: int, n_kernel: int, n_out: int, w: Mapping[str, int]) -> int:
    stride, lo = w.get("stride", 1), w.get("pad_lo", 0)
    dil, base = w.get("rhs_dilate", 1), w.get("lhs_dilate", 1)
    count = 0
    for k in range(n_kernel):
        for o in range(n_out):
            at = o * stride - lo + k * dil
            if at % base:
                continue
            if 0 <= at // base < n_in:
                count += 1
    return count


def _window(text: str) -> list[dict[str, int]]:
    """`window={size=3x3 stride=2x2 pad=0_1x0_1 ...}` as one dict per dimension."""
    fields = dict(re.findall(r"(\w+)=([\w-]+)", text))
    sizes = [int(s) for s in fields.get("size", "").split("x") if _INTEGER.fullmatch(s)]
    out: list[dict[str, int]] = [{"size": s} for s in sizes]
    for key in ("stride", "lhs_dilate", "rhs_dilate"):
        for i, v in enumerate(fields.get(key, "").split("x")):
            if _INTEGER.fullmatch(v) and i < len(out):
                out[i][key] = int(v)
    for i, pad in enumerate(fields.get("pad", "").split("x")):
        lo, _, hi = pad.partition("_")
        if _INTEGER.fullmatch(lo) and _INTEGER.fullmatch(hi or "0") and i < len(out):
            out[i]["pad_lo"], out[i]["pad_hi"] = int(lo), int(hi or 0)
    return out


_INTEGER = re.compile(
    r"-?[0-9]{1,18}"
)  # what a window field holds; text that is not one is left out


def _is_bitcast_transpose(inst: Instruction, comp: Computation) -> bool:
    """Whether a transpose only relabels dimensions in memory (HandleTranspose treats it
    as a bitcast): the dimensions of size > 1 keep their physical order."""
    src = _operand_shape(inst, comp, 0)
    perm = _ints(inst.attributes.get("dimensions", ""))
    if src.layout is None or inst.shape.layout is None or len(perm) != len(src.dimensions):
        return False
    rank = range(len(src.dimensions))
    if sorted(perm) != list(rank) or not set(src.layout.minor_to_major) <= set(rank):
        return False  # not a permutation, or a layout of another rank: no bitcast
    out_phys = [perm[d] for d in inst.shape.layout.minor_to_major if d < len(perm)]
    big = [d for d in src.layout.minor_to_major if src.dimensions[d] > 1]
    return [d for d in out_phys if src.dimensions[d] > 1] == big


def _fused(inst: Instruction, module: HloModule) -> list[Computation]:
    comps = module.computation_map
    return [comps[n] for n in inst.calls("calls") if n in comps]


def _outputs(comp: Computation) -> set[str]:
    root = comp.root
    return {root.name, *root.operands} if root.opcode == "tuple" else {root.name}


def _users(comp: Computation) -> dict[str, list[Instruction]]:
    users: dict[str, list[Instruction]] = {}
    for inst in comp.instructions:
        for name in dict.fromkeys(inst.operands):
            users.setdefault(name, []).append(inst)
    return users


def _locate(module: HloModule, k: Kernel) -> tuple[Instruction | None, Computation | None]:
    comp = module.computation_map.get(k.computation)
    return (comp.by_name.get(k.name) if comp else None), comp


def _operand_shape(inst: Instruction, comp: Computation, i: int) -> Shape:
    if i >= len(inst.operands):
        return Shape("tuple")
    found = comp.by_name.get(inst.operands[i])
    return found.shape if found is not None else Shape("tuple")


def _size(shape: Shape) -> float:
    """ShapeUtil::ByteSizeOf with an 8-byte pointer: a tuple is its pointer table."""
    if shape.is_tuple:
        return float(_POINTER_BYTES * len(shape.tuple_shapes))
    return float(shape.byte_size)


def _ints(text: str) -> list[int]:
    return [int(x) for x in re.findall(r"\d+", text)]


_costs = PerModule(_module_cost)
