"""Bytes and FLOPs against XLA's own cost analysis (`HloCostAnalysis` through jaxlib).

The oracle is `hlo_module_cost_analysis(client, module)`: the same numbers
`jax.jit(f).lower(x).compile().cost_analysis()` prints, for any module XLA's parser
reads. Module totals must agree within 0.1% (they agree exactly on every module here;
the tolerance only absorbs XLA's float32 sums on big modules).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from hloscope.analysis import kernels as K
from hloscope.analysis.cost import Cost, kept_bytes, module_cost, xla_totals
from hloscope.analysis.fusion import analyze_module
from hloscope.hlo.parser import parse_file, parse_module
from tests.conftest import CORPUS, DATA

SAMPLE_FILES = sorted(DATA.glob("*/*_optimizations.txt"))
TOLERANCE = 1e-3


def _oracle(path: Path) -> dict[str, float] | None:
    hlo = pytest.importorskip("jaxlib._hlo")
    jax = pytest.importorskip("jax")
    from jax._src.lib import xla_client

    try:
        module = hlo.hlo_module_from_text(path.read_text())
    except Exception:  # a multi-module corpus file XLA's parser takes one at a time
        return None
    client = jax.devices("cpu")[0].client
    return dict(xla_client._xla.hlo_module_cost_analysis(client, module))


def _close(ours: float, theirs: float) -> bool:
    return abs(ours - theirs) <= TOLERANCE * max(1.0, abs(theirs))


def _check(path: Path) -> None:
    ref = _oracle(path)
    if ref is None:
        pytest.skip(f"{path.name}: XLA's parser does not read it as one module")
    got = xla_totals(parse_file(path))
    assert _close(got.flops, ref.get("flops", 0.0)), (got, ref)
    assert _close(got.transcendentals, ref.get("transcendentals", 0.0)), (got, ref)
    assert _close(got.bytes, ref.get("bytes accessed", 0.0)), (got, ref)


@pytest.mark.jax
@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: f"{p.parent.name}/{p.name[:48]}")
def test_totals_match_xla_cost_analysis_on_sample_dumps(path: Path) -> None:
    _check(path)


@pytest.mark.jax
def test_totals_match_xla_cost_analysis_on_corpus() -> None:
    files = sorted((CORPUS / "hlo").glob("*")) if CORPUS.is_dir() else []
    if not files:
        pytest.skip(f"no HLO corpus at {CORPUS}")
    checked = 0
    for path in files:
        ref = _oracle(path)
        if ref is None:
            continue
        got = xla_totals(parse_file(path))
        assert _close(got.flops, ref.get("flops", 0.0)), (path.name, got, ref)
        assert _close(got.bytes, ref.get("bytes accessed", 0.0)), (path.name, got, ref)
        checked += 1
    assert checked >= 20


MLP = """HloModule m, is_scheduled=true

%fused (p0: f32[64,128], p1: f32[128]) -> f32[64,128] {
  %p0 = f32[64,128]{1,0} parameter(0)
  %p1 = f32[128]{0} parameter(1)
  %b = f32[64,128]{1,0} broadcast(%p1), dimensions={1}
  %a = f32[64,128]{1,0} add(%p0, %b)
  %z = f32[] constant(0)
  %zb = f32[64,128]{1,0} broadcast(%z), dimensions={}
  ROOT %r = f32[64,128]{1,0} maximum(%a, %zb)
}

