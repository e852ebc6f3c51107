"""Each launch rule of hloscope.analysis.fusion on a small hand-written module, and the
walk's cost on deep or shared call graphs."""

from __future__ import annotations

from pathlib import Path

import pytest

from hloscope.analysis import kernels as K
from hloscope.analysis.fusion import analyze_module, fused_ops, walk
from hloscope.hlo.parser import parse_file, parse_module

ADD = """
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
"""
GPU_CONFIG = 'backend_config={"operation_queue_id":"0","wait_on_operation_queues":[]}'


def _analyze(text: str, platform: str | None = None):
    return analyze_module(parse_module("HloModule m, is_scheduled=true\n" + text), platform)


def test_nested_known_loops_multiply_and_skip_both_conditions() -> None:
    a = _analyze(
        """
%cond (c: s32[]) -> pred[] {
  %c = s32[] parameter(0)
  ROOT %lt = pred[] compare(%c, %c), direction=LT
}

%inner (i: s32[]) -> s32[] {
  %i = s32[] parameter(0)
  ROOT %n = s32[] negate(%i)
}

%outer (o: s32[]) -> s32[] {
  %o = s32[] parameter(0)
  %w = s32[] while(%o), condition=%cond, body=%inner, backend_config={"known_trip_count":{"n":"4"}}
  ROOT %e = s32[] exponential(%w)
}

ENTRY %main (x: s32[]) -> s32[] {
  %x = s32[] parameter(0)
  ROOT %w2 = s32[] while(%x), condition=%cond, body=%outer, backend_config={"known_trip_count":{"n":"3"}}
}
"""
    )
    assert {k.name: k.launches for k in a.kernels} == {"n": 12, "e": 3}
    assert a.launches == 15 and a.launches_exact


def test_async_collective_pairs_and_sugar_count_once() -> None:
    a = _analyze(
        ADD
        + """
%wrapped_rs (p: f32[8]) -> f32[2] {
  %p = f32[8]{0} parameter(0)
  ROOT %reduce-scatter.60 = f32[2]{0} reduce-scatter(%p), dimensions={0}, to_apply=%add
}

ENTRY %main (x: f32[8]) -> f32[2] {
  %x = f32[8]{0} parameter(0)
  %ags = (f32[8]{0}, f32[32]{0}) all-gather-start(%x), dimensions={0}
  %agd = f32[32]{0} all-gather-done(%ags)
  %a2as = ((f32[8]{0}), f32[8]{0}) all-to-all-start(%x), dimensions={0}
  %a2ad = f32[8]{0} all-to-all-done(%a2as)
  %rss = ((f32[8]{0}), f32[2]{0}) async-start(%a2ad), calls=%wrapped_rs
  %rsu = ((f32[8]{0}), f32[2]{0}) async-update(%rss)
  ROOT %rsd = f32[2]{0} async-done(%rsu)
}
"""
    )
    assert [(k.name, k.cls, k.kind, k.hlo_ops) for k in a.kernels] == [
        ("ags", K.COLLECTIVE, "all-gather", ("ags",)),
        ("a2as", K.COLLECTIVE, "all-to-all", ("a2as",)),
        ("rss", K.COLLECTIVE, "reduce-scatter", ("reduce-scatter.60",)),
    ]
    assert a.launches == 3
    assert a.kernels[1].kind == "all-to-all"
    rs = a.kernels[2]
    assert rs.launches_of("reduce-scatter.60") == 1 and rs.launches_of("rss") == 0


