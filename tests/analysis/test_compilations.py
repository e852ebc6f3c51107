"""Compilations: grouping, shapes, varying dimensions and variant selection, checked
against the frameworks' own counts and XLA's own parse of the same dumps."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hloscope.analysis import compilations as C
from hloscope.analysis.report import analyze_run
from hloscope.errors import UsageError
from hloscope.runs import load_run
from tests.analysis.test_fusion import _xla_kernel_count
from tests.conftest import DATA

JAX_RUN = DATA / "jax_recompile"
TF_RUN = DATA / "tf_retrace"


def _compilations(folder: Path) -> C.Compilations:
    run = load_run(folder)
    return C.run_compilations(run, analyze_run(run).modules)


def _framework_count(folder: Path, pattern: str) -> int:
    """The framework's own count, as the sample printed it while it ran."""
    m = re.search(pattern, (folder / "stdout.log").read_text(encoding="utf-8"))
    assert m is not None
    return int(m[1])


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("jit_attend", ("jax", "jit_attend")),
        ("jit_attend.1", ("jax", "jit_attend")),
        ("jit__lambda", ("jax", "jit__lambda")),
        ("pmap_train_step.12", ("jax", "pmap_train_step")),
        (
            "a_inference_attend_31__XlaMustCompile_true_config_proto_135613_executor_type_111603_.3",
            ("tensorflow", "a_inference_attend"),
        ),
        ("a_inference_one_step_on_data_1234", ("tensorflow", "a_inference_one_step_on_data")),
        (
            "cluster_3__XlaCompiledKernel_true__XlaHasReferenceVars_false__XlaNumConstantArgs_0_.42",
            ("tensorflow", "cluster_3"),
        ),
        ("SyncTensorsGraph.12", (None, "SyncTensorsGraph")),
        ("my_module", (None, "my_module")),
    ],
)
def test_function_of_names(name: str, expected: tuple[str | None, str]) -> None:
    assert C.framework_and_function(name) == expected
    assert C.function_of(name) == expected[1]


def test_a_framework_plugs_in_a_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    def rule(name: str) -> tuple[str, str] | None:
        return ("torch_xla", "SyncTensorsGraph") if name.startswith("SyncTensorsGraph") else None

    monkeypatch.setattr(C, "FUNCTION_RULES", [*C.FUNCTION_RULES, rule])
    assert C.framework_and_function("SyncTensorsGraph.7") == ("torch_xla", "SyncTensorsGraph")


@pytest.mark.parametrize(
    ("layout", "expected"),
    [
        (
            "{(f32[8,32]{1,0}, f32[16,32]{1,0})->f32[8,32]{1,0}}",
            (("f32[8,32]", "f32[16,32]"), ("f32[8,32]",)),
        ),
        ("{()->(s32[], f32[2,2]{0,1})}", ((), ("s32[]", "f32[2,2]"))),
        ("{(f32[<=8,4]{1,0})->f32[<=8]{0}}", (("f32[<=8,4]",), ("f32[<=8]",))),
        ("{((f32[2]{0}, u32[]), pred[])->f32[2]{0}}", (("(f32[2], u32[])", "pred[]"), ("f32[2]",))),
        ("not a layout", None),
        ("{(f32[2]{0}", None),
    ],
)
def test_entry_shapes(layout: str, expected: object) -> None:
    assert C.entry_shapes(layout) == expected


def test_jax_compile_count_is_jax_cache_size() -> None:
    comps = _compilations(JAX_RUN)
    attend = next(c for c in comps.recompiled if c.function == "jit_attend")
    assert attend.count == _framework_count(JAX_RUN, r"JAX cache size (\d+)")
    assert attend.framework == "jax" and not attend.trivial


def test_tf_compile_count_is_tf_concrete_functions() -> None:
    comps = _compilations(TF_RUN)
    [attend] = comps.recompiled
    assert attend.function == "a_inference_attend"
    assert attend.count == _framework_count(TF_RUN, r"concrete functions (\d+)")


