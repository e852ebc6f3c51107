"""Bytes and FLOPs against XLA's own cost analysis (`HloCostAnalysis` through jaxlib).

The oracle is `hlo_module_cost_analysis(client, module)`: the same numbers
`jax.jit(f).lower(x).compile().cost_analysis()` prints, for any module XLA's parser
reads. Module totals must agree within 0.1% (they agree exactly on every module here;
the tolerance only absorbs XLA's float32 sums on big modules).
"""

from __future__ import annotations

from pathlib import Path

import pytest

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