def test_custom_fusion_wrapping_cublas_is_that_library_call() -> None:
    a = _analyze(
        """
%address-computation (p0: bf16[4,8,8], p1: s32[], p2: bf16[8,8]) -> bf16[8,8] {
  %p0 = bf16[4,8,8]{2,1,0} parameter(0)
  %p1 = s32[] parameter(1)
  %z = s32[] constant(0)
  %ds = bf16[1,8,8]{2,1,0} dynamic-slice(%p0, %p1, %z, %z), dynamic_slice_sizes={1,8,8}
  %bc = bf16[8,8]{1,0} bitcast(%ds)
  %p2 = bf16[8,8]{1,0} parameter(2)
  %custom-call.220 = (bf16[8,8]{1,0}, s8[64]{0}) custom-call(%bc, %p2), custom_call_target="__cublas$gemm"
  ROOT %g = bf16[8,8]{1,0} get-tuple-element(%custom-call.220), index=0
}

ENTRY %main (x: bf16[4,8,8], i: s32[], y: bf16[8,8]) -> bf16[8,8] {
  %x = bf16[4,8,8]{2,1,0} parameter(0)
  %i = s32[] parameter(1)
  %y = bf16[8,8]{1,0} parameter(2)
  ROOT %address_computation.8 = bf16[8,8]{1,0} fusion(%x, %i, %y), kind=kCustom, calls=%address-computation, backend_config={"fusion_backend_config":{"kind":"__custom_fusion","custom_fusion_config":{"name":"dynamic_address_computation"}}}
}
"""
    )
    (k,) = a.kernels
    assert (k.name, k.cls, k.kind, k.library) == (
        "address_computation.8",
        K.CUSTOM_CALL,
        "custom-call:__cublas$gemm",
        True,
    )
    assert k.hlo_ops == ("custom-call.220",) and k.launches == 1


@pytest.mark.parametrize(("platform", "launches"), [(K.GPU, 2), (K.CPU, 2), (None, 0)])
def test_partition_and_replica_ids_launch_where_the_runtime_is_known(
    platform: str | None, launches: int
) -> None:
    a = _analyze(
        """
ENTRY %main () -> (u32[], u32[]) {
  %p = u32[] partition-id()
  %r = u32[] replica-id()
  ROOT %t = (u32[], u32[]) tuple(%p, %r)
}
""",
        platform,
    )
    assert a.launches == launches and a.platform == platform


def test_platform_is_read_from_the_module() -> None:
    text = """
ENTRY %main () -> u32[] {
  ROOT %p = u32[] partition-id(), CONFIG
}
"""
    gpu = _analyze(text.replace("CONFIG", GPU_CONFIG))
    cpu = _analyze(text.replace("CONFIG", 'backend_config={"outer_dimension_partitions":[]}'))
    unknown = _analyze(text.replace(", CONFIG", ""))
    assert (gpu.platform, gpu.launches) == (K.GPU, 1)
    assert (cpu.platform, cpu.launches) == (K.CPU, 1)
    assert (unknown.platform, unknown.launches) == (None, 0)


def test_the_platform_read_through_the_text_is_the_one_each_lookup_gives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`_platform` skips an instruction whose attributes' text names nothing it reads;
    with that skip off (every instruction's attributes looked up, as before), each
    module of the corpus and the captured dumps, under a dump's file name and none,
    reads as the same platform."""
    from hloscope.errors import HloParseError
    from tests.conftest import CORPUS, DATA
    from tests.hlo.fuzzing import seed_modules

    answers = []
    for text in seed_modules([CORPUS / "hlo", DATA], max_chars=200_000):
        for path in ("m.hlo", "module_0001.f.cpu_after_optimizations.txt"):
            try:
                module = parse_module(text, path=path)
            except HloParseError:
                continue
            fast = K._platform(module)
            with monkeypatch.context() as patched:  # no `Attributes`: every one looked up
                patched.setattr(K, "Attributes", type("Unlike", (), {}))
                assert K._platform(module) == fast, path
            if path == "m.hlo":  # no platform in the name: the module's own
                answers.append(fast)
    assert {K.GPU, K.CPU, None} <= set(answers)  # the text says, and says nothing


def test_command_buffer_call_is_one_launch() -> None:
    a = _analyze(
        """
%command_buffer (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  %n = f32[8]{0} negate(%p)
  ROOT %e = f32[8]{0} exponential(%n)
}

ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8]{0} parameter(0)
  ROOT %call = f32[8]{0} call(%x), to_apply=%command_buffer
}
""",
        K.GPU,
    )
    (k,) = a.kernels
    assert (k.name, k.kind, k.launches, k.hlo_ops) == ("call", "command-buffer", 1, ("call",))
    assert [i.name for i in k.ops] == ["n", "e"]


def test_plain_call_is_inlined_but_cpu_small_call_is_one_kernel() -> None:
    body = """
