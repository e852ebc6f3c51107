"""Binary HLO dumps: the proto reader checked against XLA's own text of the same module."""

from __future__ import annotations

import json
import lzma
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from hloscope.errors import HloParseError, MissingDependencyError
from hloscope.hlo import proto
from hloscope.hlo.model import HloModule, Instruction, Shape
from hloscope.hlo.parser import parse_file, parse_module
from hloscope.hlo.proto import load_module_file, parse_proto, parse_proto_file
from tests.conftest import CORPUS, DATA, GPU

PAIRS = sorted((DATA / "jax_proto").glob("*.hlo.pb"))
ARCHIVE = GPU / "maxtext_fsdp4_h100.nsys-jax.zip"


def _shape_key(s: Shape) -> tuple[Any, ...]:
    # `text` differs only by XLA's `/*index=5*/` comments inside long tuples.
    layout = s.layout and (s.layout.minor_to_major, s.layout.tiles, s.layout.memory_space)
    return (s.element_type, s.dimensions, s.dynamic, layout, tuple(map(_shape_key, s.tuple_shapes)))


def _key(module: HloModule, i: Instruction) -> tuple[Any, ...]:
    md = i.metadata
    meta = md and (md.op_type, md.op_name, md.source_file, md.source_line, md.stack_frame_id)
    attrs = {
        k: i.attributes.get(k)
        for k in (
            "kind",
            "custom_call_target",
            "dimensions",
            "index",
            "slice",
            "direction",
            "window",
            "dim_labels",
            "feature_group_count",
            "batch_group_count",
            "lhs_batch_dims",
            "lhs_contracting_dims",
            "rhs_batch_dims",
            "rhs_contracting_dims",
        )
    }
    literal = i.literal if i.opcode == "parameter" or not i.shape.dimensions else ""
    return (
        i.name, i.opcode, _shape_key(i.shape), i.operands, i.called, i.is_root,
        meta, attrs, i.backend_config, literal, module.stack(i), module.source_location(i),
    )  # fmt: skip


def test_the_test_data_is_there() -> None:
    assert len(PAIRS) == 4


@pytest.mark.parametrize("path", PAIRS, ids=lambda p: p.name)
def test_proto_reads_what_xla_prints(path: Path) -> None:
    """Every instruction, with its opcode, shape, operands, called computations, backend
    config, metadata and source stack, equals what the text parser reads from XLA's text."""
    got = parse_proto_file(path)
    want = parse_file(path.with_name(path.name.removesuffix(".hlo.pb") + ".txt"))
    assert got.name == want.name
    assert got.entry.name == want.entry.name
    assert got.is_scheduled == want.is_scheduled
    assert got.instruction_count == want.instruction_count
    assert {c.name for c in got.computations} == {c.name for c in want.computations}
    for comp in got.computations:
        other = want.computation_map[comp.name]
        assert [i.name for i in comp.instructions] == [i.name for i in other.instructions]
        assert comp.root.name == other.root.name
        for inst in comp.instructions:
            assert _key(got, inst) == _key(want, other.by_name[inst.name])


def test_entry_layout_matches_the_header() -> None:
    path = next(p for p in PAIRS if "jit_layers.cpu_after" in p.name)
    got, want = parse_proto_file(path), parse_file(str(path).replace(".hlo.pb", ".txt"))
    assert got.attributes["entry_computation_layout"] == want.attributes["entry_computation_layout"]


def test_load_module_file_dispatches_by_suffix(tmp_path: Path) -> None:
    pb = PAIRS[0]
    xz = tmp_path / (pb.name + ".xz")
    xz.write_bytes(lzma.compress(pb.read_bytes()))
    text = pb.with_name(pb.name.removesuffix(".hlo.pb") + ".txt")
    a, b, c = load_module_file(pb), load_module_file(xz), load_module_file(text)
    assert a.instruction_count == b.instruction_count == c.instruction_count
    assert b.path == str(xz)


def test_a_bare_module_proto_reads_too() -> None:
    from google.protobuf import empty_pb2
    from google.protobuf.unknown_fields import UnknownFieldSet

    data = PAIRS[0].read_bytes()
    fields = UnknownFieldSet(empty_pb2.Empty.FromString(data))
    bare = next(f.data for f in fields if f.field_number == 1)  # HloProto.hlo_module
    a, b = parse_proto(bare), parse_proto(data)
    assert a.name == b.name and a.instruction_count == b.instruction_count > 0


