"""Planned memory against XLA's own memory-usage reports (real dumps of the samples)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hloscope.analysis.memory import (
    OUTPUT,
    PARAMETER,
    TEMPORARY,
    memory_files,
    parse_buffer_assignment,
    read_memory,
)
from hloscope.errors import HloscopeError
from tests.conftest import DATA

FOLDER = DATA / "memory_reports"
AFTER = sorted(FOLDER.glob("*after_optimizations.txt"))
# every sample's model module (ResNet-50's after text lives in tests/data/tf_resnet50)
ASSIGNMENTS = sorted(FOLDER.glob("*-buffer-assignment.txt"))


def _xla_total(after: Path) -> int:
    """`Total bytes` as XLA wrote it in the memory-usage report, read independently."""
    text = memory_files(after)[1].read_text()
    return sum(int(t) for t in re.findall(r"^Total bytes(?: used)?:\s+(\d+)", text, re.M))


@pytest.mark.parametrize("assignment", ASSIGNMENTS, ids=lambda p: p.name[:30])
def test_peak_equals_xla_memory_usage_report(assignment: Path) -> None:
    after = assignment.with_name(assignment.name.replace("-buffer-assignment", ""))
    report = read_memory(after)
    assert report is not None
    assert report.total == _xla_total(after)  # the allocations' sum, not the report's line
    assert report.peak == report.total
    assert sum(report.by_kind.values()) == report.total


def test_every_sample_is_checked() -> None:
    names = " ".join(p.name for p in ASSIGNMENTS)
    for model in ("jit_block", "jit_mlp", "dense_relu", "recsys_scores", "lambda__4081"):
        assert model in names


def test_transformer_block_split_and_largest_buffers() -> None:
    (after,) = [p for p in AFTER if "jit_block" in p.name]
    report = read_memory(after)
    assert report is not None
    text = memory_files(after)[0].read_text()
    params = re.findall(r"^allocation \d+: size (\d+), parameter", text, re.M)
    assert report.by_kind[PARAMETER] == sum(map(int, params)) == 856576
    assert report.by_kind[OUTPUT] == 65536
    biggest = report.largest(1)[0]
    assert (biggest.size, biggest.kind) == (589824, TEMPORARY)  # the preallocated arena
    assert biggest.values[0].size == 262144  # the MLP's up-projection, f32[128,512]
    value, alloc = report.largest_values(1)[0]
    assert value.shape.startswith("f32[128,512]") and alloc.size >= value.size


def test_missing_files_are_none_and_garbage_is_an_error(tmp_path: Path) -> None:
    after = tmp_path / "module_0001.f.cpu_after_optimizations.txt"
    after.write_text("HloModule f\n")
    assert read_memory(after) is None
    memory_files(after)[0].write_text("not a buffer assignment\n")
    with pytest.raises(HloscopeError, match="no `allocation"):
        read_memory(after)
    with pytest.raises(HloscopeError):
        parse_buffer_assignment("")
