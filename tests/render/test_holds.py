"""What a kernel holds, in words beside its HLO name (`hloscope.render.holds`)."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from hloscope.cli import app
from hloscope.inspection import inspect_run
from hloscope.render.holds import (
    SEPARATOR,
    KernelHolds,
    holds,
    kernel_holds,
    labelled,
    module_root,
)
from tests.conftest import DATA


def test_words_for_one_op_one_scope_and_several() -> None:
    assert holds([]) == ""
    assert holds(["jit(mlp)/layer0/dot_general"], "jit(mlp)") == "layer0/dot_general"
    layer = [f"jit(mlp)/layer0/{op}" for op in ("add", "integer_pow", "mul", "tanh")]
    assert holds(layer, "jit(mlp)") == "layer0/{add,integer_pow,mul,tanh}"
    assert holds(["add", "Relu"]) == "{add,Relu}"
    # one scope holding most, and how many more
    gelu = ["Gelu/mul", "Gelu/Erfc", "mul"]
    assert holds(gelu) == "Gelu/{mul,Erfc} +1"
    # nothing in common: the first op and how many more
    assert holds(["a/x", "b/y", "c/z"]) == "a/x +2"
    # two scopes of as many ops: the first one's
    assert holds(["b/y", "a/x", "a/w", "b/z"]) == "b/{y,z} +2"
    assert holds(["x", "a/y", "a/z", "w"]) == "{x,w} +2"
    # long: the scope and a count
    many = [f"encoder/block/op_number_{i}" for i in range(9)]
    assert holds(many) == "encoder/block (9 ops)"
    # a long scope keeps its layer (second part) and its op group (last part)
    deep = "sequential_1/dropout_1/stateless_dropout/stateless_random_uniform"
    assert holds([f"{deep}/StatelessRandomUniformV2", f"{deep}/mul"]) == (
        "…/dropout_1/…/stateless_random_uniform (2 ops)"
    )
    # the module's own scope is left out only where every op shares it
    assert module_root(["jit(f)/a", "jit(f)/b/c"]) == "jit(f)"
    assert module_root(["jit(f)/a", "other/b"]) == "" and module_root(["a"]) == ""
    assert module_root(["jit(f)/a", "jit(f)"]) == "" and module_root([]) == ""
    assert module_root(["jit(f)/a", "jit(f)x/b"]) == "" and module_root(["/a", "/b"]) == ""


def test_labels_name_real_ops_of_each_kernel() -> None:
    """On ResNet-50 every kernel doing some op's work is labelled, and every word of the
    label is a part of one of its ops' names (nothing invented)."""
    inspection = inspect_run(DATA / "tf_resnet50", timings=False, bench=False)
    (m,) = inspection.main
    assert m.provenance is not None and m.after is not None
    words = kernel_holds(m)
    for k in m.after.kernels:
        ops = [o.name for o in m.provenance.kernel_ops.get(k.name, ())]
        if not ops:
            continue
        text = words[k.name]
        parts = {p for name in ops for p in name.split("/")}
        for token in re.findall(r"[\w.]+", re.sub(r"\(\d+ ops\)|\+\d+", "", text)):
            assert token in parts, (k.name, text, ops)
    assert labelled("convolution.53", words) == "convolution.53 · conv1_conv_1/convolution"
    assert labelled("nothing", words) == "nothing"
    # the Softmax XLA split over four kernels: each says it holds the Softmax
    softmax = next(p for p in m.provenance.placements if p.op.type == "Softmax")
    assert len(softmax.kernels) == 4
    assert all(words[k] == "predictions_1/Softmax" for k in softmax.kernels)


def test_inferred_ops_are_marked() -> None:
    inspection = inspect_run(DATA / "keras_cnn_fit", timings=False, bench=False)
    (m,) = inspection.main
    words = kernel_holds(m)
    assert words["copy.21"] == "~sequential_1/dense_1/MatMul"


@pytest.mark.parametrize("sample", ["jax_mlp_profile", "tf_dense_relu_profile"])
def test_every_timing_table_row_names_its_ops(sample: str) -> None:
    """`report` and `profile`: each kernel row is `kernel · ops`."""
    inspection = inspect_run(DATA / sample)
    m = inspection.main[0]
    words = kernel_holds(m)
    timing = inspection.timing(m.key)
    assert timing is not None
    env = {"COLUMNS": "100", "NO_COLOR": "1"}
    for command, rows in (("report", 10), ("profile", 25)):  # each table's row limit
        out = CliRunner().invoke(app, [command, str(DATA / sample)], env=env).stdout
        for k in timing.kernels[:rows]:
            assert f"{k.name}{SEPARATOR}{words[k.name]} " in out, (command, k.name)


@pytest.mark.parametrize("sample", ["tf_resnet50", "keras_cnn_fit", "jax_mlp"])
def test_words_found_as_asked_are_those_of_every_kernel(sample: str) -> None:
    """`KernelHolds` (what `report` prints from: a few kernels of thousands) words each
    kernel only when asked, and gives what `kernel_holds` gives, in its order, inferred
    kernels and kernels with no op included."""
    (m,) = inspect_run(DATA / sample, timings=False, bench=False).main
    assert m.provenance is not None and m.after is not None
    words = kernel_holds(m)
    found = KernelHolds(m)
    kernel = next(iter(words))
    assert found.get(kernel) == words[kernel]
    assert len(found._found) == 1  # one kernel asked, one worded
    assert found.get("no such kernel") is None and "no such kernel" not in found
    assert list(found.items()) == list(words.items()) and len(found) == len(words)
    alone = [k.name for k in m.after.kernels if k.name not in words]  # no op: left out
    assert all(found.get(k) is None and k not in found for k in alone)
