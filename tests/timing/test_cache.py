"""Timings kept in the run folder: equal to a fresh read, recomputed when the profile or
the settings change, never in the way when the folder cannot be written."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from hloscope.capture.run import TIMINGS_CACHE
from hloscope.store import keep
from hloscope.timing.attribution import attribute
from hloscope.timing.cache import (
    cached_timings,
    profile_timings,
)
from hloscope.timing.results import ProfileTimings
from hloscope.timing.xplane import find_profiles, read_trace
from tests.conftest import GPU
from tests.timing.helpers import JAX_PROFILE, JAX_XPLANE, TF_PROFILE

TPU = GPU / "xprof_tpu_inference_2.xplane.pb"


def _run(tmp_path: Path, profile: Path = JAX_PROFILE) -> Path:
    """A run folder holding a copy of a captured profile."""
    run = tmp_path / "run"
    shutil.copytree(profile, run / "profile")
    (run / "run.json").write_text("{}")
    return run


@pytest.mark.parametrize("profile", [JAX_PROFILE, TF_PROFILE, TPU], ids=["jax", "tf", "tpu"])
def test_timings_survive_the_round_trip_through_json(profile: Path) -> None:
    if not profile.exists():
        pytest.skip(f"{profile} not found (see ../shared/gpu/README.md)")
    timings = attribute(read_trace(find_profiles(profile)[0]))
    assert timings.modules
    doc = json.loads(json.dumps(timings.to_json()))
    assert ProfileTimings.from_json(doc) == timings


def test_cached_timings_are_computed_once_per_profile_and_settings(tmp_path: Path) -> None:
    run = _run(tmp_path)
    calls: list[int] = []

    def compute() -> ProfileTimings:
        calls.append(1)
        return attribute(read_trace(next(run.rglob("*.xplane.pb"))))

    files = find_profiles(run)
    first = cached_timings(files, {"skip_first": 1}, compute)
    again = cached_timings(files, {"skip_first": 1}, compute)
    assert len(calls) == 1 and again == first and (run / TIMINGS_CACHE).is_file()
    cached_timings(files, {"skip_first": 0}, compute)  # other settings: computed
    assert len(calls) == 2
    # touched, the same content: read back
    xplane = next(run.rglob("*.xplane.pb"))
    stat = xplane.stat()
    os.utime(xplane, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    cached_timings(files, {"skip_first": 1}, compute)
    assert len(calls) == 2
    # another profile of the same size and time in the same place: computed again
    data = bytearray(xplane.read_bytes())
    data[-1] ^= 1
    xplane.write_bytes(bytes(data))
    os.utime(xplane, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    cached_timings(files, {"skip_first": 1}, compute)
    assert len(calls) == 3


def test_profile_timings_equal_a_fresh_read_and_come_from_the_cache(tmp_path: Path) -> None:
    run = _run(tmp_path)
    fresh = attribute(read_trace(JAX_XPLANE), skip_first=0)
    first = profile_timings(run, skip_first=0)
    assert first.modules == fresh.modules
    doc = json.loads((run / TIMINGS_CACHE).read_text())
    ((key, entry),) = doc["entries"].items()
    # poison the kept figures (kept as hloscope keeps them, signed): a second read must
    # return them, not re-read the profile
    value = entry["value"]
    value["modules"]["jit_mlp"]["total_us"] = 4321.0
    keep(run / TIMINGS_CACHE, key, value, limit=1 << 30, max_entries=4)
    assert profile_timings(run, skip_first=0).modules["jit_mlp"].total_us == 4321.0
    # the same figure edited in place, unsigned (a forger's edit): computed again
    entry["value"]["modules"]["jit_mlp"]["total_us"] = 999.0
    (run / TIMINGS_CACHE).write_text(json.dumps(doc))
    assert (
        profile_timings(run, skip_first=0).modules["jit_mlp"].total_us
        == first.modules["jit_mlp"].total_us
    )
    assert profile_timings(run, skip_first=1).modules["jit_mlp"].total_us > 0


def test_a_broken_or_foreign_cache_is_recomputed(tmp_path: Path) -> None:
    run = _run(tmp_path)
    (run / TIMINGS_CACHE).write_text("{not json")
    assert profile_timings(run).modules == attribute(read_trace(JAX_XPLANE)).modules
    (run / TIMINGS_CACHE).write_text(json.dumps({"version": 999, "entries": {"x": 1}}))
    assert profile_timings(run).modules == attribute(read_trace(JAX_XPLANE)).modules


def test_outside_a_run_or_where_it_cannot_be_written_nothing_is_kept(tmp_path: Path) -> None:
    bare = tmp_path / "logdir"
    shutil.copytree(JAX_PROFILE, bare)
    assert profile_timings(bare).modules == attribute(read_trace(JAX_XPLANE)).modules
    assert not list(tmp_path.rglob(TIMINGS_CACHE))
    run = _run(tmp_path)
    (run / TIMINGS_CACHE).mkdir()  # in the way of the write (as a read-only folder is)
    assert profile_timings(run).modules == attribute(read_trace(JAX_XPLANE)).modules
    assert (run / TIMINGS_CACHE).is_dir() and not list(run.glob("*.tmp"))
