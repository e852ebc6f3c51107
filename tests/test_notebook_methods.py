"""Runs, modules and kernels show themselves in a notebook, through hloscope.notebook."""

from __future__ import annotations

import hloscope
from hloscope.analysis.fusion import Kernel
from hloscope.analysis.provenance import Placement
from tests.conftest import DATA


def test_run_and_module_methods() -> None:
    run = hloscope.open_run(DATA / "jax_mlp")
    main = run.main()
    assert main.key == "0030.jit_mlp"  # the biggest module that is not a JAX helper
    rows = run.summary()
    assert rows[0]["key"] == main.key and rows[0]["kernels"] == 11
    assert main.summary() == [rows[0]]
    kernels = run.kernels()
    assert kernels == main.kernels() and all(isinstance(k, Kernel) for k in kernels)
    assert all(isinstance(p, Placement) for p in main.ops())
    assert "<svg" in run.graph()._repr_svg_()
    page = run._repr_html_()
    assert page.startswith("<iframe") and "srcdoc=" in page
    assert kernels[0].name in kernels[0]._repr_html_()


def test_a_module_is_analysed_once_however_often_it_is_asked_for() -> None:
    run = hloscope.open_run(DATA / "jax_mlp")
    assert run.main() is run.module("0030.jit_mlp")
    assert any(m is run.main() for m in run.modules)
    first = run.main().inspection
    run.kernels(), run.ops(), run.module("jit_mlp").kernels()
    assert run.main().inspection is first


def test_short_reprs_say_what_the_object_is() -> None:
    """A kernel, a placement and a module view each print one short line, with the
    figures every other view shows (`hloscope.render.figures`)."""
    run = hloscope.open_run(DATA / "jax_mlp")
    main = run.main()
    assert repr(main) == "ModuleView('0030.jit_mlp')"  # nothing analysed for a repr
    kernels = main.kernels()
    shown = repr(main)
    row = run.summary()[0]
    assert shown == (
        f"ModuleView('0030.jit_mlp': {row['kernels']} kernels, {row['launches']} launches "
        f"per execution, {row['source_ops']} ops, {row['alone']} alone)"
    )
    fusion = next(k for k in kernels if k.name == "multiply_multiply_fusion.2")
    assert repr(fusion) == (
        "Kernel('multiply_multiply_fusion.2', kind='kLoop', launches=1, hlo_ops=19, "
        "shape='f32[32,256]{1,0}')"
    )
    assert all(len(repr(k)) < 160 for k in kernels)
    ops = {p.op.name: p for p in main.ops()}
    add = ops["jit(mlp)/layer0/add"]
    assert (
        repr(add)
        == "Placement('jit(mlp)/layer0/add': fused in multiply_multiply_fusion.2 with 3 other ops)"
    )
    dot = ops["jit(mlp)/layer1/dot_general"]
    assert repr(dot) == "Placement('jit(mlp)/layer1/dot_general': alone in ynn_fusion.2)"
    # an op XLA split over several kernels it shares with no other op
    resnet = hloscope.open_run(DATA / "tf_resnet50").main()
    softmax = next(p for p in resnet.ops() if p.op.type == "Softmax")
    assert repr(softmax) == "Placement('resnet50_1/predictions_1/Softmax': alone in 4 kernels)"
