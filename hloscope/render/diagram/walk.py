"""One walk over what a module executes, building the *unit graph* a diagram draws.

A unit is what a diagram would draw one by one: a kernel after optimization, an op
before it, a control instruction (loop, conditional, async call), an entry parameter,
the output. `unit_graph` walks the entry computation and, from every control
instruction, the computations it runs; values are followed through the free
instructions (get-tuple-element, bitcast, tuple, ...) so edges join the units that
really talk. The two views differ only in a `Side`: which instructions are units, what
attributes they carry, and whether `call`s are inlined (before optimization they are,
as XLA's call inliner will). `hloscope.analysis.collapse` then cuts the graph to a
budget and `hloscope.render.diagram.build` turns it into a `DiagramSpec`. The walk puts
what it finds in a `Sink`: a networkx graph here, rows for the op graph of a big module
(`hloscope.render.diagram.rows`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx

from hloscope.analysis import kernels as K
from hloscope.analysis.collapse import (
    OP_NAMES,
    ORDER,
    PINNED,
    SCOPE,
    SIGNATURE,
    name_scope,
    scope_of,
)
from hloscope.analysis.fusion import Kernel, ModuleAnalysis
from hloscope.analysis.provenance import Provenance, SourceOp, op_name, source_op
from hloscope.hlo.model import Computation, HloModule, Instruction, Shape
from hloscope.render.diagram.spec import CONTROL, KERNEL, OP, OUTPUT, PARAMETER
from hloscope.render.format import fmt_shape

# Node attributes of unit graphs, beside the shared ones of hloscope.analysis.collapse.
ROLE = "role"
ITEM = "item"  # the Kernel, or the Instruction
OPS = "ops"  # tuple[str, ...]: source op labels
CLUSTER = "cluster"  # the id of the box (a control instruction's body) it runs in
INPUTS = "inputs"  # folded parameters: list of (name, Shape)
KERNELS = "kernels"  # before optimization: every kernel the op went to
# Edge attributes: the (operand index, Shape) pairs the edge feeds; a loop's back edge.
OPERANDS = "operands"
BACK = "back"

Named = tuple[str, tuple[str, ...], str | None]
"""An op's scope, its name (none or one) and its op type, as `BeforeSide.name_of` reads."""
Sources = list[tuple[str, Shape]]
"""(unit id, shape seen) pairs that produce a value."""

_PASS_THROUGH_SKIP = frozenset({"constant", "after-all", "partition-id", "replica-id"})
# Calls drawn inline nest at most this deep: the walk follows them by recursion (the
# parser rejects call cycles, so only absurdly deep but valid nesting reaches it).
MAX_CALL_DEPTH = 64
_UNSET = "\0unset"  # no node id: ids start with a prefix (`k/`, `b/`, ...)
TRUNCATED = "truncated"
"""Graph attribute set when calls nested deeper than the walk draws were left out."""


class Side:
    """What one view draws. Subclasses say which instructions are units and what they carry.

    Attributes:
        prefix: Prefix of every node id of this view (`""` after, `b/` before).
        inline_calls: Walk into `call`s as if inlined, instead of drawing them as units.
        once: Walk a computation called from several places only the first time.
    """

    prefix = ""
    inline_calls = False
    once = True

    def start(self, index: dict[str, list[str]]) -> None:
        """Names --around knows before the walk starts."""

    def unit_id(self, comp: Computation, inst: Instruction, path: str) -> str | None:
        """The id of the unit `inst` is, or None for a free instruction."""
        raise NotImplementedError

    def describe(self, comp: Computation, inst: Instruction, scope: str) -> dict[str, Any]:
        """The attributes of the unit `inst` is (ROLE first among them)."""
        raise NotImplementedError

    def index_unit(
        self, comp: Computation, inst: Instruction, node: str, index: dict[str, list[str]]
    ) -> None:
        """Extra names that find this unit with --around (besides its own name)."""

    def finish(self, index: dict[str, list[str]]) -> None:
        """Last touches to the name index once the walk is done."""


