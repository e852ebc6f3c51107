"""Source op -> kernel provenance on real dumps and on hand-written evidence cases."""

from __future__ import annotations

import pickle

import pytest

from hloscope.analysis import provenance as P
from hloscope.analysis.fusion import analyze_module
from hloscope.hlo.parser import parse_file, parse_module
from hloscope.inspection import inspect_run
from hloscope.runs import load_run
from tests.conftest import DATA, dump_file


def _trace(folder: str, name: str = "") -> P.Provenance:
    stem = f"*{name}" if name else ""
    after = parse_file(dump_file(folder, f"{stem}*cpu_after_optimizations.txt"))
    before = parse_file(dump_file(folder, f"{stem}*before_optimizations.txt"))
    return P.trace(after, analyze_module(after), before)


def test_dense_relu_relu_fused_with_add_matmul_alone() -> None:
    prov = _trace("tf_dense_relu")
    by = {p.op.name: p for p in prov.placements}
    assert set(by) == {"MatMul", "add", "Relu"}  # XLA_Args/XLA_Retvals are plumbing
    assert by["Relu"].status == P.FUSED and by["Relu"].shares_with == ("add",)
    assert by["add"].op.type == "AddV2"
    assert by["MatMul"].status == P.ALONE
    assert by["MatMul"].kernels == ("MatMul.2",)
    assert "unfused dot" in by["MatMul"].evidence
    assert [p.op.name for p in prov.unfused()] == ["MatMul"]
    assert {o.name for o in prov.kernel_ops["broadcast_maximum_fusion"]} == {"add", "Relu"}
    # TensorFlow records its own ops.py as the source file: not a user line
    assert prov.kernels_by_line == {}


def test_jax_mlp_locations_and_library_dots() -> None:
    prov = _trace("jax_mlp", "jit_mlp")
    dots = [p for p in prov.placements if p.op.name.endswith("dot_general")]
    assert len(dots) == 4 and all(p.status == P.ALONE for p in dots)
    assert all("library call" in p.evidence for p in dots)
    assert all(p.op.location and p.op.location.file.endswith("jax_mlp.py") for p in dots)
    unfused = prov.unfused()
    assert [p.bytes for p in unfused] == sorted((p.bytes for p in unfused), reverse=True)
    assert sum(prov.kernels_by_line.values()) >= 11  # every kernel has a user line
    assert prov.find("layer1") and all("layer1" in p.op.name for p in prov.find("layer1"))


EVIDENCE_BEFORE = """HloModule m

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  %c = f32[4]{0} constant({1, 2, 3, 4}), metadata={op_name="const"}
  %folded = f32[4]{0} exponential(%c), metadata={op_name="jit(f)/folded_exp"}
  %unused = f32[4]{0} negate(%x), metadata={op_name="jit(f)/unused_neg"}
  %r = f32[2,2]{1,0} reshape(%x), metadata={op_name="jit(f)/reshape"}
  %r2 = f32[4]{0} reshape(%r), metadata={op_name="jit(f)/reshape"}
  %m = f32[4]{0} multiply(%r2, %folded), metadata={op_name="jit(f)/mul"}
  %gone = f32[4]{0} add(%m, %m), metadata={op_name="jit(f)/vanished"}
  ROOT %out = f32[4]{0} tanh(%gone), metadata={op_name="jit(f)/tanh"}
}
"""

EVIDENCE_AFTER = """HloModule m, is_scheduled=true

%fused (p0: f32[4], p1: f32[4]) -> f32[4] {
  %p0 = f32[4]{0} parameter(0)
  %p1 = f32[4]{0} parameter(1)
  %m = f32[4]{0} multiply(%p0, %p1), metadata={op_name="jit(f)/mul"}
  ROOT %t = f32[4]{0} tanh(%m), metadata={op_name="jit(f)/tanh"}
}

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  %c = f32[4]{0} constant({2.7, 7.4, 20.1, 54.6})
  ROOT %f = f32[4]{0} fusion(%x, %c), kind=kLoop, calls=%fused
}
"""