%callee (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  %n = f32[8]{0} negate(%p)
  ROOT %e = f32[8]{0} exponential(%n)
}

ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8]{0} parameter(0)
  ROOT %call = f32[8]{0} call(%x), to_apply=%callee ATTRS
}
"""
    plain = _analyze(body.replace(" ATTRS", ""), K.CPU)
    small = _analyze(body.replace(" ATTRS", ', frontend_attributes={xla_cpu_small_call="true"}'))
    assert [k.name for k in plain.kernels] == ["n", "e"] and plain.launches == 2
    assert [(k.name, k.kind, k.launches) for k in small.kernels] == [("call", "cpu-call", 1)]
    assert small.platform == K.CPU


COPY_FUSION = """
%copies (p0: f32[8,4], p1: f32[8,4]) -> (f32[8,4], f32[8,4]) {
  %p0 = f32[8,4]{1,0} parameter(0)
  %p1 = f32[8,4]{1,0} parameter(1)
  %c0 = f32[8,4]{1,0} copy(%p0)
  %c1 = f32[8,4]{LAYOUT} copy(%p1)
  ROOT %t = (f32[8,4]{1,0}, f32[8,4]{LAYOUT}) tuple(%c0, %c1)
}

ENTRY %main (x: f32[8,4], y: f32[8,4]) -> (f32[8,4], f32[8,4]) {
  %x = f32[8,4]{1,0} parameter(0)
  %y = f32[8,4]{1,0} parameter(1)
  ROOT %copy_fusion = (f32[8,4]{1,0}, f32[8,4]{LAYOUT}) fusion(%x, %y), kind=kLoop, calls=%copies
}
"""


@pytest.mark.parametrize(
    ("layout", "platform", "launches"),
    [("1,0", K.GPU, 2), ("0,1", K.GPU, 1), ("1,0", K.CPU, 1)],
)
def test_gpu_copy_fusion_runs_one_memcpy_per_output(
    layout: str, platform: str, launches: int
) -> None:
    a = _analyze(COPY_FUSION.replace("LAYOUT", layout), platform)
    (k,) = a.kernels
    assert k.launches == launches == a.launches
    assert k.hlo_ops == ("copy_fusion",) and k.launches_of("copy_fusion") == launches


@pytest.mark.parametrize(
    ("shape", "dims", "launches"),
    [
        ("f32[4,32000]{1,0}", "{1}", 2),  # row reduction over 32000 > 16384: atomics
        ("f32[4,8192]{1,0}", "{1}", 1),  # fits one block per row: race free
        ("f32[8192,4]{1,0}", "{0}", 2),  # column reduction over 8192 > 4096 rows
        ("f32[1024,4]{1,0}", "{0}", 1),
    ],
)
def test_gpu_reduction_with_atomics_runs_an_initializer(
    shape: str, dims: str, launches: int
) -> None:
    kept = "f32[4]{0}"
    a = _analyze(
        ADD
        + f"""
%fused_reduce (p: {shape.split("{")[0]}) -> f32[4] {{
  %p = {shape} parameter(0)
  %z = f32[] constant(0)
  ROOT %reduce.80 = {kept} reduce(%p, %z), dimensions={dims}, to_apply=%add
}}

ENTRY %main (x: {shape.split("{")[0]}) -> f32[4] {{
  %x = {shape} parameter(0)
  ROOT %input_reduce_fusion = {kept} fusion(%x), kind=kInput, calls=%fused_reduce
}}
""",
        K.GPU,
    )
    (k,) = a.kernels
    assert k.launches == launches
    if launches == 2:
        assert k.hlo_ops == ("input_reduce_fusion", "reduce.80")


def test_unknown_trip_count_still_walks_the_condition() -> None:
    a = _analyze(
        """
%cond (c: s32[]) -> pred[] {
  %c = s32[] parameter(0)
  ROOT %lt = pred[] compare(%c, %c), direction=LT
}