class AfterSide(Side):
    """The module after optimization: one unit per kernel and per control instruction."""

    def __init__(
        self, after: HloModule, analysis: ModuleAnalysis, provenance: Provenance | None
    ) -> None:
        self.after = after
        self.analysis = analysis
        self.provenance = provenance
        self.kernels = {(k.computation, k.name): k for k in analysis.kernels}

    def unit_id(self, comp: Computation, inst: Instruction, path: str) -> str | None:
        if (comp.name, inst.name) in self.kernels:
            return f"k/{inst.name}"
        if K.classify(inst) == K.CONTROL:
            return f"c/{inst.name}"
        return None

    def describe(self, comp: Computation, inst: Instruction, scope: str) -> dict[str, Any]:
        op_name = inst.metadata.op_name if inst.metadata else None
        kernel = self.kernels.get((comp.name, inst.name))
        if kernel is None:
            return {
                ROLE: CONTROL,
                ITEM: inst,
                SCOPE: scope_of(op_name),
                OP_NAMES: (op_name,) if op_name else (),
                SIGNATURE: ("control", inst.opcode),
            }
        ops = kernel_ops(self.after, kernel, self.provenance)
        # The kernel's own op (its root's) first: the one that names it best.
        ops.sort(key=lambda o: o[1] != op_name)
        return {
            ROLE: KERNEL,
            ITEM: kernel,
            OPS: tuple(label for label, _ in ops),
            OP_NAMES: tuple(name for _, name in ops),
            SCOPE: scope_of(op_name) or _first_scope(n for _, n in ops),
            SIGNATURE: (kernel.kind, fmt_shape(kernel.shape)),
        }

    def index_unit(
        self, comp: Computation, inst: Instruction, node: str, index: dict[str, list[str]]
    ) -> None:
        # The instructions fused into a kernel find it.
        kernel = self.kernels.get((comp.name, inst.name))
        for fused in kernel.ops if kernel else ():
            index.setdefault(fused.name, []).append(node)

    def finish(self, index: dict[str, list[str]]) -> None:
        # Fused computations' instructions resolve to the fusion that calls them.
        for k in self.analysis.kernels:
            if k.fused_computation:
                index.setdefault(k.fused_computation, []).append(f"k/{k.name}")


