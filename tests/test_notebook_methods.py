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