def test_vanished_ops_get_evidence_only_where_the_modules_show_it() -> None:
    after = parse_module(EVIDENCE_AFTER)
    prov = P.trace(after, analyze_module(after), parse_module(EVIDENCE_BEFORE))
    by = {p.op.name: p for p in prov.placements}
    assert by["jit(f)/mul"].status == P.FUSED
    assert by["jit(f)/folded_exp"].status == P.FOLDED
    assert by["jit(f)/unused_neg"].status == P.DEAD
    assert by["jit(f)/reshape"].status == P.REMOVED
    assert "only reshape" in by["jit(f)/reshape"].evidence
    assert by["jit(f)/vanished"].status == P.REMOVED and by["jit(f)/vanished"].evidence == ""


def test_kernel_of_before_ops_joins_on_source_ops() -> None:
    after = parse_file(dump_file("tf_dense_relu", "*cpu_after_optimizations.txt"))
    before = parse_file(dump_file("tf_dense_relu", "*before_optimizations.txt"))
    analysis = analyze_module(after)
    prov = P.trace(after, analysis, before)
    kernel_of = P.kernel_of_before_ops(before, after, prov, analysis)
    # Read off the two dumps by hand: the MatMul op is kernel MatMul.2, the bias add and
    # ReLU went into broadcast_maximum_fusion.
    assert kernel_of == {
        "MatMul.2": "MatMul.2",
        "MatMul.3": "MatMul.2",  # the transpose XLA removed belongs to the MatMul op
        "add.2": "broadcast_maximum_fusion",
        "add.3": "broadcast_maximum_fusion",
        "Relu.4": "broadcast_maximum_fusion",
        "Relu.5": "broadcast_maximum_fusion",
    }
    assert "reshape.3" not in kernel_of  # XLA_Args plumbing: no kernel
    # the analysis is computed when not given
    assert P.kernel_of_before_ops(before, after, prov) == kernel_of


def test_kernels_of_before_ops_keeps_every_kernel_of_an_op() -> None:
    # One op (jit(f)/mul) that XLA duplicated into two fusions: the op before
    # optimization went to both, the fusion whose instruction has the same opcode first.
    before = parse_module(
        """HloModule m

ENTRY %main (x: f32[4]) -> (f32[4], f32[4]) {
  %x = f32[4]{0} parameter(0)
  %m = f32[4]{0} multiply(%x, %x), metadata={op_name="jit(f)/mul"}
  %e = f32[4]{0} exponential(%m), metadata={op_name="jit(f)/exp"}
  %n = f32[4]{0} negate(%m), metadata={op_name="jit(f)/neg"}
  ROOT %t = (f32[4]{0}, f32[4]{0}) tuple(%e, %n)
}
"""
    )
    after = parse_module(
        """HloModule m, is_scheduled=true

%f1 (p0: f32[4]) -> f32[4] {
  %p0 = f32[4]{0} parameter(0)
  %m1 = f32[4]{0} multiply(%p0, %p0), metadata={op_name="jit(f)/mul"}
  ROOT %e1 = f32[4]{0} exponential(%m1), metadata={op_name="jit(f)/exp"}
}

%f2 (p1: f32[4]) -> f32[4] {
  %p1 = f32[4]{0} parameter(0)
  %m2 = f32[4]{0} multiply(%p1, %p1), metadata={op_name="jit(f)/mul"}
  ROOT %n2 = f32[4]{0} negate(%m2), metadata={op_name="jit(f)/neg"}
}

ENTRY %main (x: f32[4]) -> (f32[4], f32[4]) {
  %x = f32[4]{0} parameter(0)
  %exp_fusion = f32[4]{0} fusion(%x), kind=kLoop, calls=%f1
  %neg_fusion = f32[4]{0} fusion(%x), kind=kLoop, calls=%f2
  ROOT %t = (f32[4]{0}, f32[4]{0}) tuple(%exp_fusion, %neg_fusion)
}
"""
    )
    analysis = analyze_module(after)
    prov = P.trace(after, analysis, before)
    assert P.kernels_of_before_ops(before, after, prov, analysis) == {
        "m": ("exp_fusion", "neg_fusion"),
        "e": ("exp_fusion",),
        "n": ("neg_fusion",),
    }
    # its before side: the ops that may go to a kernel, in walk order; found ahead (as
    # a page does while a worker sends the after side), taken by the next call only
    ops = P.ops_to_place(before)
    P.ops_to_place_ahead(before)
    ahead = P.ops_to_place(before)
    assert ahead == ops and ahead is not ops and P.ops_to_place(before) is not ahead
    assert list(zip(*ops, strict=True)) == [
        ("m", "multiply", "jit(f)/mul"),
        ("e", "exponential", "jit(f)/exp"),
        ("n", "negate", "jit(f)/neg"),
    ]
    # each op's kernels are the index's own tuple, not one made per op (a big module
    # has 536k ops, issue 27)
    index = P.kernel_index(after, prov, analysis)
    placed = P.kernels_of_before_ops(before, after, prov, analysis)
    assert placed["m"] is index.by_op["jit(f)/mul"] and placed["e"] is index.by_op["jit(f)/exp"]


