"""`module_stats` (what `hloscope parse` counts) on real dumps, each count checked against
XLA's own parser (`jaxlib._hlo`) reading the same file: instructions per computation, the
entry, the computations fusions call, fusions by kind, the opcode histogram."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from hloscope.analysis.stats import module_stats
from hloscope.hlo.parser import parse_file
from tests.conftest import dump_file
from tests.hlo.test_parser import _xla_view

FILES = [
    ("jax_mlp", "module_0030.jit_mlp.before_optimizations.txt"),
    ("jax_mlp", "module_0030.jit_mlp.cpu_after_optimizations.txt"),
    ("jax_mlp_no_fusion_pass", "module_0030.jit_mlp.cpu_after_optimizations.txt"),
    ("jax_mlp", "module_0004.jit__threefry_split.cpu_after_optimizations.txt"),
    ("jax_transformer_block", "module_0032.jit_block.cpu_after_optimizations.txt"),
    ("tf_resnet50", "*.cpu_after_optimizations.txt"),
    ("tf_dense_relu", "*.before_optimizations.txt"),
]


def _xla_fusions(path: Path) -> list[tuple[str, str]]:
    """`(kind, called computation)` of every fusion instruction, as XLA prints them."""
    hlo = pytest.importorskip("jaxlib._hlo")
    module = hlo.hlo_module_from_text(path.read_text())
    out = []
    for comp in module.computations():
        for inst in comp.instructions():
            if str(inst.opcode).endswith("kFusion"):
                text = inst.to_string()
                kind = re.search(r"\bkind=(\w+)", text)
                calls = re.search(r"\bcalls=%?([\w.\-]+)", text)
                assert kind and calls, text
                out.append((kind[1], calls[1]))
    return out


def _xla_header(path: Path) -> tuple[str, bool]:
    """The entry computation's name and whether the module is scheduled, as XLA prints."""
    hlo = pytest.importorskip("jaxlib._hlo")
    printed = hlo.hlo_module_from_text(path.read_text()).to_string()
    entry = re.search(r"^ENTRY %?([\w.\-]+)", printed, re.M)
    assert entry is not None
    return entry[1], "is_scheduled=true" in printed.splitlines()[0]


@pytest.fixture(params=FILES, ids=lambda f: f"{f[0]}/{f[1]}")
def path(request: Any) -> Path:
    folder, pattern = request.param
    return dump_file(folder, pattern)


def test_counts_match_xla_parser(path: Path) -> None:
    stats = module_stats(parse_file(path))
    xla = _xla_view(path.read_text())
    assert {c.name: c.instructions for c in stats.computations} == {
        name: len(insts) for name, insts in xla.items()
    }
    assert stats.instructions == sum(len(insts) for insts in xla.values())
    xla_opcodes = Counter(op for insts in xla.values() for _, op, _ in insts)
    assert stats.opcodes == dict(xla_opcodes)
    assert list(stats.opcodes.values()) == sorted(stats.opcodes.values(), reverse=True)
    assert stats.not_understood == 0


def test_entry_fusions_and_schedule_match_xla_parser(path: Path) -> None:
    stats = module_stats(parse_file(path))
    entry, scheduled = _xla_header(path)
    assert [c.name for c in stats.computations if c.is_entry] == [entry]
    assert stats.is_scheduled == scheduled == ("after_optimizations" in path.name)
    fusions = _xla_fusions(path)
    assert stats.fusions_by_kind == dict(Counter(kind for kind, _ in fusions))
    assert {c.name for c in stats.computations if c.is_fused} == {called for _, called in fusions}
    assert stats.name == parse_file(path).name and stats.path == str(path)
