"""Binary HLO dumps that describe a broken module (issue 25): each is refused with an
`HloParseError` naming the file and what is wrong, as XLA's own loaders refuse them,
never a RecursionError, a KeyError or memory running out.

Each case is a real dump (tests/data/jax_proto, see its HOW.md) decoded with the proto
reader's own schema, changed in one place, and written back.
"""

from __future__ import annotations

import lzma
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hloscope.errors import HloParseError
from hloscope.files import MAX_EXPANSION
from hloscope.hlo import proto
from hloscope.hlo.proto import parse_proto_file
from tests.conftest import DATA

# A module with fusions, a while loop and a sort (module_0012.jit__lambda after).
SEED = DATA / "jax_proto" / "module_0012.jit__lambda.cpu_after_optimizations.hlo.pb"


def _changed(tmp_path: Path, change: Callable[[Any], None], name: str = "x.hlo.pb") -> Path:
    message = proto._classes()[0].FromString(SEED.read_bytes())
    change(message.hlo_module)
    path = tmp_path / name
    path.write_bytes(message.SerializeToString())
    return path


def _fusion(m: Any) -> tuple[Any, Any]:
    """The first fusion instruction and the computation it is in."""
    for c in m.computations:
        for i in c.instructions:
            if i.opcode == "fusion":
                return c, i
    raise AssertionError("the seed has a fusion")


def _self_fusion(m: Any) -> None:
    _, inst = _fusion(m)
    called = next(c for c in m.computations if c.id == inst.called_computation_ids[0])
    inner = called.instructions[-1]
    inner.opcode = "fusion"
    inner.called_computation_ids.append(called.id)  # the fused computation fuses itself


def _call_cycle(m: Any) -> None:
    comp, inst = _fusion(m)
    called = next(c for c in m.computations if c.id == inst.called_computation_ids[0])
    called.instructions[-1].called_computation_ids.append(comp.id)  # calls its caller


def _duplicate_computation(m: Any) -> None:
    m.computations[1].name = m.computations[0].name


def _duplicate_instruction(m: Any) -> None:
    insts = m.computations[-1].instructions
    insts[1].name = insts[0].name


def _operand_cycle(m: Any) -> None:
    insts = m.computations[-1].instructions
    insts[0].operand_ids.append(insts[-1].id)  # the first uses the root: a cycle


def _self_operand(m: Any) -> None:
    inst = m.computations[-1].instructions[-1]
    inst.operand_ids.append(inst.id)


def _missing_callee(m: Any) -> None:
    _fusion(m)[1].called_computation_ids[0] = 999_999


def _huge_dimension(m: Any) -> None:
    m.computations[-1].instructions[-1].shape.dimensions.append(2**62)


def _negative_dimension(m: Any) -> None:
    m.computations[-1].instructions[-1].shape.dimensions.append(-5)


def _deep_tuple(m: Any) -> None:
    shape = m.computations[-1].instructions[-1].shape
    shape.Clear()
    for _ in range(40):
        shape.element_type = 13  # TUPLE
        shape = shape.tuple_shapes.add()
    shape.element_type = 11


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_self_fusion, "calls itself"),
        (_call_cycle, "calls itself"),
        (_duplicate_computation, "is defined twice"),
        (_duplicate_instruction, "is defined twice"),
        (_operand_cycle, "comes after it"),
        (_self_operand, "comes after it"),
        (_missing_callee, "does not hold"),
        (_huge_dimension, "does not fit in 2\\^63 bytes"),
        (_negative_dimension, "bad dimension"),
        (_deep_tuple, "nested more than 32 deep"),
    ],
    ids=lambda x: getattr(x, "__name__", "")[1:],
)
def test_a_broken_module_is_refused_with_the_file_and_why(
    tmp_path: Path, change: Callable[[Any], None], message: str
) -> None:
    path = _changed(tmp_path, change)
    with pytest.raises(HloParseError, match=message) as error:
        parse_proto_file(path)
    assert str(error.value).startswith(str(path))


def test_the_unchanged_seed_reads(tmp_path: Path) -> None:
    # The cases above fail for their one change, not for the round trip.
    assert parse_proto_file(_changed(tmp_path, lambda m: None)).instruction_count > 20


def test_an_xz_bomb_stops_at_a_multiple_of_the_file(tmp_path: Path) -> None:
    """A few kilobytes of xz that expand to 300 MB of zeros: refused once the output
    passes MAX_EXPANSION times the file (64 MiB for a small one), not after."""
    path = tmp_path / "bomb.hlo.pb.xz"
    c = lzma.LZMACompressor(preset=1)
    chunk = b"\0" * (1 << 20)
    path.write_bytes(b"".join([*(c.compress(chunk) for _ in range(300)), c.flush()]))
    assert path.stat().st_size * MAX_EXPANSION < 300 << 20
    with pytest.raises(HloParseError, match="decompresses to more than"):
        parse_proto_file(path)
