"""The in-child profiling hooks: framework detection, and real profiles they record."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hloscope.capture.profiler import framework_from_imports, normalize_framework
from hloscope.timing.sources import load_profile
from tests.timing.helpers import needs

ROOT = Path(__file__).resolve().parents[2]
HOOKS = ROOT / "hloscope" / "capture" / "profiler.py"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import tensorflow as tf\n", "tensorflow"),
        ("from tensorflow.keras import layers\n", "tensorflow"),
        ("import keras\n", "tensorflow"),
        ("import os, jax.numpy as jnp\n", "jax"),
        ("from jax import lax\n", "jax"),
        ("import flax.linen as nn\n", "jax"),
        ("def f():\n    import jax\n", "jax"),
        ("import numpy as np\n", None),
        ("import tensorflow as tf\nimport jax\n", None),  # both: the caller must ask
        ('"""import jax"""\n# import tensorflow\nprint("import jax")\n', None),
        ("from .jax import x\nimport jaxtyping\n", None),
        ("import jax\nthis is not python (\n", "jax"),  # falls back to import lines
    ],
)
def test_framework_from_imports(source: str, expected: str | None) -> None:
    assert framework_from_imports(source) == expected


def test_framework_from_imports_on_the_samples() -> None:
    samples = ROOT / "samples"
    assert framework_from_imports((samples / "jax_mlp.py").read_text()) == "jax"
    assert framework_from_imports((samples / "dense_relu.py").read_text()) == "tensorflow"
    assert framework_from_imports((samples / "resnet50.py").read_text()) == "tensorflow"


def test_normalize_framework() -> None:
    assert normalize_framework("TF") == "tensorflow"
    assert normalize_framework("jax") == "jax"
    with pytest.raises(ValueError, match="unknown framework"):
        normalize_framework("torch")


def test_hooks_load_by_path_with_the_standard_library_only() -> None:
    # The dump bootstrap loads the hooks by path, under any Python, before the script.
    code = textwrap.dedent(f"""
        import importlib.util, sys
        spec = importlib.util.spec_from_file_location("hooks", {str(HOOKS)!r})
        hooks = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(hooks)
        assert hooks.framework_from_imports("import jax") == "jax"
        loaded = [m for m in sys.modules if m.split(".")[0] in ("hloscope", "tensorflow", "jax")]
        assert not loaded, loaded
    """)
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


_WRAPPER = """
import importlib.util, runpy, sys
spec = importlib.util.spec_from_file_location("hooks", {hooks!r})
hooks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hooks)
framework = hooks.framework_from_imports(open({script!r}).read())
hooks.start(framework, {logdir!r})
try:
    sys.argv = [{script!r}, "--calls", "3"]
    runpy.run_path({script!r}, run_name="__main__")
finally:
    hooks.stop(framework)
"""


def _profile_sample(sample: str, tmp_path: Path) -> Path:
    logdir = tmp_path / "profile"
    script = str(ROOT / "samples" / sample)
    code = _WRAPPER.format(hooks=str(HOOKS), script=script, logdir=str(logdir))
    env = dict(
        os.environ,
        TF_CPP_MIN_LOG_LEVEL="2",
        XLA_FLAGS=f"--xla_dump_to={tmp_path / 'hlo'} --xla_dump_hlo_as_text",
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300, env=env, cwd=ROOT)
    return tmp_path


@pytest.mark.jax
def test_jax_hooks_record_a_profile(tmp_path: Path) -> None:
    needs("jax")
    run = _profile_sample("jax_mlp.py", tmp_path)
    assert list(run.rglob("*.xplane.pb")) and list(run.rglob("*.trace.json.gz"))
    p = load_profile(run)
    m = p.module("jit_mlp")
    # 3 calls, the first (with compilation) left out as warm-up
    assert (m.executions, m.skipped) == (2, 1)
    assert m.static_launches == m.launches_per_execution and m.launch_mismatch is False


@pytest.mark.tf
def test_tensorflow_hooks_record_a_profile(tmp_path: Path) -> None:
    needs("tensorflow")
    if importlib.util.find_spec("tensorflow.tsl") is None:
        pytest.skip("this TensorFlow has no profiler")
    run = _profile_sample("dense_relu.py", tmp_path)
    p = load_profile(run)
    m = p.module("a_inference_dense_relu")
    assert (m.executions, m.skipped) == (2, 1)
    assert [k.name for k in m.kernels][:1] and m.launch_mismatch is False
