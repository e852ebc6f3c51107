"""A run as its compilations: the modules grouped by the function they compile, each
variant with its input shapes, compile time and kernels.

XLA compiles for static shapes: a `jax.jit` function called at six sequence lengths is
six modules (`jit_attend` six times), a `tf.function(jit_compile=True)` retraced at four
is four (`a_inference_attend_15/31/47/63__XlaMustCompile_...`). `run_functions` is the one
place that says which function each module compiles. A framework plugs in one of two
ways: a rule on the module's name in `FUNCTION_RULES` (JAX, TensorFlow), or, where the
name does not say (PyTorch/XLA names every graph `SyncTensorsGraph.<n>`), a rule on the
whole run in `RUN_RULES`, which may read the framework's own records of the run (the line
whose sync compiled each graph) and give each module's compile time and cause too.
`run_compilations` groups a run's modules by function, in compile order (module id),
reads each variant's input and output shapes from its entry computation layout, finds
the inputs whose shapes vary, compares the kernels of the variants, joins the compile
times the run recorded, and words one line of advice in the framework's own terms.
`find_modules` lets `--module` pick a variant: `jit_attend#3` (compile order, from 0) or
`jit_attend(f32[24,32])` (by input shape).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from hloscope.analysis.fusion import ModuleAnalysis
from hloscope.analysis.torch_graphs import torch_xla_functions
from hloscope.errors import HloscopeError, UsageError
from hloscope.frameworks import Framework
from hloscope.hlo.lexical import parse_shape, split_top
from hloscope.hlo.model import HloModule, Shape
from hloscope.hlo.names import tf_mangled
from hloscope.runs import ModuleDump, Run, is_trivial, module_header

__all__ = [
    "FUNCTION_RULES",
    "RUN_RULES",
    "Claim",
    "Compilation",
    "Compilations",
    "FunctionRule",
    "RunRule",
    "Variant",
    "Varying",
    "entry_shapes",
    "find_module",
    "find_modules",
    "function_of",
    "run_compilations",
    "run_functions",
    "shape_string",
    "varying_groups",
    "varying_where",
]

FunctionRule = Callable[[str], "tuple[Framework, str] | None"]
"""A framework's naming rule: a module name -> `(framework, function)`, or None when the
name is not that framework's."""

_SUFFIX = re.compile(r"(\.\d+)+$")
# `at input path [0][1], now <class '...Static'> with pytree metadata Static(val=2) and
# before ...`: JAX's explanation of a static argument that changed
_STATIC_CHANGE = re.compile(
    r"^at (?:input path )?(.+?), now .*?Static\(val=(.*?)\) and before .*?Static\(val=(.*?)\)"
)
_ARG_PATH = re.compile(r"^\[0\]\[(\d+)\]$|^\[1\]\['(.+)'\]$")
_JAX = re.compile(r"^(?:jit|pjit|pmap|xmap)_.+")
_TF_FUNCTION = re.compile(r"^(a?_?_?inference_.+?)_\d+$")
_TF_CLUSTER = re.compile(r"^cluster_\d+$")
_COMMENT = re.compile(r"/\*.*?\*/")


def _tensorflow(name: str) -> tuple[Framework, str] | None:
    """`a_inference_attend_16__XlaMustCompile_..._.3` -> `a_inference_attend`;
    `cluster_3__XlaCompiledKernel_true_..._.42` -> `cluster_3` (an auto-clustered
    cluster keeps its number: each number is another cluster)."""
    mangled = tf_mangled(name)
    base = _SUFFIX.sub("", mangled[0] if mangled else name).rstrip("_")
    m = _TF_FUNCTION.match(base)
    if m is not None:
        return Framework.TENSORFLOW, m[1]
    if _TF_CLUSTER.match(base) and "__Xla" in name:
        return Framework.TENSORFLOW, base
    return None


def _jax(name: str) -> tuple[Framework, str] | None:
    """`jit_attend`, `jit_attend.1` -> `jit_attend`."""
    base = _SUFFIX.sub("", name)
    return (Framework.JAX, base) if _JAX.match(base) else None


FUNCTION_RULES: list[FunctionRule] = [_tensorflow, _jax]
"""Each framework's naming rule, tried in order; a framework plugs in by appending one."""