def test_variants_are_in_compile_order() -> None:
    run = load_run(JAX_RUN)
    attend = _compilations(JAX_RUN).recompiled
    for c in attend:
        ids = [next(m.id_number for m in run.modules if m.key == v.key) for v in c.variants]
        assert ids == sorted(ids)
        assert [v.index for v in c.variants] == list(range(c.count))


def _xla_program_shapes(path: Path) -> tuple[list[str], str]:
    """The entry's parameter and result shapes as XLA's own parser reads the module
    (its HloModuleProto's host program shape, decoded by TensorFlow's protobufs)."""
    hlo = pytest.importorskip("jaxlib._hlo")
    hlo_pb2 = pytest.importorskip("tensorflow.compiler.xla.service.hlo_pb2")
    xla_data_pb2 = pytest.importorskip("tensorflow.compiler.xla.xla_data_pb2")
    module = hlo.hlo_module_from_text(path.read_text(encoding="utf-8"))
    proto = hlo_pb2.HloModuleProto.FromString(module.as_serialized_hlo_module_proto())

    def text(shape: object) -> str:
        kind = xla_data_pb2.PrimitiveType.Name(shape.element_type).lower()  # type: ignore[attr-defined]
        return f"{kind}[{','.join(map(str, shape.dimensions))}]"  # type: ignore[attr-defined]

    program = proto.host_program_shape
    return [text(p) for p in program.parameters], text(program.result)


@pytest.mark.tf
@pytest.mark.jax
@pytest.mark.parametrize("folder", [JAX_RUN, TF_RUN])
def test_shapes_and_varying_dims_match_xla(folder: Path) -> None:
    run = load_run(folder)
    comps = _compilations(folder)
    for c in comps.recompiled:
        xla = []
        for v in c.variants:
            dump = next(m for m in run.modules if m.key == v.key)
            assert dump.before is not None
            params, result = _xla_program_shapes(dump.before)
            assert list(v.inputs) == params
            assert v.outputs == (result,)
            xla.append([[int(d) for d in re.findall(r"\d+", p.split("[", 1)[1])] for p in params])
        # every (parameter, dimension) whose size differs between XLA's compilations
        expected = {
            (arg, dim, tuple(shapes[arg][dim] for shapes in xla))
            for arg in range(len(xla[0]))
            for dim in range(len(xla[0][arg]))
            if len({shapes[arg][dim] for shapes in xla}) > 1
        }
        assert {(v.arg, v.dim, v.values) for v in c.varying} == expected
    attend = next(c for c in comps.recompiled if not c.trivial)
    assert len(attend.varying) == 3  # q, k and v, each along its length


@pytest.mark.jax
@pytest.mark.parametrize(("folder", "differ"), [(JAX_RUN, [(4,), (5,)]), (TF_RUN, [(4, 5)])])
def test_variants_that_fuse_differently(folder: Path, differ: list[tuple[int, ...]]) -> None:
    run = load_run(folder)
    attend = next(c for c in _compilations(folder).recompiled if not c.trivial)
    for v in attend.variants:
        dump = next(m for m in run.modules if m.key == v.key)
        assert dump.after is not None
        assert v.kernels == _xla_kernel_count(dump.after.read_text(encoding="utf-8"))[0]
    found = attend.fuses_differently
    assert [d.indices for d in found] == differ
    usual = {v.kernels for v in attend.variants if v.index not in sum(differ, ())}
    assert len(usual) == 1 and all(d.usual in usual for d in found)
    for d in found:
        v = attend.variants[d.indices[0]]
        assert d.kernels == v.kernels
        assert sum(d.kinds.values()) == d.kernels - d.usual


def test_compile_times_join_their_modules() -> None:
    run = load_run(JAX_RUN)
    comps = _compilations(JAX_RUN)
    attend = next(c for c in comps.recompiled if c.function == "jit_attend")
    recorded = {c.module: c for c in run.manifest.compiles if c.function == "jit(attend)"}
    assert [v.compile_s for v in attend.variants] == [
        recorded[v.key].seconds for v in attend.variants
    ]
    assert attend.compile_s == pytest.approx(sum(recorded[v.key].seconds for v in attend.variants))
    assert comps.compile_s == pytest.approx(sum(c.seconds for c in run.manifest.compiles))
    # JAX explained every compile after the first: the inputs q, k, v changed type
    assert attend.variants[0].reason is None
    assert all(v.reason and "different input types" in v.reason for v in attend.variants[1:])
    assert attend.reasons[0] == "at q, now f32[16,64] and before f32[8,64]"