class BeforeSide(Side):
    """The module before optimization: one unit per op that is not free, calls inlined."""

    prefix = "b/"
    inline_calls = True
    once = False

    def __init__(
        self,
        before: HloModule,
        kernel_of: Mapping[str, str],
        kernels_of: Mapping[str, Sequence[str]],
    ) -> None:
        self.before = before
        self.kernel_of = kernel_of
        self.kernels_of = kernels_of
        # (scope, op name, op label) by what `op_name` reads: a big module's ops repeat
        # a few thousand names (issue 27)
        self.named: dict[tuple[str | None, str | None, str], Named] = {}
        self.signatures: dict[tuple[str, str], tuple[str, str]] = {}
        self.scopes: dict[str, str] = {}

    def colour(
        self,
        kernel_of: Mapping[str, str],
        kernels_of: Mapping[str, Sequence[str]],
        graph: nx.DiGraph,
    ) -> None:
        """Give the kernels each op went to, once known (the walk does not read them
        without a name index: what an op diagram walks ahead, `views.walk_ops_ahead`),
        and the `KERNELS` of the units described already (`graph`'s nodes: those a
        collapse keeps alone)."""
        self.kernel_of = kernel_of
        self.kernels_of = kernels_of
        for _, d in graph.nodes(data=True):
            if KERNELS in d:
                d[KERNELS] = self.kernels(d[ITEM])

    def start(self, index: dict[str, list[str]]) -> None:
        # Every kernel name is known, even one whose ops are all filtered away.
        for kernel_name in set(self.kernel_of.values()):
            index.setdefault(kernel_name, [])

    def unit_id(self, comp: Computation, inst: Instruction, path: str) -> str | None:
        cls = K.classify(inst)
        if cls == K.CONTROL:
            return f"b/c/{path}{inst.name}"
        if cls != K.FREE:
            return f"b/{path}{inst.name}"
        return None

    def describe(self, comp: Computation, inst: Instruction, scope: str) -> dict[str, Any]:
        named = self.name_of(inst, scope)
        return self.attrs(inst, named, named[0], self.signature(inst))

    def name_of(self, inst: Instruction, scope: str) -> Named:
        """The op's scope, name and type (`source_op` less the user's stack frame)."""
        md = inst.metadata
        key = (md.op_name, md.op_type, scope) if md is not None else (None, None, scope)
        named = self.named.get(key)
        if named is None:
            name = op_name(inst, scope)
            if name and md:
                found = name_scope(name)  # remembered here, by its key
                found = self.scopes.setdefault(found, found)  # one string per scope
                named = (found, (name,), md.op_type)
            else:
                named = ("", (), None)
            self.named[key] = named
        return named

    def walked(self) -> None:
        """The walk is done: `name_of` forgets its names (the units hold theirs; a big
        module's ops have hundreds of thousands)."""
        self.named = {}

    def signature(self, inst: Instruction) -> tuple[str, str]:
        """(opcode, shape): what makes two ops alike, one tuple per kind of op."""
        key = (inst.opcode, inst.shape.text)
        found = self.signatures.get(key)
        if found is None:
            found = self.signatures[key] = (inst.opcode, fmt_shape(inst.shape))
        return found

    def attrs(
        self,
        inst: Instruction,
        named: Named,
        scope: str,
        signature: tuple[str, str],
    ) -> dict[str, Any]:
        """The attributes of op `inst`, named `named`, in `scope` (inherited, maybe)."""
        return {
            ROLE: CONTROL if K.classify(inst) == K.CONTROL else OP,
            ITEM: inst,
            SCOPE: scope,
            OP_NAMES: named[1],
            OPS: tuple(SourceOp(name, named[2]).label for name in named[1]),
            SIGNATURE: signature,
            KERNELS: self.kernels(inst),
        }

    def kernels(self, inst: Instruction) -> tuple[str, ...]:
        """Every kernel op `inst` went to (its `KERNELS`)."""
        kernels = tuple(self.kernels_of.get(inst.name, ()))
        if not kernels and inst.name in self.kernel_of:
            kernels = (self.kernel_of[inst.name],)
        return kernels

    def index_unit(
        self, comp: Computation, inst: Instruction, node: str, index: dict[str, list[str]]
    ) -> None:
        # A kernel's name finds the ops that went to it.
        kernel = self.kernel_of.get(inst.name)
        if kernel is not None:
            index.setdefault(kernel, []).append(node)


def unit_graph(
    module: HloModule, side: Side, *, names: bool = True
) -> tuple[nx.DiGraph, dict[str, list[str]]]:
    """The unit graph of one execution of `module`, as `side` sees it.

    Args:
        module: The module to walk.
        side: `AfterSide` or `BeforeSide`.
        names: Build the name index (for --around); without it the index is empty,
            which saves a list per instruction of a big module.

    Returns:
        The graph (nodes in program order, attribute `ORDER`) and, for --around, every
        name -> the unit ids that show it: units by their instruction's name, free
        instructions by the units that produce their value, and what `side` adds.
    """
    sink = _GraphSink(module.name, side)
    index = walk(module, side, sink, names=names)
    inherit_scopes(sink.g)
    return sink.g, index


def walk(module: HloModule, side: Side, sink: Sink, *, names: bool = True) -> dict[str, list[str]]:
    """Walk what `module` executes as `side` sees it, putting units and edges in `sink`.

    Returns:
        The name index for --around (see `unit_graph`); empty without `names`.
    """
    w = _Walk(module, side, sink, names)
    w.run()
    return w.index


@dataclass(frozen=True)
class _At:
    """Where the walk is.

    Attributes:
        path: Id prefix of the units here (the inlined calls and loops around them).
        scope: Name scope the instructions here get from inlined calls.
        caller: The control unit that runs this computation, if any.
        depth: Nesting depth.
    """

    path: str = ""
    scope: str = ""
    caller: str | None = None
    depth: int = 0

    def inside(self, inst: Instruction, scope: str, caller: str | None) -> _At:
        """Where the callee of `inst` is walked."""
        return _At(f"{self.path}{inst.name}/", scope, caller, self.depth + 1)