def test_the_kernel_index_from_names_alone_equals_the_one_from_source_ops() -> None:
    # A worker drawing the before side sends only this index: found from op names
    # without making the source ops, it must be the index the source ops give.
    for folder in ("tf_dense_relu", "jax_transformer_block", "torch_mlp", "tf_resnet50"):
        for dump in load_run(DATA / folder).modules:
            after = dump.load_after()
            if after is None:
                continue
            analysis = analyze_module(after)
            later = P.AfterOps.later(after, analysis)
            index = later.index()
            assert not later.known  # nothing found for it
            assert index == P.AfterOps.of(after, analysis).index(), dump.key
            assert later.kernel_ops == P.AfterOps.of(after, analysis).kernel_ops
            assert later.known


@pytest.mark.parametrize("sample", ["tf_resnet50", "jax_mlp", "tf_dense_relu"])
def test_a_provenance_read_back_counts_before_it_makes_its_placements(sample: str) -> None:
    """Pickled (as a kept analysis is) and read back, a provenance counts its ops and
    finds the alone ones from its columns: the others are not unpickled (pickled again
    as they came) nor made until `placements` is asked, and then the alone ones are the
    same objects. Every answer is the original's."""
    for m in inspect_run(DATA / sample, timings=False, bench=False).main:
        prov = m.provenance
        assert prov is not None
        back = pickle.loads(pickle.dumps(prov))
        assert back.count() == prov.count() == len(prov.placements)
        for status in (P.ALONE, P.FUSED, "no such status"):
            assert back.count(status) == prov.count(status)
        alone = back.unfused()
        assert alone == prov.unfused()
        assert callable(back._placements)  # not made yet
        assert len(back._unmade.made) == len(alone)  # only the alone ones
        ops = back._unmade.ops
        assert ops.made is None and len(ops.some) == len(alone)  # their source ops alone
        columns = back._unmade.columns
        assert columns._columns is None  # the other columns not even unpickled
        again = pickle.loads(pickle.dumps(back))  # kept again as the bytes they came as
        assert columns._rest is not None and columns._rest in pickle.dumps(back)
        assert again.unfused() == alone and again.placements == prov.placements
        kernel = next((k for k, found in prov.kernel_ops.items() if found), None)
        if kernel is not None:  # one kernel's ops, asked for: made, the others not
            assert back.kernel_ops[kernel] == prov.kernel_ops[kernel]
            assert len(ops.some) <= len(alone) + len(prov.kernel_ops[kernel])
            assert ops.made is None
        assert kernel is not None or sample == "tf_dense_relu"
        assert list(back.kernel_ops) == list(prov.kernel_ops)
        assert back.op_names() == prov.op_names() == [p.op.name for p in prov.placements]
        assert ops.made is None and callable(back._placements)
        made = back.placements
        assert made == prov.placements and back == prov
        assert back.kernel_ops == prov.kernel_ops and dict(back.kernel_ops) == prov.kernel_ops
        alone_made = [p for p in made if p.status == P.ALONE]
        assert [p for p in alone_made if any(p is a for a in alone)] == alone_made
        assert back.unfused() == alone and back.count(P.ALONE) == len(alone)
        # each op one object: a kernel's ops are its placements' ops
        by_name = {p.op.name: p.op for p in made}
        for found in back.kernel_ops.values():
            assert all(op is by_name[op.name] for op in found if op.name in by_name)
