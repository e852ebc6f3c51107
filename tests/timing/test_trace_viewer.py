"""Kernel times equal XProf's trace viewer: the captured profiles are converted by
TensorFlow's own profiler plugin (`xspace_to_tools_data(..., "trace_viewer@")`, what
TensorBoard and XProf show) and timed from that Chrome trace; every kernel's calls and
total time must equal hloscope's read of the XSpace (through the protobuf runtime,
keeping only XLA events) to 0.0001 µs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hloscope.timing.attribution import attribute
from hloscope.timing.xplane import read_trace, trace_from_json
from tests.timing.helpers import JAX_XPLANE, TF_XPLANE, needs


@pytest.mark.slow
@pytest.mark.tf
@pytest.mark.parametrize("path", [JAX_XPLANE, TF_XPLANE], ids=["jax", "tf"])
def test_kernel_times_equal_the_trace_viewer(path: Path, tmp_path: Path) -> None:
    needs("tensorflow")
    plugin = pytest.importorskip("tensorflow.python.profiler.internal._pywrap_profiler_plugin")
    copy = tmp_path / path.name  # the converter leaves a cache file beside what it reads
    shutil.copyfile(path, copy)
    data, _ = plugin.xspace_to_tools_data([str(copy)], "trace_viewer@", {})
    viewer = attribute(trace_from_json(json.loads(data)), skip_first=0)
    ours = attribute(read_trace(path, xla_only=True), skip_first=0)
    assert set(viewer.modules) == set(ours.modules) and ours.modules
    for key, want in viewer.modules.items():
        got = ours.modules[key]
        assert got.executions == want.executions > 0
        assert {k.name for k in got.kernels} == {k.name for k in want.kernels}
        for k in want.kernels:
            mine = got.kernel(k.name)
            assert mine is not None and mine.calls == k.calls
            assert mine.total_us == pytest.approx(k.total_us, abs=1e-4), (key, k.name)
