"""The synthetic GPU profile in tests/data is what its builder makes (needs TensorFlow's
XPlane protobuf module; the profile itself is read without it in test_attribution)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.timing.helpers import GPU_DERIVED, GPU_PROFILE, GPU_RAW, xplane_pb2


@pytest.mark.tf
def test_builder_reproduces_the_committed_profiles(tmp_path: Path) -> None:
    xplane_pb2()
    spec = importlib.util.spec_from_file_location("gpu_build", GPU_PROFILE / "build.py")
    assert spec is not None and spec.loader is not None
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    for variant, committed in (("raw", GPU_RAW), ("derived", GPU_DERIVED)):
        data = build.build(derived=variant == "derived").SerializeToString(deterministic=True)
        assert data == committed.read_bytes(), f"{variant}: rerun build.py (see HOW.md)"