class _Walk:
    """The state of one `unit_graph` walk."""

    def __init__(self, module: HloModule, side: Side, sink: Sink, names: bool = True) -> None:
        self.module = module
        self.side = side
        self.sink = sink
        self.names = names
        self.comps = module.computation_map
        self.entry = module.entry
        self.index: dict[str, list[str]] = {}
        self.visited: set[str] = set()
        self.params = {f"{side.prefix}p/{p.name}": p for p in self.entry.parameters}
        if names:
            side.start(self.index)

    def run(self) -> None:
        results = self.visit(self.entry, _At(), None)
        out = f"{self.side.prefix}out"
        self.sink.add(out, {ROLE: OUTPUT, ITEM: self.entry.root, PINNED: True, SCOPE: ""})
        for i, (src, shape) in enumerate(results):
            self.sink.flow(src, out, i, shape)
        if self.names:
            self.side.finish(self.index)

    def add_parameter(self, node: str) -> None:
        param = self.params[node]
        self.sink.add(node, {ROLE: PARAMETER, ITEM: param, PINNED: True, SCOPE: ""})

    def visit(self, comp: Computation, at: _At, args: list[Sources] | None) -> Sources:
        """Walk `comp`; return the sources of what it returns.

        Args:
            comp: The computation.
            at: Where it is walked.
            args: The sources of its parameters, for an inlined call.
        """
        if at.depth > MAX_CALL_DEPTH:
            # said on the diagram (views.depth_note), never silently left out
            self.sink.graph[TRUNCATED] = True
            return []
        if self.side.once and comp.name in self.visited:
            return []
        self.visited.add(comp.name)

        ids: dict[str, str | None] = {}  # node_of by instruction name: asked thrice each

        def node_of(inst: Instruction) -> str | None:
            name = inst.name
            node = ids.get(name, _UNSET)
            if node is not _UNSET:
                return node
            node = self.side.unit_id(comp, inst, at.path)
            if node is None and comp is self.entry and inst.opcode == "parameter":
                node = f"{self.side.prefix}p/{name}"
            ids[name] = node
            return node

        def parameter(inst: Instruction) -> Sources:
            if args is not None:
                number = inst.parameter_number or 0
                return args[number] if number < len(args) else []
            return [(at.caller, inst.shape)] if at.caller else []

        flow = Flow(comp, node_of, parameter)
        for inst in comp.instructions:
            if self.side.inline_calls and inst.opcode == "call":
                self.inline(inst, flow, at)
                continue
            node = node_of(inst)
            if node is not None:
                self.unit(comp, inst, node, flow, at)
        results = flow.sources(comp.root.name)
        for inst in comp.instructions if self.names else ():
            if inst.name not in self.index:
                found = [n for n, _ in flow.sources(inst.name)]
                if found:
                    self.index[inst.name] = found
        return results

    def inline(self, call: Instruction, flow: Flow, at: _At) -> None:
        """Walk a `call`'s callee in place: its result is the call's value."""
        callee = self.comps.get(call.calls()[0]) if call.called else None
        if callee is None:
            return
        args = [flow.sources(o) for o in call.operands]
        inner = at.inside(call, call_scope(at.scope, call), at.caller)
        flow.memo[call.name] = self.visit(callee, inner, args)

    def unit(self, comp: Computation, inst: Instruction, node: str, flow: Flow, at: _At) -> None:
        """Add one unit, the edges into it, and for a control unit what it runs."""
        sink = self.sink
        if node in self.params:
            self.add_parameter(node)
            role = PARAMETER
        else:
            role = sink.unit(node, comp, inst, at.scope, body(at.caller))
            if self.names:
                self.side.index_unit(comp, inst, node, self.index)
        if self.names:
            self.index.setdefault(inst.name, []).insert(0, node)
        params, sources, add = self.params, flow.sources, sink.flow  # per operand of 500k
        for i, operand in enumerate(inst.operands):
            for src, shape in sources(operand):
                if src in params and src not in sink:
                    self.add_parameter(src)
                add(src, node, i, shape)
        if role != CONTROL:
            return
        for callee in inst.calls():
            if callee not in self.comps:
                continue
            results = self.visit(self.comps[callee], at.inside(inst, at.scope, node), None)
            # What the callee returns flows back into its caller (a loop's back edge).
            for i, (src, shape) in enumerate(results):
                if src != node:
                    sink.flow(src, node, i, shape)
                    sink.back(src, node)


