"""Provenance on real dumps: evidence only from instructions doing an op's work, CSE
merges, inferred kernel ops, user source lines, and `before.ops` by the launch walk.

The oracle tests recompute every answer from XLA's own parse of the same text
(`jaxlib._hlo` -> `HloModuleProto`), independently of hloscope's parser and provenance.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from hloscope.analysis import evidence as E
from hloscope.analysis import provenance as P
from hloscope.analysis.fusion import analyze_module
from hloscope.hlo.parser import parse_file, parse_module
from tests.conftest import DATA, dump_file

# (folder, file stem): real dumps with both stages.
SAMPLES = [
    ("keras_cnn_fit", ""),
    ("jax_cases", ""),
    ("tf_gelu", ""),
    ("tf_dense_relu", ""),
    ("tf_resnet50", ""),
    ("jax_mlp", "jit_mlp"),
]


def _paths(folder: str, name: str = "") -> tuple[Path, Path]:
    stem = f"*{name}" if name else ""
    return (
        dump_file(folder, f"{stem}*before_optimizations.txt"),
        dump_file(folder, f"{stem}*cpu_after_optimizations.txt"),
    )


def _trace(folder: str, name: str = "") -> P.Provenance:
    before, after = (parse_file(p) for p in _paths(folder, name))
    return P.trace(after, analyze_module(after), before)


# --- the oracle: XLA's own parse, walked without hloscope's code ---------------------

_NO_WORK = {"parameter", "constant", "tuple", "get-tuple-element", "bitcast"}
# Written out here, not imported: the oracle must not share hloscope's tables.
_MOVES = {"reshape", "transpose", "broadcast", "bitcast", "copy", "convert"}
_MOVES |= {"slice", "bitcast-convert", "get-tuple-element", "tuple"}
_INLINED = {"fusion", "call", "while", "conditional", "async-start"}
_PLUMBING = {"XLA_Args", "XLA_Retvals"}


def _proto(path: Path) -> Any:
    hlo = pytest.importorskip("jaxlib._hlo")
    hlo_pb2 = pytest.importorskip("tensorflow.compiler.xla.service.hlo_pb2")
    module = hlo.hlo_module_from_text(path.read_text())
    proto = hlo_pb2.HloModuleProto()
    proto.ParseFromString(module.as_serialized_hlo_module_proto())
    return proto


def _oracle_op_kernels(path: Path, kernel_names: list[str]) -> dict[str, set[str]]:
    """Op name -> kernels holding a non-free instruction with that op's metadata.

    A kernel's instructions are those of the computations its instruction calls as a
    fusion (nested fusions and calls expanded, reducers not), as XLA's emitters see
    them. Free: parameters, constants, tuples, get-tuple-elements, bitcasts, and data
    movements of constants (a fusion parameter fed a constant counts as one).
    """
    proto = _proto(path)
    comps = {c.id: c for c in proto.computations}
    free: set[int] = set()
    changed = True
    while changed:
        changed = False
        for c in proto.computations:
            for i in c.instructions:
                if i.id in free:
                    continue
                ops = list(i.operand_ids)
                if i.opcode == "constant" or (
                    i.opcode in _MOVES and ops and all(o in free for o in ops)
                ):
                    free.add(i.id)
                    changed = True
                if i.opcode == "fusion":
                    for cid in i.called_computation_ids:
                        for p in comps[cid].instructions:
                            if (
                                p.opcode == "parameter"
                                and p.parameter_number < len(ops)
                                and ops[p.parameter_number] in free
                                and p.id not in free
                            ):
                                free.add(p.id)
                                changed = True
    top = {
        i.name: i
        for c in proto.computations
        for i in c.instructions
        if i.name in kernel_names and not _is_fused(c.id, proto)
    }
    out: dict[str, set[str]] = defaultdict(set)
    for name in kernel_names:
        inst = top[name]
        insts = [inst] if inst.opcode not in _INLINED else _expand(inst, comps)
        for i in insts:
            op = i.metadata.op_name
            if i.opcode in _NO_WORK or i.id in free or not op or op in _PLUMBING:
                continue
            out[_torch_named(op, i.metadata)].add(name)
    return out


def _torch_named(op: str, md: Any) -> str:
    """torch_xla writes `aten::addmm` as `aten__addmm` (op_type and op_name); hloscope
    names the op as PyTorch does, with the user's line: in a text dump (no stack frames)
    the one frame there is, when it is outside the installed packages."""
    if not re.fullmatch(r"(aten|prim|xla)__\w+", md.op_type or "") or not op.endswith(md.op_type):
        return op
    name = "/".join(re.sub(r"^(aten|prim|xla)__", r"\1::", part) for part in op.split("/"))
    if md.source_file and "/site-packages/" not in md.source_file:
        name += f"@{Path(md.source_file).name}:{md.source_line}"
    return name


def _is_fused(cid: int, proto: Any) -> bool:
    return any(
        cid in i.called_computation_ids and i.opcode == "fusion"
        for c in proto.computations
        for i in c.instructions
    )


def _expand(inst: Any, comps: dict[int, Any]) -> list[Any]:
    out, stack, seen = [], list(inst.called_computation_ids), set()
    while stack:
        cid = stack.pop()
        if cid in seen:
            continue
        seen.add(cid)
        for i in comps[cid].instructions:
            if i.opcode in _INLINED and i.called_computation_ids:
                stack.extend(i.called_computation_ids)
            else:
                out.append(i)
    return out


@pytest.mark.parametrize(("folder", "name"), SAMPLES)
def test_ops_name_exactly_the_kernels_whose_working_instructions_carry_the_op(
    folder: str, name: str
) -> None:
    before_path, after_path = _paths(folder, name)
    after = parse_file(after_path)
    analysis = analyze_module(after)
    prov = P.trace(after, analysis, parse_file(before_path))
    oracle = _oracle_op_kernels(after_path, [k.name for k in analysis.kernels])
    got = {p.op.name: set(p.kernels) for p in prov.placements if p.kernels}
    assert got == dict(oracle)
    # and every kernel lists exactly the ops the oracle puts in it
    per_kernel: dict[str, set[str]] = defaultdict(set)
    for op, kernels in oracle.items():
        for k in kernels:
            per_kernel[k].add(op)
    for k in analysis.kernels:
        assert {o.name for o in prov.kernel_ops[k.name]} == per_kernel.get(k.name, set())


def test_oracle_holds_on_every_after_module_of_the_test_data() -> None:
    """The same oracle over every after-optimization module in tests/data (JAX helper
    modules with while loops and CPU small calls, scan, TF, Keras): 73 modules."""
    files = sorted(DATA.glob("**/*after_optimizations.txt"))
    assert len(files) >= 70
    for path in files:
        after = parse_file(path)
        analysis = analyze_module(after)
        prov = P.trace(after, analysis)
        oracle = _oracle_op_kernels(path, [k.name for k in analysis.kernels])
        got = {p.op.name: set(p.kernels) for p in prov.placements if p.kernels}
        assert got == dict(oracle), path.name


def test_a_shared_constant_is_no_evidence_keras_relu() -> None:
    """The Relu's `constant(0)` rides into many fusions; only kernels holding an
    instruction of the Relu other than a constant, a broadcast or a parameter count."""
    _, after_path = _paths("keras_cnn_fit")
    after = parse_file(after_path)
    analysis = analyze_module(after)
    prov = _trace("keras_cnn_fit")
    relu = next(p for p in prov.placements if p.op.name == "sequential_1/conv2d_1/Relu")
    holding = {  # kernels with any instruction (constants included) naming the Relu
        k.name
        for k in analysis.kernels
        for i in k.ops
        if i.metadata and i.metadata.op_name == "sequential_1/conv2d_1/Relu"
    }
    assert set(relu.kernels) < holding  # strictly fewer: constant-only kernels dropped
    for k in analysis.kernels:
        if k.name in relu.kernels:
            assert any(
                i.opcode not in ("constant", "broadcast", "parameter")
                and i.metadata
                and i.metadata.op_name == relu.op.name
                for i in k.ops
            )


def test_cse_merged_op_says_what_it_became() -> None:
    prov = _trace("jax_cases")
    by = {p.op.name: p for p in prov.placements}
    merged = by["jit(step)/norm_b/reduce_sum"]
    assert merged.status == P.MERGED
    assert merged.merged_with == "jit(step)/norm_a/reduce_sum"
    assert "common-subexpression elimination" in merged.evidence
    # the op that was kept is not itself called merged with the later one
    assert by["jit(step)/norm_a/reduce_sum"].status != P.MERGED


def test_kernels_without_an_op_get_inferred_ops_marked_as_such() -> None:
    prov = _trace("keras_cnn_fit")
    _, after_path = _paths("keras_cnn_fit")
    analysis = analyze_module(parse_file(after_path))
    bare = [k.name for k in analysis.kernels if not prov.kernel_ops[k.name]]
    assert "wrapped_reduce-window.1" in bare  # TF's MaxPoolGrad argmax: no metadata
    assert set(prov.inferred) <= set(bare)
    assert prov.inferred["wrapped_reduce-window.1"].how.startswith("its ")
    assert all(prov.inferred[k].ops for k in prov.inferred)


def test_reduce_window_kernel_falls_back_to_its_reducer() -> None:
    """The real jax_cases module with the reduce-window's own metadata removed, as XLA's
    CPU backend leaves `wrapped_reduce-window` kernels: the reducer still names the op."""
    _, after_path = _paths("jax_cases")
    lines = []
    for line in after_path.read_text().splitlines():
        if "reduce-window(" in line or "%wrapped_reduce-window =" in line:
            line = line.split(", metadata={")[0]
        lines.append(line)
    after = parse_module("\n".join(lines))
    prov = P.trace(after, analyze_module(after))
    assert prov.kernel_ops["wrapped_reduce-window"] == ()
    inferred = prov.inferred["wrapped_reduce-window"]
    assert inferred.how == "its reducer"
    assert inferred.ops == ("jit(step)/reduce_window_max",)
    p = next(p for p in prov.placements if p.op.name == "jit(step)/reduce_window_max")
    assert p.kernels == () and p.inferred == (("wrapped_reduce-window", "its reducer"),)
    assert p.evidence.startswith("inferred")


def test_source_lines_walk_stack_frames_to_the_user_frame() -> None:
    prov = _trace("jax_cases")
    located = [p for p in prov.placements if p.op.location is not None]
    assert located and all(p.op.user_frame for p in located)
    assert {p.op.location.file for p in located} == {"/tmp/pt/scripts/jax_cases.py"}
    by = {p.op.name: p for p in prov.placements}
    # `_var` is called from `step` at line 20; its reduce_sum is written at line 8
    assert by["jit(step)/jit(_var)/jit(_var)/reduce_sum"].op.location.line == 8


def test_tensorflow_dump_has_no_user_frame_and_says_so() -> None:
    prov = _trace("tf_gelu")
    assert prov.placements and not any(p.op.user_frame for p in prov.placements if p.op.location)
    assert all(
        p.op.location.file.endswith("tensorflow/python/framework/ops.py")
        for p in prov.placements
        if p.op.location
    )
    assert prov.kernels_by_line == {}
    from hloscope.render.text import no_user_frames

    note = no_user_frames(prov.placements)
    assert note is not None and "no source line in your code" in note.plain


def _oracle_launch_walk(path: Path) -> int:
    """Compute instructions per execution: every call site of a computation expanded,
    from XLA's own parse; free instructions (as hloscope's kernel table) not counted."""
    proto = _proto(path)
    comps = {c.id: c for c in proto.computations}
    free = {"parameter", "constant", "tuple", "get-tuple-element", "bitcast"}
    total = 0
    stack = [proto.entry_computation_id]
    while stack:
        for i in comps[stack.pop()].instructions:
            if i.opcode == "call":
                stack.extend(i.called_computation_ids)
            elif i.opcode not in free:
                total += 1
    return total


def test_before_ops_counts_every_call_site() -> None:
    before_path, _ = _paths("jax_cases")
    text = before_path.read_text()
    assert text.count("to_apply=%_var.5") == 3  # one computation, called three times
    analysis = analyze_module(parse_file(before_path))
    assert analysis.ops == _oracle_launch_walk(before_path)
    once = Counter(
        i.opcode
        for c in parse_file(before_path).computations
        for i in c.instructions
        if i.opcode not in ("parameter", "constant", "tuple", "get-tuple-element", "call")
    )
    assert analysis.ops > sum(once.values()) - 1  # more than each computation once


def _oracle_user_frame(proto: Any, frame_id: int) -> tuple[str, int] | None:
    """The first frame outside the frameworks on the stack of a frame id, walking XLA's
    own `stack_frame_index` (ids are 1-based) from the innermost frame outwards."""
    index = proto.stack_frame_index
    while frame_id:
        frame = index.stack_frames[frame_id - 1]
        where = index.file_locations[frame.file_location_id - 1]
        file = index.file_names[where.file_name_id - 1]
        if not any(part in file for part in E.FRAMEWORK_PATHS):
            return file, where.line
        frame_id = frame.parent_frame_id
    return None


@pytest.mark.parametrize(
    "path",
    [
        DATA / "jax_transformer_block" / "module_0032.jit_block.before_optimizations.txt",
        DATA / "jax_cases" / "module_0006.jit_step.cpu_after_optimizations.txt",
    ],
    ids=lambda p: p.parent.name,
)
def test_user_location_per_frame_equals_xla_stack_walk(path: Path) -> None:
    # user_location is kept per stack frame of a module; every instruction's answer
    # must still be its own stack's, from XLA's parse of the same text
    proto = _proto(path)
    expected = {
        i.name: _oracle_user_frame(proto, i.metadata.stack_frame_id)
        for c in proto.computations
        for i in c.instructions
        if i.metadata.stack_frame_id
    }
    assert any(v is not None for v in expected.values())
    for _ in range(2):  # a fresh module: nothing kept from the last one answers for it
        module = parse_file(path)
        for _round in range(2):  # the first call computes, the second reads it back
            for _, inst in module.instructions():
                if inst.name not in expected:
                    continue
                loc, user = E.user_location(module, inst)
                found = (loc.file, loc.line) if user and loc is not None else None
                assert found == expected[inst.name], inst.name


def test_frame_memo_goes_with_its_module() -> None:
    import gc

    module = parse_file(DATA / "jax_cases" / "module_0006.jit_step.before_optimizations.txt")
    inst = next(i for _, i in module.instructions() if i.metadata and i.metadata.stack_frame_id)
    E.user_location(module, inst)
    key = id(module)
    assert key in E._frame_memos._kept
    del module, inst
    gc.collect()
    assert key not in E._frame_memos._kept


# --- constant_like: one pass unless a fusion parameter was marked ----------------------


def _constant_like_fixpoint(module: Any) -> set[int]:
    """`constant_like` as its docstring defines it, by brute force: every computation
    walked again until a whole walk marks nothing new."""
    out: set[int] = set()
    while True:
        size = len(out)
        for comp in module.computations:
            index = comp.by_name
            for inst in comp.instructions:
                if inst.opcode == "constant" or (
                    inst.opcode in E.DATA_MOVEMENT
                    and inst.operands
                    and all(id(index[o]) in out for o in inst.operands if o in index)
                    and all(o in index for o in inst.operands)
                ):
                    out.add(id(inst))
                elif inst.opcode == "fusion":
                    for callee in map(module.computation_map.get, inst.calls()):
                        for param in callee.parameters if callee else ():
                            n = param.parameter_number
                            if n is not None and n < len(inst.operands):
                                operand = index.get(inst.operands[n])
                                if operand is not None and id(operand) in out:
                                    out.add(id(param))
        if len(out) == size:
            return out


# XLA prints callees before their callers: the constant reaches `a`, then `x` and `bx`,
# only on later walks, through a chain of two fusions.
_CHAINED = """HloModule chained