%body (i: s32[]) -> s32[] {
  %i = s32[] parameter(0)
  ROOT %n = s32[] negate(%i)
}

ENTRY %main (x: s32[]) -> s32[] {
  %x = s32[] parameter(0)
  ROOT %w = s32[] while(%x), condition=%cond, body=%body
}
"""
    )
    assert [(k.name, k.launches) for k in a.kernels] == [("lt", None), ("n", None)]
    assert not a.launches_exact and a.launches == 2


# --- cost: linear in the module, no recursion ------------------------------------------


def _chain(depth: int) -> str:
    """`depth` computations, each calling the next one: 1,200 nested calls."""
    parts = ["%c0 (p: f32[8]) -> f32[8] {\n  %p = f32[8]{0} parameter(0)\n"
             "  ROOT %n0 = f32[8]{0} negate(%p)\n}\n"]  # fmt: skip
    for d in range(1, depth):
        parts.append(
            f"%c{d} (p: f32[8]) -> f32[8] {{\n  %p = f32[8]{{0}} parameter(0)\n"
            f"  %n{d} = f32[8]{{0}} negate(%p)\n"
            f"  ROOT %call{d} = f32[8]{{0}} call(%n{d}), to_apply=%c{d - 1}\n}}\n"
        )
    parts.append(
        f"ENTRY %main (x: f32[8]) -> f32[8] {{\n  %x = f32[8]{{0}} parameter(0)\n"
        f"  ROOT %top = f32[8]{{0}} call(%x), to_apply=%c{depth - 1}\n}}\n"
    )
    return "".join(parts)


def test_1200_nested_calls() -> None:
    a = _analyze(_chain(1200))
    assert a.kernel_count == 1200 and a.launches == 1200


def test_shared_computation_called_twice_at_each_of_30_levels() -> None:
    """2**30 call paths: counted by summing per computation, not by walking each path."""
    parts = ["%d0 (p: f32[8]) -> f32[8] {\n  %p = f32[8]{0} parameter(0)\n"
             "  ROOT %leaf = f32[8]{0} negate(%p)\n}\n"]  # fmt: skip
    for d in range(1, 31):
        parts.append(
            f"%d{d} (p: f32[8]) -> f32[8] {{\n  %p = f32[8]{{0}} parameter(0)\n"
            f"  %a{d} = f32[8]{{0}} call(%p), to_apply=%d{d - 1}\n"
            f"  ROOT %b{d} = f32[8]{{0}} call(%a{d}), to_apply=%d{d - 1}\n}}\n"
        )
    parts.append(
        "ENTRY %main (x: f32[8]) -> f32[8] {\n  %x = f32[8]{0} parameter(0)\n"
        "  ROOT %top = f32[8]{0} call(%x), to_apply=%d30\n}\n"
    )
    module = parse_module("HloModule m\n" + "".join(parts))
    a = analyze_module(module)
    assert [(k.name, k.launches) for k in a.kernels] == [("leaf", 2**30)]
    assert a.launches == 2**30
    assert sum(1 for _ in walk(module)) == module.instruction_count


def test_1200_nested_fusions_expand_without_recursion() -> None:
    depth = 1200
    parts = ["%f0 (p: f32[8]) -> f32[8] {\n  %p = f32[8]{0} parameter(0)\n"
             "  ROOT %e0 = f32[8]{0} exponential(%p)\n}\n"]  # fmt: skip
    for d in range(1, depth):
        parts.append(
            f"%f{d} (p: f32[8]) -> f32[8] {{\n  %p = f32[8]{{0}} parameter(0)\n"
            f"  %e{d} = f32[8]{{0}} exponential(%p)\n"
            f"  ROOT %g{d} = f32[8]{{0}} fusion(%e{d}), kind=kLoop, calls=%f{d - 1}\n}}\n"
        )
    parts.append(
        f"ENTRY %main (x: f32[8]) -> f32[8] {{\n  %x = f32[8]{{0}} parameter(0)\n"
        f"  ROOT %top = f32[8]{{0}} fusion(%x), kind=kLoop, calls=%f{depth - 1}\n}}\n"
    )
    module = parse_module("HloModule m\n" + "".join(parts))
    (k,) = analyze_module(module).kernels
    assert len(k.ops) == depth
    assert [i.name for i in fused_ops(module, module.entry.root)][:2] == ["e1199", "e1198"]


def test_async_sugar_of_any_op_is_classified_as_the_op() -> None:
    a = _analyze(
        """