class Claim(Protocol):
    """What a framework's run rule says of one module it knows."""

    @property
    def framework(self) -> Framework:
        """The framework (`torch_xla`)."""
        ...

    @property
    def function(self) -> str:
        """The function the module compiles (`SyncTensorsGraph@train.py:76`)."""
        ...

    @property
    def compile_s(self) -> float | None:
        """Seconds the framework took to compile it, from its own records, if known."""
        ...

    @property
    def reason(self) -> str | None:
        """Why the framework compiled it, in its own words, if it said."""
        ...


RunRule = Callable[[Run], Mapping[str, Claim]]
"""A framework's rule on a whole run: module key -> its claim, for the modules it knows
(none for a run that is not that framework's). For frameworks whose module names do not
say which function a module compiles; it may read the framework's records in the run."""

RUN_RULES: list[RunRule] = [torch_xla_functions]
"""Each framework's run rule, tried in order before the naming rules; the first to claim
a module groups it."""


def framework_and_function(name: str) -> tuple[Framework | None, str]:
    """`(framework, function)` of a module name: the first rule that knows the name,
    else no framework and the name less its numeric `.N` suffixes."""
    for rule in FUNCTION_RULES:
        found = rule(name)
        if found is not None:
            return found
    return None, _SUFFIX.sub("", name)


def run_claims(run: Run) -> dict[str, Claim]:
    """What the run rules say of a run's modules, by module key (the first rule that
    claims a module wins)."""
    out: dict[str, Claim] = {}
    for rule in RUN_RULES:
        for key, claim in rule(run).items():
            out.setdefault(key, claim)
    return out


def run_functions(run: Run) -> dict[str, tuple[Framework | None, str]]:
    """Each module's `(framework, function)`, by module key: a run rule's claim where one
    claims it, else its name's (`framework_and_function`)."""
    claims = run_claims(run)
    out: dict[str, tuple[Framework | None, str]] = {}
    for m in run.modules:
        claim = claims.get(m.key)
        out[m.key] = (
            (claim.framework, claim.function)
            if claim is not None
            else framework_and_function(m.name)
        )
    return out


def function_of(name: str) -> str:
    """The function a module compiles, by its name alone: its name with what changes
    between compiles of that function removed (hashes, numeric suffixes, TensorFlow's
    trace counter). `run_functions` also asks the run rules.

    Args:
        name: An HloModule name (`jit_attend`, `a_inference_attend_31__XlaMust..._.3`).

    Returns:
        `jit_attend`, `a_inference_attend`, `cluster_3`, ...
    """
    return framework_and_function(name)[1]


class Analysed(Protocol):
    """What grouping reads of an analysed module (`analysis.report.ModuleReport`)."""

    @property
    def key(self) -> str: ...
    @property
    def trivial(self) -> bool: ...
    @property
    def after(self) -> ModuleAnalysis | None: ...
    @property
    def before_module(self) -> HloModule | None: ...
    @property
    def after_module(self) -> HloModule | None: ...


# ---------------------------------------------------------------------------------------
# Shapes


def shape_string(shape: Shape) -> str:
    """A shape as XLA prints it, without its layout: `f32[8,16]`, `(f32[2], s32[])`."""
    if shape.is_tuple:
        return "(" + ", ".join(shape_string(s) for s in shape.tuple_shapes) + ")"
    dims = ",".join(
        f"<={d}" if dynamic else str(d)
        for d, dynamic in zip(
            shape.dimensions, shape.dynamic or (False,) * len(shape.dimensions), strict=True
        )
    )
    return f"{shape.element_type}[{dims}]"


