"""Paths to the captured profiles and helpers for the timing tests."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "data"
JAX_PROFILE = DATA / "jax_mlp_profile"
TF_PROFILE = DATA / "tf_dense_relu_profile"
GPU_PROFILE = DATA / "gpu_synthetic_profile"
JAX_XPLANE = next(JAX_PROFILE.rglob("*.xplane.pb"))
JAX_TRACE_JSON = next(JAX_PROFILE.rglob("*.trace.json.gz"))
TF_XPLANE = next(TF_PROFILE.rglob("*.xplane.pb"))
GPU_RAW = next((GPU_PROFILE / "raw").rglob("*.xplane.pb"))
GPU_DERIVED = next((GPU_PROFILE / "derived").rglob("*.xplane.pb"))


def needs(package: str) -> None:
    """Skip unless `package` can be imported (without importing it)."""
    if importlib.util.find_spec(package) is None:
        pytest.skip(f"{package} is not installed")


def xplane_pb2():  # type: ignore[no-untyped-def]
    """TensorFlow's generated XPlane module, or skip."""
    needs("tensorflow")
    return pytest.importorskip("tensorflow.tsl.profiler.protobuf.xplane_pb2")