ENTRY %main (x: f32[64,32], w: f32[32,128], bias: f32[128]) -> f32[64,128] {
  %x = f32[64,32]{1,0} parameter(0)
  %w = f32[32,128]{1,0} parameter(1)
  %bias = f32[128]{0} parameter(2)
  %d = f32[64,128]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %f = f32[64,128]{1,0} fusion(%d, %bias), kind=kLoop, calls=%fused
}
"""


def test_kernel_costs_by_hand() -> None:
    module = parse_module(MLP)
    cost = module_cost(module, analyze_module(module))
    dot, fusion = cost.kernels
    assert dot.cost == Cost(2.0 * 64 * 128 * 32, 0.0, 4.0 * (64 * 32 + 32 * 128), 4.0 * 64 * 128)
    # the broadcast of the bias reads the whole bias: 512 bytes, not 64x its size
    assert fusion.cost == Cost(2.0 * 64 * 128, 0.0, 4.0 * 64 * 128 + 512, 4.0 * 64 * 128)
    # add and the two broadcasts are intermediates, written and read back once each
    assert fusion.kept == kept_bytes(module.entry.by_name["f"], module) == 2 * 3 * 4 * 64 * 128
    assert cost.total == dot.cost + fusion.cost
    assert cost.intensity == pytest.approx(cost.total.flops / cost.total.bytes)


def test_loop_body_counts_per_trip() -> None:
    path = DATA / "jax_scan_profile"
    after = sorted(path.glob("*jit_*after_optimizations.txt"))
    loops = [p for p in after if "while" in p.read_text()]
    if not loops:
        pytest.skip("no loop module in jax_scan_profile")
    module = parse_file(loops[0])
    analysis = analyze_module(module)
    cost = module_cost(module, analysis)
    looped = [k for k in cost.kernels if k.runs and k.runs > 1]
    assert looped, "the scan body runs more than once"
    assert cost.total.flops >= sum(k.cost.flops for k in cost.kernels)


def test_cublas_gemm_flops_from_its_dimension_numbers() -> None:
    # a real sm_90 dump: custom-call.1 = f32[64,64] __cublas$gemm(x: f32[64,128], w: f32[128,64])
    path = DATA / "gpu_fusion_log" / "module_0004.jit_f.sm_90_gpu_after_optimizations.txt"
    module = parse_file(path)
    cost = module_cost(module, analyze_module(module))
    gemm = cost.kernel("custom-call.1")
    assert gemm is not None and gemm.known
    x, w = (module.entry.by_name[n].shape for n in module.entry.by_name["custom-call.1"].operands)
    m, k = x.dimensions
    n = w.dimensions[1]
    assert gemm.cost.flops == 2.0 * m * n * k
    assert gemm.cost.bytes_read == 4.0 * (m * k + k * n) and gemm.cost.bytes_written == 4.0 * m * n
    assert "custom-call.1" not in cost.unknown


def test_gemm_workspace_is_not_counted_as_written() -> None:
    path = next((DATA / "gpu_synthetic_profile" / "hlo").glob("*gpu_mlp.sm_9.0_gpu_after*"))
    module = parse_file(path)
    cost = module_cost(module, analyze_module(module))
    gemm = cost.kernel(
        "custom-call.1"
    )  # (f32[64,256], s8[4194304]) = gemm(f32[64,256], f32[256,256])
    assert gemm is not None
    assert gemm.cost.flops == 2.0 * 64 * 256 * 256 and gemm.cost.bytes_written == 4.0 * 64 * 256


CONV = """HloModule c, is_scheduled=true

