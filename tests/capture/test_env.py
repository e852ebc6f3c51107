"""Tests for telling framework, platform and device from the child report and dumps."""

from __future__ import annotations

from hloscope.capture.env import cpu_model, detect_device, detect_platform, framework_of_run
from hloscope.frameworks import join_frameworks
from hloscope.runs import ModuleDump, load_run
from tests.conftest import DATA


def _module(name: str, platform: str | None = "cpu") -> ModuleDump:
    return ModuleDump(name, "0000", None, None, platform)


def test_framework_from_versions_and_names() -> None:
    tf = [_module("a_inference_f_12__XlaMustCompile_true_.1")]
    jax = [_module("jit_mlp")]
    assert join_frameworks(framework_of_run({"tensorflow": "2.21.0"}, tf)) == "tensorflow"
    assert join_frameworks(framework_of_run({"jax": "0.10.2"}, jax)) == "jax"
    # Keras 3 imports JAX next to TensorFlow: the module names decide.
    assert (
        join_frameworks(framework_of_run({"tensorflow": "2.21.0", "jax": "0.10.2"}, tf))
        == "tensorflow"
    )
    assert (
        join_frameworks(framework_of_run({"tensorflow": "2.21.0", "jax": "0.10.2"}, tf + jax))
        == "jax+tensorflow"
    )
    assert join_frameworks(framework_of_run({}, jax)) == "jax"
    assert join_frameworks(framework_of_run({"jax": "0.10.2"}, [])) == "jax"
    assert framework_of_run({}, []) == ()


def test_platform_from_dump_names_then_devices() -> None:
    assert detect_platform(load_run(DATA / "jax_mlp").modules) == "cpu"
    assert detect_platform([_module("jit_f", "sm_90")]) == "sm_90"
    gpu = [
        {"framework": "jax", "platform": "gpu", "kind": "NVIDIA H200", "compute_capability": "9.0"}
    ]
    assert detect_platform([], gpu) == "sm_90"
    assert detect_platform([], [{"platform": "cpu"}]) == "cpu"
    assert detect_platform([], []) is None


def test_device_names() -> None:
    gpus = [
        {"framework": "jax", "platform": "gpu", "kind": "NVIDIA H100"},
        {"framework": "jax", "platform": "gpu", "kind": "NVIDIA H100"},
        {"framework": "tensorflow", "platform": "gpu", "kind": "NVIDIA H100"},
    ]
    assert detect_device("sm_90", gpus) == "2x NVIDIA H100"
    assert detect_device("sm_90", gpus[:1]) == "NVIDIA H100"
    assert detect_device("cpu", []) == cpu_model()
    assert detect_device(None, []) is None
