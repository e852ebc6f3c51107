"""The fast XSpace reader (protobuf runtime, XLA events only) against the pure-Python
decoder of every event: the same timings, devices, programs and problems on every
captured profile, and the same errors on broken files."""

from __future__ import annotations

from pathlib import Path

import pytest

from hloscope.errors import ProfileReadError
from hloscope.timing import xspace_proto
from hloscope.timing.attribution import attribute
from hloscope.timing.xplane import read_trace, read_xspace, trace_from_xspace
from tests.conftest import GPU
from tests.timing.helpers import GPU_DERIVED, GPU_RAW, JAX_XPLANE, TF_XPLANE

PROFILES = {
    "jax": JAX_XPLANE,
    "tf": TF_XPLANE,
    "gpu-raw": GPU_RAW,
    "gpu-derived": GPU_DERIVED,
    "tpu": GPU / "xprof_tpu_inference_2.xplane.pb",
    "bert-gpu": GPU / "tfprofiler_bert_gpu_multi_worker.xplane.pb",
}


@pytest.fixture(autouse=True)
def _protobuf() -> None:
    if not xspace_proto.available():
        pytest.skip("the protobuf runtime is not installed")


@pytest.mark.parametrize("name", list(PROFILES))
def test_fast_read_gives_what_the_full_decode_gives(name: str) -> None:
    path = PROFILES[name]
    if not path.is_file():
        pytest.skip(f"{path} not found (see ../shared/gpu/README.md)")
    fast = read_trace(path, xla_only=True)
    full = read_trace(path)
    for field in ("programs", "hostnames", "start_ns", "stop_ns", "problems", "devices"):
        assert getattr(fast, field) == getattr(full, field), field
    assert fast.platforms == full.platforms
    assert len(fast.events) <= len(full.events)
    for skip_first in (0, 1):
        assert attribute(fast, skip_first=skip_first) == attribute(full, skip_first=skip_first)
    # the pure-Python decoder keeps the same events when asked for XLA events only
    slim = trace_from_xspace(read_xspace(path), path=str(path), xla_only=True)
    assert [(e.name, e.start_ps, e.duration_ps) for e in slim.events] == [
        (e.name, e.start_ps, e.duration_ps) for e in fast.events
    ]


def test_broken_files_are_one_clear_error(tmp_path: Path) -> None:
    data = JAX_XPLANE.read_bytes()
    cut = tmp_path / "cut.xplane.pb"
    cut.write_bytes(data[: len(data) // 2])
    junk = tmp_path / "junk.xplane.pb"
    junk.write_bytes(b"\xff" * 64)
    for path in (cut, junk):
        with pytest.raises(ProfileReadError, match="not an XSpace profile"):
            read_trace(path, xla_only=True)
        with pytest.raises(ProfileReadError, match="not an XSpace profile"):
            read_trace(path)