def entry_shapes(layout: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """Input and output shapes from an `entry_computation_layout` value.

    Args:
        layout: `{(f32[8,32]{1,0}, f32[16,32]{1,0})->f32[8,32]{1,0}}`.

    Returns:
        `(inputs, outputs)` as shape strings without layouts: one input per entry
        parameter, and the result's tuple elements (or the one result); None when the
        text is not a layout.
    """
    # XLA numbers long tuples as it prints them (`/*index=5*/f32[128]`): not the shape
    text = _COMMENT.sub("", layout).strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    if not text.startswith("("):
        return None
    depth, cut = 0, -1
    for i, c in enumerate(text):
        depth += c in "([{"
        depth -= c in ")]}"
        if depth == 0:
            cut = i
            break
    rest = text[cut + 1 :].strip()
    if cut < 0 or not rest.startswith("->"):
        return None
    try:
        params = [parse_shape(p) for p in split_top(text[1:cut]) if p.strip()]
        result = parse_shape(rest[2:])
    except ValueError:
        return None
    outputs = result.tuple_shapes if result.is_tuple else (result,)
    return tuple(map(shape_string, params)), tuple(map(shape_string, outputs))


_LAYOUT = re.compile(r"\bentry_computation_layout\s*=\s*")


def _layout_of(header: str) -> str | None:
    """The `{...}` value of `entry_computation_layout` in a module header."""
    m = _LAYOUT.search(header)
    if m is None or m.end() >= len(header) or header[m.end()] != "{":
        return None
    depth = 0
    for i in range(m.end(), len(header)):
        depth += header[i] == "{"
        depth -= header[i] == "}"
        if depth == 0:
            return header[m.end() : i + 1]
    return None


def module_shapes(
    dump: ModuleDump, report: Analysed | None = None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A module's input and output shapes: from its parsed module when there is one,
    else from its text file's header, else (a binary dump: nsys-jax's, torch_xla's) from
    the module parsed now; empty when none says."""
    layout = None
    for parsed in (report.before_module, report.after_module) if report is not None else ():
        if parsed is not None:
            layout = parsed.attributes.get("entry_computation_layout")
            if layout:
                break
    layout = layout or _layout_of(module_header(dump))
    if not layout and report is None:
        try:
            parsed = dump.load_before() or dump.load_after()
        except HloscopeError:  # unreadable: the report says so; no shapes here
            parsed = None
        layout = parsed.attributes.get("entry_computation_layout") if parsed else None
    found = entry_shapes(layout or "")
    return found or ((), ())


# ---------------------------------------------------------------------------------------
# Grouping


@dataclass(frozen=True)
class Variant:
    """One compilation of a function.

    Attributes:
        key: The module's key in the run.
        index: Its place among the function's compilations, in compile order, from 0.
        inputs: Input shapes (one per entry parameter), as XLA prints them.
        outputs: Output shapes.
        compile_s: Seconds the framework took to compile it (`RunManifest.compiles`),
            None where not measured.
        kernels: Kernels after optimization (None when not analysed).
        kernels_by_kind: Those kernels by kind.
        reason: The framework's explanation of why it compiled again, if it gave one.

    Example:
        >>> c = hloscope.inspect_run('tests/data/jax_recompile').compilations.recompiled[0]
        >>> v = c.variants[0]
        >>> v.key, v.index, v.kernels
        ('0000.jit_stage', 0, 1)
    """

    key: str
    index: int
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    compile_s: float | None = None
    kernels: int | None = None
    kernels_by_kind: Mapping[str, int] = field(default_factory=dict)
    reason: str | None = None


@dataclass(frozen=True)
class Varying:
    """An input whose shape differs between the compilations of a function.

    Attributes:
        arg: The entry parameter's number (None when the number of inputs differs).
        dim: The dimension that differs (None when the element type or rank does).
        values: Per compilation, in compile order: the dimension's size, or the whole
            shape (or the input count) when `dim` is None; None for a compilation set
            apart (`Compilation.set_apart`: not compared, its inputs being others).

    Example:
        >>> c = hloscope.inspect_run('tests/data/jax_recompile').compilations.recompiled[0]
        >>> [(v.arg, v.dim, v.values) for v in c.varying]
        [(0, 0, (8, 16, 24, 32, 48, 64))]
    """

    arg: int | None
    dim: int | None
    values: tuple[int | str | None, ...]


def varying_groups(varying: Sequence[Varying]) -> list[tuple[tuple[int, ...], Varying]]:
    """Varying dimensions that vary alike, together: `q`, `k` and `v` all of length
    8, 16, 24 are one group `((0, 1, 2), arg 0 dim 0)`; in the order first seen."""
    groups: dict[tuple[int | None, tuple[int | str | None, ...]], list[Varying]] = {}
    for v in varying:
        if v.arg is None or v.dim is None:
            groups[(None, (id(v),))] = [v]
            continue
        groups.setdefault((v.dim, v.values), []).append(v)
    return [
        (tuple(v.arg for v in members if v.arg is not None), members[0])
        for members in groups.values()
    ]


def varying_where(args: Sequence[int], v: Varying) -> str:
    """`arg 0 dim 0`, `args 0, 1, 2 dim 0`: where a group of varying dimensions is."""
    if v.arg is None:
        return "the number of inputs"
    names = f"arg {args[0]}" if len(args) == 1 else "args " + ", ".join(map(str, args))
    return names if v.dim is None else f"{names} dim {v.dim}"


@dataclass(frozen=True)
class FusesDifferently:
    """Compilations of one function whose kernels differ from the usual ones.

    Attributes:
        indices: The compilations, in compile order.
        kernels: Their kernel count.
        usual: The kernel count of most compilations.
        kinds: Per kernel kind, how many more (or fewer) kernels they have.

    Example:
        >>> c = hloscope.inspect_run('tests/data/jax_recompile').compilations.recompiled[0]
        >>> c.fuses_differently  # variants whose kernels differ beyond their shapes
        ()
    """

    indices: tuple[int, ...]
    kernels: int
    usual: int
    kinds: Mapping[str, int]


@dataclass(frozen=True)
class Compilation:
    """Every compilation of one function in a run.

    Attributes:
        function: The function (`jit_attend`, `a_inference_attend`).
        framework: `jax`, `tensorflow`, or None when the name does not say.
        variants: Its compilations, in compile order.
        varying: The inputs whose shapes differ between them.
        trivial: Whether it is one of the small helpers frameworks compile on the side.

    Example:
        >>> c = hloscope.inspect_run('tests/data/jax_recompile').compilations.recompiled[0]
        >>> c.function, c.count, c.variants[0].inputs
        ('jit_stage', 6, ('f32[8,64]',))
    """

    function: str
    framework: Framework | None
    variants: tuple[Variant, ...]
    varying: tuple[Varying, ...] = ()
    trivial: bool = False

    @property
    def count(self) -> int:
        """How many times it was compiled."""
        return len(self.variants)

    @property
    def set_apart(self) -> tuple[Variant, ...]:
        """The compilations left out when comparing input shapes: for a framework whose
        function is the code between two syncs (PyTorch/XLA), those whose inputs differ
        in number or rank from most (the first training step, which creates the
        optimizer's state); none for the others."""
        compared = {v.index for v in _compared(self.framework, self.variants)}
        return tuple(v for v in self.variants if v.index not in compared)

    @property
    def compile_s(self) -> float | None:
        """Seconds spent compiling it (the measured compilations), None if none was."""
        measured = [v.compile_s for v in self.variants if v.compile_s is not None]
        return sum(measured) if measured else None

    @property
    def fuses_differently(self) -> tuple[FusesDifferently, ...]:
        """The compilations whose kernels by kind differ from most compilations' (among
        those whose inputs are compared: one set apart is another graph)."""
        analysed = [v for v in _compared(self.framework, self.variants) if v.kernels is not None]
        if len(analysed) < 2:
            return ()
        signature = {v.index: tuple(sorted(v.kernels_by_kind.items())) for v in analysed}
        usual_sig, _ = Counter(signature.values()).most_common(1)[0]
        usual = dict(usual_sig)
        groups: dict[tuple[tuple[str, int], ...], list[Variant]] = {}
        for v in analysed:
            if signature[v.index] != usual_sig:
                groups.setdefault(signature[v.index], []).append(v)
        out = []
        for sig, members in groups.items():
            kinds = dict(sig)
            delta = {
                k: kinds.get(k, 0) - usual.get(k, 0)
                for k in sorted(set(kinds) | set(usual))
                if kinds.get(k, 0) != usual.get(k, 0)
            }
            out.append(
                FusesDifferently(
                    indices=tuple(v.index for v in members),
                    kernels=sum(kinds.values()),
                    usual=sum(usual.values()),
                    kinds=delta,
                )
            )
        return tuple(out)

    @property
    def reasons(self) -> tuple[str, ...]:
        """What the framework said about why it compiled again: each different line of
        JAX's cache-miss explanations (`at q, now f32[16,32] and before f32[8,32]`), in
        the order said."""
        found: list[str] = []
        for v in self.variants:
            for line in (v.reason or "").splitlines():
                text = line.strip()
                if text.startswith("* "):
                    text = text[2:]
                    if text not in found:
                        found.append(text)
        return tuple(found)

    @property
    def static_changes(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Each static argument JAX said changed (its cache-miss explanations name a
        `Static(val=...)` at an input path): `(argument, values in compile order)`, the
        argument as `argument 1` or `argument power` where the path says which."""
        found: dict[str, list[str]] = {}
        for reason in self.reasons:
            m = _STATIC_CHANGE.match(reason)
            if m is None:
                continue
            path = _ARG_PATH.match(m[1])
            where = f"argument {path[1] or path[2]}" if path else m[1]
            values = found.setdefault(where, [m[3]])
            if m[2] not in values:
                values.append(m[2])
        return tuple((where, tuple(values)) for where, values in found.items())

    @property
    def advice(self) -> str:
        """One line on how to compile it fewer times, in its framework's terms."""
        return _advice(self)


@dataclass(frozen=True)
class Compilations:
    """A run's functions and their compilations.

    Attributes:
        functions: Every function, in the order each was first compiled.
        compile_s: Seconds the frameworks spent compiling in the whole run (every
            compile they reported, dumped or not); None when the run recorded none.
        wall_s: The run's wall time, when known.
        notes: What the frameworks said beyond single compiles (TensorFlow's retracing
            warnings) and why compile times are missing.

    Example:
        >>> compilations = hloscope.inspect_run('tests/data/jax_recompile').compilations
        >>> [(c.function, c.count) for c in compilations.recompiled]
        [('jit_stage', 6), ('jit_attend', 6), ('jit__reduce_sum', 6)]
    """

    functions: tuple[Compilation, ...] = ()
    compile_s: float | None = None
    wall_s: float | None = None
    notes: tuple[str, ...] = ()

    @property
    def recompiled(self) -> tuple[Compilation, ...]:
        """The functions compiled more than once."""
        return tuple(f for f in self.functions if f.count > 1)

    def of(self, key: str) -> tuple[Compilation, Variant] | None:
        """The function and compilation a module key is."""
        for f in self.functions:
            for v in f.variants:
                if v.key == key:
                    return f, v
        return None


def group(
    modules: Iterable[ModuleDump],
    functions: Mapping[str, tuple[Framework | None, str]] | None = None,
) -> dict[str, list[ModuleDump]]:
    """The modules of each function, in compile order (module id); functions in the
    order each was first compiled.

    Args:
        modules: The modules.
        functions: Each module's `(framework, function)` by key (`run_functions`); a
            module not in it is grouped by its name (`function_of`).
    """
    ordered = sorted(modules, key=lambda m: (m.id_number is None, m.id_number or 0, m.key))
    out: dict[str, list[ModuleDump]] = {}
    for m in ordered:
        found = functions.get(m.key) if functions is not None else None
        out.setdefault(found[1] if found is not None else function_of(m.name), []).append(m)
    return out


def run_compilations(
    run: Run, reports: Iterable[Analysed] = (), *, shapes_of: Iterable[str] | None = None
) -> Compilations:
    """Group a run's modules into compilations.

    Args:
        run: The run; all its modules are grouped (so that each module's place among its
            function's compilations is the run's, whatever is selected).
        reports: The analysed modules: their kernels, and their parsed entry layouts.
        shapes_of: Read shapes only for these module keys' functions (all when None):
            a file header per module.

    Returns:
        Every function with its compilations.
    """
    by_key = {r.key: r for r in reports}
    manifest = run.manifest
    compiled = {c.module: c for c in manifest.compiles if c.module is not None}
    claims = run_claims(run)
    functions_by_key = run_functions(run)
    wanted = None if shapes_of is None else set(shapes_of)
    functions = []
    for name, dumps in group(run.modules, functions_by_key).items():
        if wanted is not None and not wanted & {d.key for d in dumps}:
            continue
        variants = []
        for i, d in enumerate(dumps):
            report = by_key.get(d.key)
            inputs, outputs = module_shapes(d, report)
            after = report.after if report is not None else None
            c = compiled.get(d.key)
            claim = claims.get(d.key)
            variants.append(
                Variant(
                    key=d.key,
                    index=i,
                    inputs=inputs,
                    outputs=outputs,
                    compile_s=c.seconds if c is not None else _claimed_seconds(claim),
                    kernels=after.kernel_count if after is not None else None,
                    kernels_by_kind=dict(after.kernels_by_kind) if after is not None else {},
                    reason=c.reason if c is not None else claim.reason if claim else None,
                )
            )
        framework = functions_by_key[dumps[0].key][0]
        trivial = by_key[dumps[0].key].trivial if dumps[0].key in by_key else is_trivial(dumps[0])
        functions.append(
            Compilation(name, framework, tuple(variants), _varying(framework, variants), trivial)
        )
    return Compilations(
        functions=tuple(functions),
        compile_s=manifest.compile_s if manifest.compile_s is not None else _claimed_total(claims),
        wall_s=manifest.wall_time_s,
        notes=manifest.compile_notes,
    )


def _claimed_seconds(claim: Claim | None) -> float | None:
    return claim.compile_s if claim is not None else None


def _claimed_total(claims: Mapping[str, Claim]) -> float | None:
    """The compile time of the claimed modules, where the framework timed each of them
    (a run whose frameworks recorded no compile of their own in run.json)."""
    seconds = [c.compile_s for c in claims.values()]
    if not seconds or any(s is None for s in seconds):
        return None
    return sum(s for s in seconds if s is not None)


# Frameworks whose function is the code between two syncs rather than a Python function
# with arguments: its graphs may differ in their inputs' number and ranks (the first
# step also creates the optimizer's state; a branch takes other tensors), so input
# shapes are compared only among the compilations whose inputs have the same ranks.
_COMPARED_BY_RANKS = frozenset({Framework.TORCH_XLA})


def _ranks(v: Variant) -> tuple[int, ...] | None:
    """The rank of each input (None when a shape does not parse)."""
    try:
        return tuple(len(parse_shape(t).dimensions) for t in v.inputs)
    except ValueError:
        return None


def _compared(framework: Framework | None, variants: Sequence[Variant]) -> tuple[Variant, ...]:
    """The compilations whose input shapes are compared: all of them, or for a framework
    of `_COMPARED_BY_RANKS` the most numerous group with the same input ranks (the later
    one on a tie: the first step is the odd one out)."""
    if framework not in _COMPARED_BY_RANKS or len(variants) < 2:
        return tuple(variants)
    by_ranks: dict[tuple[int, ...] | None, list[Variant]] = {}
    for v in variants:
        by_ranks.setdefault(_ranks(v), []).append(v)
    groups = list(by_ranks.values())
    return tuple(groups[max(range(len(groups)), key=lambda i: (len(groups[i]), i))])


def _varying(framework: Framework | None, variants: Sequence[Variant]) -> tuple[Varying, ...]:
    """The inputs whose shapes differ between compilations, dimension by dimension
    (among `_compared` ones; None in `values` for the others)."""
    compared = _compared(framework, variants)
    if len(compared) < 2 or any(not v.inputs for v in compared):
        return ()
    place = {v.index: i for i, v in enumerate(compared)}

    def spread(values: Sequence[int | str]) -> tuple[int | str | None, ...]:
        return tuple(values[place[v.index]] if v.index in place else None for v in variants)

    counts = {len(v.inputs) for v in compared}
    if len(counts) > 1:
        return (Varying(None, None, spread([f"{len(v.inputs)} inputs" for v in compared])),)
    out: list[Varying] = []
    for arg in range(counts.pop()):
        texts = [v.inputs[arg] for v in compared]
        if len(set(texts)) == 1:
            continue
        try:
            shapes = [parse_shape(t) for t in texts]
        except ValueError:
            out.append(Varying(arg, None, spread(texts)))
            continue
        types = {(s.element_type, len(s.dimensions), s.is_tuple) for s in shapes}
        if len(types) > 1 or shapes[0].is_tuple:
            out.append(Varying(arg, None, spread(texts)))
            continue
        for dim in range(len(shapes[0].dimensions)):
            values = [s.dimensions[dim] for s in shapes]
            if len(set(values)) > 1:
                out.append(Varying(arg, dim, spread(values)))
    return tuple(out)


# ---------------------------------------------------------------------------------------
# Advice


def _advice(c: Compilation) -> str:
    """One line on how to compile `c` fewer times, in its framework's terms."""
    groups = [(args, v) for args, v in varying_groups(c.varying) if v.dim is not None]
    dims = [v for v in c.varying if v.dim is not None]
    place = ""
    if groups:
        place = varying_where(*groups[0]) + (
            f" (and {len(groups) - 1} more dimensions)" if len(groups) > 1 else ""
        )
    other = [v for v in c.varying if v.dim is None]
    name = (
        re.sub(r"^a?_?_?inference_", "", c.function)
        if c.framework == Framework.TENSORFLOW
        else c.function
    )
    if c.framework == Framework.JAX:
        static = c.static_changes
        if static and not dims:
            at = ", ".join(where for where, _ in static)
            return (
                f"a static argument changed ({at}): jax.jit compiles once per value of a "
                "static_argnums/static_argnames argument; if it takes many values, pass it as "
                "an array argument instead"
            )
        if dims:
            return (
                f"pad or bucket {place} to a few sizes: jax.jit compiles once per input "
                "shape (one compile per bucket instead of per length)"
            )
        if other:
            return (
                "the inputs' types or structure changed between calls: cast to one dtype and "
                "keep the pytree fixed, so jax.jit compiles once"
            )
        return (
            "same input shapes each time: a static argument (static_argnums/static_argnames) "
            "or a closed-over value changed, or jax.jit wrapped the function again; pass "
            "changing values as array arguments and jit once"
        )
    if c.framework == Framework.TENSORFLOW:
        if c.function.startswith("cluster_"):
            return (
                f"XLA auto-clustering compiles {c.function} for each input shape: pad or bucket "
                f"{place or 'the inputs'} to a few sizes"
            )
        if dims:
            return (
                f"an input_signature with None for {place} (or reduce_retracing=True) traces "
                f"{name} once, but with jit_compile=True XLA still compiles each shape: pad or "
                "bucket that dimension to a few sizes"
            )
        return (
            f"same input shapes each time: Python values in {name}'s arguments, or a new "
            "tf.function per call, make TensorFlow trace again; pass tensors, or fix the "
            "signature with input_signature"
        )
    if c.framework == Framework.TORCH_XLA:
        return _torch_xla_advice(c, place)
    if dims:
        return f"XLA compiles once per input shape: pad or bucket {place} to a few sizes"
    return "XLA compiled it again with the same input shapes"


# torch_xla's cause for a graph compiled because Python read a tensor's value
# (`.item()`, `print`, `if tensor:`) before the step's sync.
_TENSOR_READ = "access tensor value"


def _torch_xla_advice(c: Compilation, place: str) -> str:
    """PyTorch/XLA's terms: torch_xla traces the code between two `torch_xla.sync()`
    calls into a graph and compiles it for each new input shape or structure; its
    advice is to keep shapes the same between steps (pad, few shape variations), to read
    tensor values after the sync, and not to bake changing Python numbers into the graph
    (docs: "Troubleshooting recompilations", "Known Performance Caveats")."""
    if any(_TENSOR_READ in (v.reason or "") for v in c.variants):
        read = (
            "Python read a tensor's value before torch_xla.sync() (.item(), print, an if on "
            "a tensor), which compiles and runs the graph traced so far as a graph of its "
            "own: read values after the sync, or less often"
        )
        return f"{read}; its inputs vary too: pad or bucket {place}" if place else read
    if place:
        return (
            f"pad or bucket {place} to a few sizes: torch_xla compiles the graph again for "
            "each new input shape (pad sequences to a fixed length; drop_last=True keeps a "
            "DataLoader's short last batch from compiling a graph of its own)"
        )
    apart = c.set_apart
    first, last = len(c.variants[0].inputs), len(c.variants[-1].inputs)
    if [v.index for v in apart] == [0] and first < last:
        return (
            f"nothing to fix: #0 is the first step ({first} inputs, then {last}); it also "
            "creates state that later steps take as inputs (an optimizer's, e.g. AdamW's "
            "moments), so the step compiles once more, once"
        )
    if apart:
        return (
            "the code traced between two torch_xla.sync() calls differs from step to step "
            "(graphs with other inputs): Python control flow on tensor values, or a loop "
            "whose count changes; keep each step's code the same, with torch_xla.sync() at "
            "the end of the step"
        )
    return (
        "same input shapes each time, so the graph itself changed: a Python number that "
        "changes between steps (a learning-rate schedule, a step counter) is traced into "
        "the graph as a constant; keep it in a tensor on the XLA device"
    )


# ---------------------------------------------------------------------------------------
# Picking a variant: `--module jit_attend#3`, `--module 'jit_attend(f32[24,32])'`


_INDEXED = re.compile(r"^(?P<name>.+)#(?P<index>\d+)$")
_CALLED = re.compile(r"^(?P<name>[^()]+)\((?P<shapes>.*)\)$")


def find_modules(run: Run, pattern: str) -> list[ModuleDump]:
    """The modules a `--module` pattern names: one variant by index (`jit_attend#3`, in
    compile order from 0) or by input shapes (`jit_attend(f32[24,32])`: modules of that
    function with an input of that shape; `[24,32]` ignores the element type), every
    compilation of a function compiled several times (`jit_attend`), else what
    `Run.module` finds (key, name, id, or unique part of the key).

    Raises:
        UsageError: Nothing matches, or an index or shape matches no variant (the message
            lists the variants and their shapes).
    """
    m = _INDEXED.match(pattern)
    if m is not None:
        function, variants = _function(run, m["name"])
        index = int(m["index"])
        if index >= len(variants):
            raise UsageError(
                f"{function} was compiled {len(variants)}× in {run.path}; "
                f"pick #0 to #{len(variants) - 1}: {_listing(function, variants)}"
            )
        return [variants[index]]
    m = _CALLED.match(pattern)
    if m is not None:
        function, variants = _function(run, m["name"].strip())
        wanted = [s.strip() for s in split_top(m["shapes"]) if s.strip()]
        found = [d for d in variants if _has_inputs(module_shapes(d)[0], wanted)]
        if not found:
            raise UsageError(
                f"no compilation of {function} takes {', '.join(wanted) or 'no input'}: "
                f"{_listing(function, variants)}"
            )
        return found
    by_key = run_functions(run)
    functions = group(run.modules, by_key)
    if pattern in functions and len(functions[pattern]) > 1:
        return functions[pattern]
    try:
        return [run.module(pattern)]
    except UsageError:
        named = [m for m in run.modules if m.name == pattern]
        if len(named) > 1 and len({by_key[m.key][1] for m in named}) == 1:
            return named
        raise


def find_module(run: Run, pattern: str) -> ModuleDump:
    """The one module a pattern names (see `find_modules`).

    Raises:
        UsageError: None, or several (a function compiled several times: the message
            lists its variants, to pick one by `#N` or shape).
    """
    found = find_modules(run, pattern)
    if len(found) == 1:
        return found[0]
    function, variants = _function(run, found[0].key)
    raise UsageError(
        f"{pattern!r} matches {len(found)} compilations of {function} in {run.path}; pick "
        f"one: {_listing(function, variants)}"
    )


def _function(run: Run, name: str) -> tuple[str, list[ModuleDump]]:
    """A function by its name, a module name or key of it, or a unique part of its name."""
    by_key = run_functions(run)
    functions = group(run.modules, by_key)
    if name in functions:
        return name, functions[name]
    for m in run.modules:
        if name in (m.key, m.name):
            return by_key[m.key][1], functions[by_key[m.key][1]]
    partial = [f for f in functions if name in f]
    if len(partial) == 1:
        return partial[0], functions[partial[0]]
    listed = ", ".join(f for f, ms in functions.items() if len(ms) > 1) or "none"
    what = "matches several functions" if partial else "is no function"
    raise UsageError(f"{name!r} {what} in {run.path}; functions compiled more than once: {listed}")


def _has_inputs(inputs: Sequence[str], wanted: Sequence[str]) -> bool:
    """Whether every wanted shape is one of the inputs (`[24,32]`: any element type)."""
    if not inputs:
        return False
    if list(wanted) == list(inputs):
        return True
    remaining = list(inputs)
    for w in wanted:
        hit = next((i for i in remaining if i == w or (w.startswith("[") and i.endswith(w))), None)
        if hit is None:
            return False
        remaining.remove(hit)
    return True


def _listing(function: str, variants: Sequence[ModuleDump], limit: int = 8) -> str:
    """`jit_attend#0 (f32[8,32], f32[16,32]); ...`: variants as `--module` takes them.
    `variants` are all of the function's compilations, in compile order."""
    parts = [
        f"{function}#{i} ({', '.join(module_shapes(d)[0]) or '?'})"
        for i, d in enumerate(variants[:limit])
    ]
    more = f", ... ({len(variants) - limit} more)" if len(variants) > limit else ""
    return "; ".join(parts) + more
