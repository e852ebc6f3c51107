"""Tests for `hloscope.inspect`: in-process capture with TensorFlow and JAX."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import pytest

import hloscope
from hloscope.capture.inprocess import framework_of_call
from hloscope.errors import UsageError
from hloscope.notebook import RunView
from hloscope.runs import load_run


def _check(view: RunView, framework: str) -> None:
    run = view.run
    (module,) = run.modules
    assert module.key == f"0000.{module.name}" and module.platform == "cpu"
    before, after = module.load_before(), module.load_after()
    assert before is not None and after is not None
    assert before.name == after.name == module.name
    assert not before.is_scheduled and after.is_scheduled
    assert run.manifest.source == "inspect" and run.manifest.framework == framework
    assert run.manifest.platform == "cpu" and run.manifest.versions[framework]
    assert load_run(run.path).modules == run.modules  # the folder is a normal run
    assert view.main().kernels()  # the notebook facade reads it


@pytest.mark.jax
def test_inspect_jax(tmp_path: Path) -> None:
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def layer(w: object, x: object) -> object:
        return jax.nn.relu(x @ w + 1.0)

    w, x = jnp.ones((16, 8)), jnp.ones((4, 16))
    run = hloscope.inspect(layer, w, x)
    _check(run, "jax")
    assert run.modules[0].name == "jit_layer"
    assert run.path.name.startswith("hloscope-inspect-")
    # the compile as JAX's own events time it, joined to the module
    [compiled] = run.manifest.compiles
    assert compiled.function == "jit(layer)" and compiled.module == run.modules[0].key
    assert set(compiled.phases) == {"trace", "lower", "compile"}
    assert compiled.seconds == pytest.approx(sum(compiled.phases.values()))
    assert tmp_path.parent in run.path.parents  # the session's temp folder, not /tmp
    # without save_to nothing is kept: the folder goes with the run
    folder = run.path
    assert folder.is_dir()
    del run
    gc.collect()
    assert not folder.exists()
    # an already-jitted function, saved where asked, twice (a notebook cell re-run)
    for _ in range(2):
        saved = hloscope.inspect(jax.jit(layer), w, x, save_to=tmp_path / "saved")
        assert saved.path == tmp_path / "saved"
        _check(saved, "jax")
    assert sorted(p.name for p in (tmp_path / "saved").iterdir()) == ["dump", "run.json"]


@pytest.mark.tf
def test_inspect_tensorflow(tmp_path: Path) -> None:
    tf = pytest.importorskip("tensorflow")

    def dense_relu(x: object, w: object) -> object:
        return tf.nn.relu(tf.matmul(x, w) + 1.0)

    x, w = tf.ones((4, 16)), tf.ones((16, 8))
    run = hloscope.inspect(dense_relu, x, w, save_to=tmp_path / "tf")
    _check(run, "tensorflow")
    assert run.modules[0].name.startswith("a_inference_dense_relu_")
    assert not run.manifest.compiles and "only in its log" in run.manifest.compile_notes[0]
    after = run.run.modules[0].load_after()
    assert after is not None and "fusion" in {i.opcode for _, i in after.instructions()}
    wrapped = hloscope.inspect(tf.function(dense_relu, jit_compile=True), x, w)
    _check(wrapped, "tensorflow")


def test_framework_detection_and_refusals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class FakeTensor:  # stands in for a framework type without importing one
        pass

    FakeTensor.__module__ = "tensorflow.python.framework.ops"
    assert framework_of_call(lambda x: x, ([{"a": FakeTensor()}],)) == "tensorflow"
    FakeTensor.__module__ = "jaxlib._jax"
    assert framework_of_call(lambda x: x, (FakeTensor(),)) == "jax"
    for name in ("tensorflow", "jax", "torch_xla"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    assert framework_of_call(lambda x: x, (1.0,)) is None
    with pytest.raises(UsageError, match="framework='tensorflow', 'jax' or 'torch'"):
        hloscope.inspect(lambda x: x, 1.0)
    with pytest.raises(UsageError, match="unknown framework 'mxnet'; expected 'tensorflow'"):
        hloscope.inspect(lambda x: x, 1.0, framework="mxnet")
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(UsageError, match="not empty"):
        hloscope.inspect(lambda x: x, 1.0, framework="jax", save_to=tmp_path)