class Sink:
    """Where a walk puts its units and edges.

    Attributes:
        graph: The graph's attributes.
    """

    graph: dict[str, Any]

    def __contains__(self, node: str) -> bool:
        raise NotImplementedError

    def add(self, node: str, attrs: Mapping[str, Any]) -> None:
        """Add a pinned node (a parameter, the output) unless it is there."""
        raise NotImplementedError

    def unit(
        self, node: str, comp: Computation, inst: Instruction, scope: str, cluster: str | None
    ) -> str:
        """Add the unit `inst` is (unless `node` is there); return its role."""
        raise NotImplementedError

    def flow(self, src: str, dst: str, index: int, shape: Shape) -> None:
        """Record that `src` feeds operand `index` of `dst` with a value of `shape`."""
        raise NotImplementedError

    def back(self, src: str, dst: str) -> None:
        """Mark the edge `src` -> `dst` as a loop's back edge."""
        raise NotImplementedError


class _GraphSink(Sink):
    """A networkx unit graph: a node with an attribute dict per unit."""

    def __init__(self, name: str, side: Side) -> None:
        self.g = nx.DiGraph(name=name)
        self.graph = self.g.graph
        self.side = side

    def __contains__(self, node: str) -> bool:
        return node in self.g

    def add(self, node: str, attrs: Mapping[str, Any]) -> None:
        if node not in self.g:
            self.g.add_node(node, **{ORDER: self.g.number_of_nodes()}, **attrs)

    def unit(
        self, node: str, comp: Computation, inst: Instruction, scope: str, cluster: str | None
    ) -> str:
        return add_described(self, self.side, node, comp, inst, scope, cluster)

    def flow(self, src: str, dst: str, index: int, shape: Shape) -> None:
        add_flow(self.g, src, dst, index, shape)

    def back(self, src: str, dst: str) -> None:
        self.g.edges[src, dst][BACK] = True


def add_described(
    sink: Sink,
    side: Side,
    node: str,
    comp: Computation,
    inst: Instruction,
    scope: str,
    cluster: str | None,
) -> str:
    """`Sink.unit` for a sink that keeps each unit's attributes as `side` describes them
    (`Sink.add`, `CLUSTER` added); the unit's role."""
    attrs = side.describe(comp, inst, scope)
    attrs[CLUSTER] = cluster
    sink.add(node, attrs)
    role: str = attrs[ROLE]
    return role


