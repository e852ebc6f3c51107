"""Devices and collectives read from the HLO, checked against XLA's own parse (the
`HloModuleProto` jaxlib's C++ parser makes of the same text: its replica groups, its
iota device lists and its operand shapes) and against what ran: the four-device JAX
profile in tests/data/jax_four_devices_profile (see its HOW.md)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from hloscope.analysis.fusion import analyze_module
from hloscope.analysis.parallel import group_shape, parallelism
from hloscope.hlo.parser import parse_file, parse_module
from hloscope.timing.xplane import find_profile, read_trace
from tests.conftest import CORPUS, DATA

FOUR = DATA / "jax_four_devices_profile"

_BYTES = {"F32": 4, "BF16": 2, "F16": 2, "S32": 4, "U32": 4, "F64": 8, "S8": 1, "U8": 1}
_BYTES |= {"PRED": 1, "S64": 8, "U64": 8}


def _proto(path: Path) -> Any:
    hlo = pytest.importorskip("jaxlib._hlo")
    hlo_pb2 = pytest.importorskip("tensorflow.compiler.xla.service.hlo_pb2")
    xla_data = pytest.importorskip("tensorflow.compiler.xla.xla_data_pb2")
    try:
        module = hlo.hlo_module_from_text(path.read_text())
    except Exception:  # a corpus file XLA's parser does not take whole
        return None, xla_data
    proto = hlo_pb2.HloModuleProto()
    proto.ParseFromString(module.as_serialized_hlo_module_proto())
    return proto, xla_data


def _oracle_groups(i: Any) -> tuple[int | None, int | None] | None:
    """(group size, groups) from XLA's parse: its explicit groups or its iota list; None
    when the proto leaves them out (empty groups, or a spelling this proto predates)."""
    listed = i.replica_groups or i.collective_device_list.replica_groups
    if listed:
        sizes = {len(g.replica_ids) for g in listed}
        return (sizes.pop() if len(sizes) == 1 else None), len(listed)
    for iota in (i.iota_collective_device_list, i.collective_device_list.iota_replica_group_list):
        if iota.num_replica_groups:
            return iota.num_devices_per_group, iota.num_replica_groups
    return None


def _shape_bytes(shape: Any, xla_data: Any) -> int:
    if shape.tuple_shapes:
        return sum(_shape_bytes(s, xla_data) for s in shape.tuple_shapes)
    name = xla_data.PrimitiveType.Name(shape.element_type)
    return math.prod(shape.dimensions) * _BYTES.get(name, 0)


def _files() -> list[Path]:
    corpus = sorted((CORPUS / "hlo").glob("*")) if CORPUS.is_dir() else []
    return corpus + sorted(FOUR.glob("dump/*.cpu_after_optimizations.txt"))


def test_group_sizes_and_bytes_equal_xla_parse() -> None:
    """Every collective with groups in XLA's parse has the same group size and number
    of groups here, and puts in the bytes of its operands as XLA shapes them."""
    checked = 0
    for path in _files():
        try:
            module = parse_file(path)
        except Exception:  # the corpus holds files hloscope reads module by module
            continue
        proto, xla_data = _proto(path)
        if proto is None:
            continue
        by_name = {i.name: i for c in proto.computations for i in c.instructions}
        by_id = {i.id: i for i in by_name.values()}
        p = parallelism(module, analyze_module(module))
        for _, inst in module.instructions():
            if "replica_groups" not in inst.attributes or inst.name not in by_name:
                continue
            want = _oracle_groups(by_name[inst.name])
            if want is None:
                continue
            got = group_shape(inst, p.replicas if p else 1, p.partitions if p else 1)
            assert got == want, (path.name, inst.name)
            checked += 1
        for c in p.collectives if p else ():
            i = by_name.get(c.name)
            if i is None or not i.opcode.startswith(("all-", "reduce-scatter", "collective")):
                continue
            operands = sum(_shape_bytes(by_id[o].shape, xla_data) for o in i.operand_ids)
            assert c.bytes_per_device == operands, (path.name, c.name)
    # XLA's corpus (../shared/corpus, where present) holds most; the 4-device sample two
    assert checked >= (20 if CORPUS.is_dir() else 2)


def test_header_counts() -> None:
    module = parse_module(
        "HloModule m, replica_count=2, num_partitions=4\n\n"
        "ENTRY e {\n  p = f32[8]{0} parameter(0), sharding={devices=[4]<=[4]}\n"
        "  ROOT ar = f32[8]{0} all-reduce(p), replica_groups={}, to_apply=add\n}\n"
        "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT s = f32[] add(a, b)\n}\n"
    )
    p = parallelism(module, analyze_module(module))
    assert p is not None and (p.replicas, p.partitions, p.devices) == (2, 4, 8)
    assert p.shardings == (("p", "devices=[4]<=[4]"),)
    # empty groups without a channel id: every replica, one group
    (ar,) = p.collectives
    assert (ar.group_size, ar.groups, ar.bytes_per_device) == (2, 1, 32)


def test_one_device_and_no_collective_is_none() -> None:
    module = parse_file(next(FOUR.glob("dump/*jit__multi_slice.cpu_after*")))
    assert parallelism(module, analyze_module(module)) is None


def test_collectives_join_the_devices_that_ran_them() -> None:
    """The mesh-spelled group of `jit_gather` (`mesh['axis_0'=4,'axis_1'=1]
    {'axis_0'}`) and the listed `{{0,1,2,3}}` of the psums: each all-reduce ran on as
    many devices as its group holds, in the profile."""
    trace = read_trace(find_profile(FOUR))
    ran: dict[tuple[str, str], set[int]] = {}
    for e in trace.events:
        if "hlo_op" in e.stats:
            key = (str(e.stats["hlo_module"]), str(e.stats["hlo_op"]))
            ran.setdefault(key, set()).add(int(e.stats["device_ordinal"]))
    checked = 0
    for path in FOUR.glob("dump/*.cpu_after_optimizations.txt"):
        module = parse_file(path)
        p = parallelism(module, analyze_module(module))
        for c in p.collectives if p else ():
            assert c.group_size == len(ran[(module.name, c.name)]) == 4, c
            assert c.groups == 1 and p is not None and p.partitions == 4
            checked += 1
    assert checked == 3