ENTRY %main (x: f32[1,56,56,64], k: f32[3,3,64,64]) -> f32[1,28,28,64] {
  %x = f32[1,56,56,64]{3,2,1,0} parameter(0)
  %k = f32[3,3,64,64]{3,2,1,0} parameter(1)
  ROOT %c = f32[1,28,28,64]{3,2,1,0} convolution(%x, %k), window={size=3x3 stride=2x2 pad=0_1x0_1}, dim_labels=b01f_01io->b01f
}
"""


@pytest.mark.jax
def test_cudnn_convolution_counts_as_the_convolution_xla_costs(tmp_path: Path) -> None:
    plain = tmp_path / "conv.hlo"
    plain.write_text(CONV)
    ref = _oracle(plain)
    assert ref is not None
    module = parse_module(CONV)
    assert xla_totals(module).flops == ref["flops"]  # padding skipped, as XLA does
    cudnn = CONV.replace(
        "f32[1,28,28,64]{3,2,1,0} convolution(%x, %k)",
        "(f32[1,28,28,64]{3,2,1,0}, u8[1024]{0}) custom-call(%x, %k), "
        'custom_call_target="__cudnn$convForward"',
    ).replace("-> f32[1,28,28,64] {", "-> (f32[1,28,28,64], u8[1024]) {")
    module = parse_module(cudnn)
    (kernel,) = module_cost(module, analyze_module(module)).kernels
    assert kernel.known and kernel.cost.flops == ref["flops"]
    assert kernel.cost.bytes_written == 4 * 28 * 28 * 64  # the workspace is not output


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: f"{p.parent.name}/{p.name[:48]}")
def test_per_execution_totals_are_xlas_where_nothing_loops(path: Path) -> None:
    """Without loops or custom calls, the kernels' sum is XLA's total less the tuples'
    pointer tables (a tuple is no kernel)."""
    module = parse_file(path)
    analysis = analyze_module(module)
    if analysis.loops or analysis.branches or "custom-call(" in path.read_text():
        pytest.skip("loops, branches or library calls: counted differently on purpose")
    ours, xla = module_cost(module, analysis).total, xla_totals(module)
    tuples = sum(
        8 * len(i.shape.tuple_shapes) for i in module.entry.instructions if i.opcode == "tuple"
    )
    assert ours.flops == pytest.approx(xla.flops)
    assert ours.bytes == pytest.approx(xla.bytes - tuples)


ASYNC = """HloModule a, is_scheduled=true

ENTRY %main (x: f32[1024,256]) -> (f32[1024,256], f32[4096,256]) {
  %x = f32[1024,256]{1,0} parameter(0)
  %cs = (f32[1024,256]{1,0}, f32[1024,256]{1,0}, u32[]) copy-start(%x)
  %ags = (f32[1024,256]{1,0}, f32[4096,256]{1,0}) all-gather-start(%x), replica_groups={{0,1,2,3}}, dimensions={0}
  %cd = f32[1024,256]{1,0} copy-done(%cs)
  %agd = f32[4096,256]{1,0} all-gather-done(%ags)
  ROOT %t = (f32[1024,256]{1,0}, f32[4096,256]{1,0}) tuple(%cd, %agd)
}
"""
MIB = 1024 * 1024


@pytest.mark.parametrize("platform", [K.TPU, K.GPU])
def test_async_pairs_move_their_buffer_once(platform: str, tmp_path: Path) -> None:
    """Each pair reads its source once and writes its destination once: on a TPU the
    start reads and the done writes (each a kernel), elsewhere the start's kernel
    carries both. XLA's generic cost analysis also counts the start's aliased operand
    as written, which `xla_totals` keeps (checked against XLA where jax is installed)."""
    module = parse_module(ASYNC)
    cost = module_cost(module, analyze_module(module, platform))
    got = {k.name: (k.cost.bytes_read, k.cost.bytes_written) for k in cost.kernels}
    if platform == K.TPU:
        assert got == {"cs": (MIB, 0), "ags": (MIB, 0), "cd": (0, MIB), "agd": (0, 4 * MIB)}
    else:
        assert got == {"cs": (MIB, MIB), "ags": (MIB, 4 * MIB)}
    generic = xla_totals(module)
    # the starts' tuples: the aliased source (and a copy's u32 context) written; the
    # dones read the tuples' pointer tables (3 and 2 elements); the root tuple's table
    aliased = (MIB + MIB + 4) + (MIB + 4 * MIB)
    assert generic.bytes == cost.total.bytes + aliased + 8 * (3 + 2) + 8 * 2
    if importlib.util.find_spec("jax") is not None:
        path = tmp_path / "async.hlo"
        path.write_text(ASYNC)
        ref = _oracle(path)
        assert ref is not None and generic.bytes == ref["bytes accessed"]