class Flow:
    """Where the values of one computation come from, walked through free instructions."""

    def __init__(
        self,
        comp: Computation,
        node_of: Callable[[Instruction], str | None],
        parameter: Callable[[Instruction], Sources],
    ) -> None:
        self.comp = comp
        self.node_of = node_of
        self.parameter = parameter
        self.memo: dict[str, Sources] = {}

    def sources(self, name: str) -> Sources:
        """(node id, shape seen) pairs that produce the value `name`."""
        memo = self.memo.get(name)
        if memo is not None:
            return memo
        inst = self.comp.by_name.get(name)
        if inst is not None:
            node = self.node_of(inst)
            if node is not None:  # a unit (most operands): its own value, as _resolve says;
                # not remembered: a list per instruction of a big module (issue 27)
                return [(node, inst.shape)]
        # Resolve what it flows from first, deepest first: a chain of free instructions
        # as long as the input likes then never recurses more than one level.
        for dep in self._free_chain(name):
            self._compute(dep)
        return self.memo.get(name, [])

    def _compute(self, name: str) -> None:
        self.memo[name] = []  # guards against a cycle in a broken module
        inst = self.comp.by_name.get(name)
        self.memo[name] = self._resolve(inst) if inst is not None else []

    def _free_chain(self, name: str) -> list[str]:
        """`name` and the unresolved free instructions it flows from, in post-order."""
        order: list[str] = []
        seen = {name}
        stack: list[tuple[str, bool]] = [(name, False)]
        while stack:
            current, expanded = stack.pop()
            if expanded:
                order.append(current)
                continue
            stack.append((current, True))
            inst = self.comp.by_name.get(current)
            if inst is None or self.node_of(inst) is not None or inst.opcode == "parameter":
                continue
            for operand in inst.operands:
                if operand not in seen and operand not in self.memo:
                    seen.add(operand)
                    stack.append((operand, False))
        return order

    def _resolve(self, inst: Instruction) -> Sources:
        node = self.node_of(inst)
        if node is not None:
            return [(node, inst.shape)]
        op = inst.opcode
        if op == "parameter":
            return self.parameter(inst)
        if op in _PASS_THROUGH_SKIP or not inst.operands:
            return []
        if op == "get-tuple-element":
            src = self.comp.by_name.get(inst.operands[0])
            index = int(inst.attributes.get("index", "0") or 0)
            if src is not None and src.opcode == "tuple" and index < len(src.operands):
                return self.sources(src.operands[index])
            return [(n, inst.shape) for n, _ in self.sources(inst.operands[0])]
        if op == "tuple" or inst.shape.is_tuple:
            return [s for o in inst.operands for s in self.sources(o)]
        if op in ("bitcast", "copy-done", "domain"):
            return [(n, inst.shape) for n, _ in self.sources(inst.operands[0])]
        if op == "add-dependency":
            return self.sources(inst.operands[0])
        return [s for o in inst.operands for s in self.sources(o)]


def add_flow(g: nx.DiGraph, src: str, dst: str, index: int, shape: Shape) -> None:
    """Record that `src` feeds operand `index` of `dst` with a value of `shape`."""
    if src == dst:
        return
    data = g.get_edge_data(src, dst)
    if data is None:
        g.add_edge(src, dst, **{OPERANDS: [(index, shape)]})
    else:
        data[OPERANDS].append((index, shape))


def body(control: str | None) -> str | None:
    """The id of the box around what a control instruction runs."""
    return f"{control}/body" if control else None


def kernel_ops(
    after: HloModule, kernel: Kernel, provenance: Provenance | None
) -> list[tuple[str, str]]:
    """(label, op name) of each source op of a kernel, in order; ops inferred for a
    kernel that holds none (`Provenance.inferred`) are labelled `(inferred)`."""
    if provenance is not None and kernel.name in provenance.kernel_ops:
        found = [(op.label, op.name) for op in provenance.kernel_ops[kernel.name]]
        guess = provenance.inferred.get(kernel.name)
        if not found and guess is not None:
            return [(f"{name} (inferred)", name) for name in guess.ops]
        return found
    seen: dict[str, str] = {}
    for inst in kernel.ops:
        op = source_op(after, inst)
        if op is not None and op.name not in seen:
            seen[op.name] = op.label
    return [(label, name) for name, label in seen.items()]


def call_scope(scope: str, call: Instruction) -> str:
    """The op_name prefix XLA's call inliner gives a callee's instructions."""
    name = call.metadata.op_name if call.metadata and call.metadata.op_name else ""
    if not name:
        return scope
    return name if not scope or name.startswith(scope) else f"{scope}/{name}"


def _first_scope(names: Iterable[str]) -> str:
    for name in names:
        scope = scope_of(name)
        if scope:
            return scope
    return ""


def inherit_scopes(g: nx.DiGraph) -> None:
    """Units with no scope (no metadata) take a producer's, else a consumer's."""
    nodes = dict(g.nodes(data=True))  # a dict: NodeView's lookups cost (issue 27)
    ordered = sorted(nodes, key=lambda x: nodes[x][ORDER])
    for _ in range(2):
        for n in ordered:
            d = nodes[n]
            if d.get(PINNED) or d.get(SCOPE):
                continue
            for other in (*g.predecessors(n), *g.successors(n)):
                scope = nodes[other].get(SCOPE)
                if scope and not nodes[other].get(PINNED):
                    d[SCOPE] = scope
                    break