%f (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  ROOT %e = f32[8]{0} exponential(%p)
}

ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8]{0} parameter(0)
  %fs = ((f32[8]{0}), f32[8]{0}) fusion-start(%x), kind=kLoop, calls=%f
  %fd = f32[8]{0} fusion-done(%fs)
  %cs = ((f32[8]{0}), f32[8]{0}) custom-call-start(%fd), custom_call_target="__cublas$gemm"
  ROOT %cd = f32[8]{0} custom-call-done(%cs)
}
""",
        K.GPU,
    )
    assert [(k.name, k.cls) for k in a.kernels] == [("fs", K.FUSION), ("cs", K.CUSTOM_CALL)]
    assert a.launches == 2


ASYNC_PAIRS = """
ENTRY %main (x: f32[1024,256]) -> (f32[1024,256], f32[4096,256], f32[]) {
  %x = f32[1024,256]{1,0} parameter(0)
  %cs = (f32[1024,256]{1,0:S(5)}, f32[1024,256]{1,0}, u32[]) copy-start(%x)
  %ags = (f32[1024,256]{1,0}, f32[4096,256]{1,0}) all-gather-start(%x), replica_groups={{0,1,2,3}}, dimensions={0}
  %n = f32[1024,256]{1,0} negate(%x)
  %cd = f32[1024,256]{1,0} copy-done(%cs)
  %agd = f32[4096,256]{1,0} all-gather-done(%ags)
  %s = f32[] constant(1)
  %sc = f32[]{:T(128)S(6)} copy(%s)
  ROOT %t = (f32[1024,256], f32[4096,256], f32[]) tuple(%cd, %agd, %sc)
}
"""


@pytest.mark.parametrize(
    ("platform", "kernels"),
    [
        (K.TPU, ["cs", "ags", "n", "cd", "agd"]),
        (K.GPU, ["cs", "ags", "n", "sc"]),
        (K.CPU, ["cs", "ags", "n", "sc"]),
        (None, ["cs", "ags", "n", "sc"]),
    ],
)
def test_async_halves_and_scalar_copies_follow_each_platforms_runtime(
    platform: str | None, kernels: list[str]
) -> None:
    """A TPU runs both halves of an async pair as ops and no scalar copy; the GPU and
    CPU runtimes launch a pair once, at its start, and copy a scalar as any array."""
    a = _analyze(ASYNC_PAIRS, platform)
    assert [k.name for k in a.kernels] == kernels and a.launches == len(kernels)
    if platform == K.TPU:
        kinds = {k.name: k.kind for k in a.kernels}
        assert kinds["cd"] == "unfused:copy-done" and kinds["agd"] == "all-gather-done"
        assert {k.name: k.cls for k in a.kernels}["agd"] == K.COLLECTIVE


def test_tpu_is_read_from_its_backend_config_and_file_name(tmp_path: Path) -> None:
    text = """
ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8]{0} parameter(0)
  %cs = (f32[8]{0}, f32[8]{0}, u32[]) copy-start(%x)
  ROOT %cd = f32[8]{0} copy-done(%cs)CONFIG
}
"""
    config = ', backend_config={"flag_configs":[],"scoped_memory_configs":[]}'
    tpu = _analyze(text.replace("CONFIG", config))
    assert (tpu.platform, tpu.launches) == (K.TPU, 2)
    path = tmp_path / "module_0001.jit_f.tpu_after_optimizations.txt"
    path.write_text("HloModule jit_f, is_scheduled=true\n" + text.replace("CONFIG", ""))
    named = analyze_module(parse_file(path))
    assert (named.platform, named.launches) == (K.TPU, 2)
    assert K.runtime(None) == K.Runtime(None) and K.runtime("rocm") == K.Runtime(None)