%inner_computation (x: f32[]) -> f32[4] {
  %x = f32[] parameter(0)
  ROOT %bx = f32[4]{0} broadcast(%x), dimensions={}
}

%outer_computation (a: f32[], b: f32[4]) -> f32[4] {
  %a = f32[] parameter(0)
  %b = f32[4]{0} parameter(1)
  %inner = f32[4]{0} fusion(%a), kind=kLoop, calls=%inner_computation
  ROOT %m = f32[4]{0} multiply(%inner, %b)
}

ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %c = f32[] constant(0)
  %outer = f32[4]{0} fusion(%c, %p), kind=kLoop, calls=%outer_computation
  ROOT %add = f32[4]{0} add(%outer, %p)
}
"""


def test_constant_like_walks_again_while_fusion_parameters_are_marked() -> None:
    module = parse_module(_CHAINED)
    found = E.constant_like(module)
    names = {i.name for c in module.computations for i in c.instructions if id(i) in found}
    assert names == {"c", "a", "x", "bx"}  # `b`, `inner` and `m` carry the parameter p
    assert found == _constant_like_fixpoint(module)


def test_constants_and_the_kernels_neighbours_keep_no_index_of_each_fused_computation() -> None:
    # `by_name` is a dict the module keeps per computation: a big module has 44k fused
    # ones, whose index neither finding the constants nor the neighbours needs (issue 27)
    after = parse_file(_paths("tf_resnet50")[1])
    kernels = analyze_module(after).kernels
    E.constant_like(after)
    E.infer_kernel_ops(after, kernels, {}, lambda inst: None)  # (its neighbours found first)
    assert "by_name" in vars(after.entry)  # where the kernels are: indexed
    fused = {k.fused_computation for k in kernels if k.fused_computation}
    assert fused and not [
        c.name for c in after.computations if c.name in fused and "by_name" in vars(c)
    ]


@pytest.mark.parametrize("folder", sorted({f for f, _ in SAMPLES}))
def test_constant_like_equals_the_brute_force_walk(folder: str) -> None:
    for path in sorted((DATA / folder).rglob("*after_optimizations.txt")):
        module = parse_file(path)
        assert E.constant_like(module) == _constant_like_fixpoint(module), path.name