def test_advice_speaks_the_framework() -> None:
    jax_advice = next(c for c in _compilations(JAX_RUN).recompiled if not c.trivial).advice
    tf_advice = _compilations(TF_RUN).recompiled[0].advice
    assert "args 0, 1, 2 dim 0" in jax_advice and "jax.jit" in jax_advice
    assert "input_signature" in tf_advice and "reduce_retracing" in tf_advice
    assert "jit_compile=True" in tf_advice and "attend" in tf_advice
    same = C.Compilation("jit_f", "jax", (C.Variant("a", 0, ("f32[2]",), ()),) * 2)
    assert "static_argnums" in same.advice


def test_find_a_variant_by_index_or_shape() -> None:
    run = load_run(JAX_RUN)
    assert [m.key for m in C.find_modules(run, "jit_attend#4")] == ["0028.jit_attend"]
    assert [m.key for m in C.find_modules(run, "jit_attend(f32[48,64])")] == ["0028.jit_attend"]
    full = "jit_attend(f32[48,64], f32[48,64], f32[48,64])"
    assert [m.key for m in C.find_modules(run, full)] == ["0028.jit_attend"]
    assert [m.key for m in C.find_modules(run, "attend([16,64])")] == ["0016.jit_attend"]
    assert len(C.find_modules(run, "jit_attend")) == 6  # every compilation of it
    assert C.find_module(run, "0016.jit_attend").key == "0016.jit_attend"
    with pytest.raises(UsageError, match=r"pick #0 to #5: jit_attend#0 \(f32\[8,64\]"):
        C.find_modules(run, "jit_attend#6")
    with pytest.raises(UsageError, match="no compilation of jit_attend takes f32"):
        C.find_modules(run, "jit_attend(f32[7,64])")
    with pytest.raises(UsageError, match=r"matches 6 compilations.*jit_attend#5 \(f32\[64,64\]"):
        C.find_module(run, "jit_attend")
    tf = load_run(TF_RUN)
    assert C.find_module(tf, "a_inference_attend#1").key.startswith("0001.a_inference_attend_60")


def test_report_keeps_a_functions_compilations_together() -> None:
    keys = [m.key for m in analyze_run(load_run(JAX_RUN)).main]
    assert keys == [f"00{n}.jit_attend" for n in (12, 16, 20, 24, 28, 32)]
    selected = analyze_run(load_run(JAX_RUN), ["jit_attend#1", "jit_attend(f32[64,64])"])
    assert {m.key for m in selected.modules} == {"0016.jit_attend", "0032.jit_attend"}


def _static_reason(now: int) -> str:
    """JAX 0.10.2's explanation of a `static_argnums=1` argument that changed, as its
    `jax_explain_cache_misses` logged it for `samples`-style code (norm(x, power))."""
    return (
        "TRACING CACHE MISS at /tmp/static_args.py:10:19 (<module>):\n"
        "  for norm defined at /tmp/static_args.py:4\n"
        "  all previously seen cache keys differ. For the closest previous key:\n"
        "  different input pytree:\n"
        f"  * at input path [0][1], now <class 'jax._src.tree_util.Static'> with pytree "
        f"metadata Static(val={now}) and before <class 'jax._src.tree_util.Static'> with "
        "pytree metadata Static(val=1), so the pytree node metadata does not match"
    )


def test_a_static_argument_that_changed() -> None:
    variants = tuple(
        C.Variant(f"000{i}.jit_norm", i, ("f32[1000]",), ("f32[]",), reason=reason)
        for i, reason in enumerate([None, _static_reason(2), _static_reason(3)])
    )
    c = C.Compilation("jit_norm", "jax", variants)
    assert c.static_changes == (("argument 1", ("1", "2", "3")),)
    assert c.advice.startswith("a static argument changed (argument 1): jax.jit compiles once")