def test_bad_bytes_are_a_parse_error(tmp_path: Path) -> None:
    bad = tmp_path / "x.hlo.pb"
    bad.write_bytes(b"\xff\xff\xff\xff garbage")
    with pytest.raises(HloParseError, match="not a binary HLO dump"):
        parse_proto_file(bad)
    with pytest.raises(HloParseError, match="no such file"):
        parse_proto_file(tmp_path / "missing.hlo.pb")
    xz = tmp_path / "x.hlo.pb.xz"
    xz.write_bytes(b"not xz")
    with pytest.raises(HloParseError, match="xz"):
        parse_proto_file(xz)


def test_missing_protobuf_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(proto, "_message_class", None)
    monkeypatch.setitem(sys.modules, "google.protobuf", None)
    with pytest.raises(MissingDependencyError, match="'protobuf'"):
        parse_proto(PAIRS[0].read_bytes())


def test_reading_a_proto_imports_no_framework() -> None:
    code = (
        "import sys; from hloscope.hlo.proto import parse_proto_file; "
        f"parse_proto_file({str(PAIRS[0])!r}); "
        "print(sorted(m for m in ('tensorflow', 'jax', 'jaxlib') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _corpus() -> list[str]:
    manifest = CORPUS / "MANIFEST.json"
    if not manifest.exists():
        return []
    return [e["file"] for e in json.loads(manifest.read_text()) if e["xla_parses"]]


@pytest.mark.jax
@pytest.mark.skipif(not (CORPUS / "MANIFEST.json").exists(), reason="../shared/corpus absent")
@pytest.mark.parametrize("name", _corpus())
def test_corpus_protos_read_like_xlas_text(name: str) -> None:
    """XLA's own serialization of each corpus module, read here, equals our text parser's
    reading of XLA's own printing of the same module (XLA renames duplicates, so both
    sides come from XLA)."""
    hlo = pytest.importorskip("jaxlib._hlo")
    xla = hlo.hlo_module_from_text((CORPUS / name).read_text())
    got = parse_proto(xla.as_serialized_hlo_module_proto())
    want = parse_module(xla.to_string())
    assert got.instruction_count == want.instruction_count
    assert {c.name for c in got.computations} == {c.name for c in want.computations}
    for comp in got.computations:
        other = want.computation_map[comp.name]
        for inst in comp.instructions:
            assert _key(got, inst) == _key(want, other.by_name[inst.name])


# --- the real nsys-jax archive ----------------------------------------------------------


def _generic(data: bytes) -> list[tuple[str, list[tuple[str, str]]]]:
    """(computation, [(instruction, opcode)]) by protobuf's schema-less decoding: an empty
    message keeps every field unknown; only hlo.proto's field numbers are used."""
    from google.protobuf import empty_pb2
    from google.protobuf.unknown_fields import UnknownFieldSet

    def fields(raw: bytes) -> list[Any]:
        return list(UnknownFieldSet(empty_pb2.Empty.FromString(raw)))

    def first(raw: bytes, number: int) -> bytes:
        return next(f.data for f in fields(raw) if f.field_number == number)

    module = first(data, 1)  # HloProto.hlo_module
    out = []
    for comp in (f.data for f in fields(module) if f.field_number == 3):
        insts = [
            (first(i, 1).decode(), first(i, 2).decode())
            for i in (f.data for f in fields(comp) if f.field_number == 2)
        ]
        out.append((first(comp, 1).decode(), insts))
    return out


@pytest.fixture(scope="module")
def archive_dump(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    if not ARCHIVE.exists():
        pytest.skip(f"real GPU data absent: {ARCHIVE} (see ../shared/gpu/README.md)")
    folder = tmp_path_factory.mktemp("nsys")
    with zipfile.ZipFile(ARCHIVE) as z:
        names = [n for n in z.namelist() if n.endswith(".hlo.pb.xz")]
        z.extractall(folder, names)
    return sorted(folder.glob("dump/*.hlo.pb.xz"))


def test_real_archive_matches_generic_decoding(archive_dump: list[Path]) -> None:
    """All 26 binary modules of the MaxText run: computations, instruction names and
    opcodes equal protobuf's own schema-less decoding of the same bytes."""
    assert len(archive_dump) == 26
    for path in archive_dump:
        module = parse_proto_file(path)
        want = _generic(lzma.decompress(path.read_bytes()))
        got = [
            (c.name, Counter((i.name, i.opcode) for i in c.instructions))
            for c in module.computations
        ]
        assert got == [(name, Counter(insts)) for name, insts in want], path.name
        assert module.stats.total == 0


def test_real_train_step_is_whole(archive_dump: list[Path]) -> None:
    path = next(p for p in archive_dump if "jit_train_step.sm_9.0_gpu_after" in p.name)
    module = parse_proto_file(path)
    assert module.is_scheduled
    assert module.instruction_count == 7757  # as TensorFlow's hlo_pb2 decodes it
    for comp in module.computations:
        names = comp.by_name
        for inst in comp.instructions:
            assert all(o in names for o in inst.operands), (comp.name, inst.name)
            assert all(c.name in module.computation_map for c in inst.called)


@pytest.mark.jax
def test_scalar_constants_print_as_xla_prints_them() -> None:
    hlo = pytest.importorskip("jaxlib._hlo")
    values = [
        ("bf16", "0.1"), ("f16", "0.1"), ("f32", "0.1"), ("f64", "0.1"), ("f32", "1e-20"),
        ("bf16", "3.14159"), ("f16", "65504"), ("f32", "123456789"), ("f32", "0.000244140625"),
        ("f32", "1e20"), ("s8", "-3"), ("u8", "200"), ("s16", "-300"), ("u16", "60000"),
        ("f32", "-inf"), ("pred", "true"), ("s64", "-5"), ("u64", "7"),
    ]  # fmt: skip
    lines = [f"  c{n} = {t}[] constant({v})" for n, (t, v) in enumerate(values)]
    names = ", ".join(f"c{n}" for n in range(len(values)))
    shapes = ", ".join(f"{t}[]" for t, _ in values)
    text = (
        "HloModule m\nENTRY e {\n"
        + "\n".join(lines)
        + f"\n  ROOT t = ({shapes}) tuple({names})\n}}"
    )
    xla = hlo.hlo_module_from_text(text)
    got = parse_proto(xla.as_serialized_hlo_module_proto()).entry.by_name
    want = parse_module(xla.to_string()).entry.by_name
    for n in range(len(values)):
        assert got[f"c{n}"].literal == want[f"c{n}"].literal, values[n]


def test_an_xz_bomb_is_a_parse_error_in_bounded_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import lzma
    import tracemalloc

    import hloscope.hlo.proto as proto

    bomb = tmp_path / "module_0000.jit_f.before_optimizations.hlo.pb.xz"
    bomb.write_bytes(lzma.compress(bytes(64 << 20)))  # 64 MiB of zeros in ~10 kB
    monkeypatch.setattr(proto, "MAX_DUMP_BYTES", 1 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(HloParseError, match="decompresses to more than the 1,048,576"):
            proto.parse_proto_file(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 24 << 20  # the xz dictionary (8 MiB) and 1 MiB of output; not 64 MiB


# ---------------------------------------------------------------------------------------
# torch_xla: stack frames only in the binary dump beside the text


def _hlo_module_bytes(hlo_proto: bytes) -> bytes:
    """Field 1 (`hlo_module`) of a serialized HloProto."""
    assert hlo_proto[0] == 0x0A
    i, n, shift = 1, 0, 0
    while True:
        b = hlo_proto[i]
        n |= (b & 0x7F) << shift
        i, shift = i + 1, shift + 7
        if b < 0x80:
            return hlo_proto[i : i + n]


@pytest.mark.jax
@pytest.mark.parametrize(
    "text", sorted((DATA / "torch_mlp" / "dump").glob("*.txt")), ids=lambda p: p.name
)
def test_torch_xla_frames_come_from_the_binary_dump_beside(text: Path) -> None:
    """torch_xla's XLA prints no stack frames; XLA (jaxlib's, reading the binary dump
    beside) prints them: every instruction gets the stack XLA gives it, nothing else
    changes."""
    hlo = pytest.importorskip("jaxlib._hlo")
    plain = parse_file(text)
    assert not plain.stack_frames
    assert all(
        i.metadata is None or i.metadata.stack_frame_id is None for _, i in plain.instructions()
    )
    grafted = proto.with_stack_frames(plain)
    beside = proto.proto_beside(text)
    assert beside is not None and beside.name.endswith(".hlo.pb.xz")
    xla = hlo.HloModule.from_serialized_hlo_module_proto(
        _hlo_module_bytes(lzma.decompress(beside.read_bytes()))
    )
    want = parse_module(xla.to_string())
    assert want.stack_frames
    got_insts = dict(((c.name, i.name), i) for c, i in grafted.instructions())
    framed = 0
    for comp, inst in want.instructions():
        ours = got_insts[(comp.name, inst.name)]
        assert grafted.stack(ours) == want.stack(inst), inst.name
        framed += bool(want.stack(inst))
    assert framed > 0
    assert [(c.name, i.name, i.opcode, i.attributes) for c, i in grafted.instructions()] == [
        (c.name, i.name, i.opcode, i.attributes) for c, i in plain.instructions()
    ]


def test_frames_are_not_grafted_without_a_readable_dump_beside(tmp_path: Path) -> None:
    src = sorted((DATA / "torch_mlp" / "dump").glob("module_0000*before_optimizations.txt"))[0]
    text = tmp_path / src.name
    text.write_bytes(src.read_bytes())
    module = parse_file(text)
    assert proto.with_stack_frames(module) is module  # nothing beside
    (tmp_path / (src.name[: -len(".txt")] + ".hlo.pb")).write_bytes(b"\x0a\x05junk!")
    assert proto.with_stack_frames(module) is module  # unreadable beside


WINDOWED = """HloModule w, is_scheduled=true

%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}

ENTRY %main (x: f32[2,56,56,64], k: f32[3,3,16,64], y: f32[4,8,16], z: f32[4,16,32]) -> (f32[2,28,28,64], f32[2,28,28,64], f32[4,8,32]) {
  %x = f32[2,56,56,64]{3,2,1,0} parameter(0)
  %k = f32[3,3,16,64]{3,2,1,0} parameter(1)
  %y = f32[4,8,16]{2,1,0} parameter(2)
  %z = f32[4,16,32]{2,1,0} parameter(3)
  %c = f32[2,28,28,64]{3,2,1,0} convolution(%x, %k), window={size=3x3 stride=2x2 pad=0_1x0_1 rhs_dilate=1x2}, dim_labels=b01f_01io->b01f, feature_group_count=4
  %i = f32[] constant(0)
  %r = f32[2,28,28,64]{3,2,1,0} reduce-window(%x, %i), window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x0_1x0_1x0_0 lhs_dilate=1x1x1x1}, to_apply=%max
  %d = f32[4,8,32]{2,1,0} dot(%y, %z), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  ROOT %t = (f32[2,28,28,64]{3,2,1,0}, f32[2,28,28,64]{3,2,1,0}, f32[4,8,32]{2,1,0}) tuple(%c, %r, %d)
}
"""


@pytest.mark.jax
def test_windows_convolution_and_dot_dimensions_read_as_xla_prints_them() -> None:
    """XLA's own proto of a module (jaxlib's parser) reads back with the window, the
    convolution's dim_labels and group count and the dot's dimensions that XLA's text
    prints, so that FLOPs of binary dumps (and of the HLO a profile carries) are right."""
    hlo = pytest.importorskip("jaxlib._hlo")
    xla = hlo.hlo_module_from_text(WINDOWED)
    got = parse_proto(xla.as_serialized_hlo_module_proto())
    want = parse_module(xla.to_string())
    for name in ("c", "r", "d"):
        assert _key(got, got.entry.by_name[name]) == _key(want, want.entry.by_name[name]), name
    assert got.entry.by_name["c"].attributes["window"] == (
        "{size=3x3 stride=2x2 pad=0_1x0_1 rhs_dilate=1x2}"
    )
