"""Binary HLO dumps (`*.hlo.pb`, `*.hlo.pb.xz`) -> the same model the text parser builds.

The second producer of `hloscope.hlo.model` objects, beside `hloscope.hlo.parser`: it reads
the `HloProto` (or bare `HloModuleProto`) that `--xla_dump_hlo_as_proto` and nsys-jax write,
with the `protobuf` package's compiled runtime and a minimal schema built here at run time,
and turns it into an `HloModule` directly. It never hands the bytes to XLA: older XLA wrote
module-wide instruction ids that make current jaxlib's proto loader abort the process, and
TensorFlow's bundled schema costs a five-second import.

The schema below is the subset of `xla/service/hlo.proto` and `xla/xla_data.proto`
(openxla/xla) that the model needs; protobuf skips every other field. Enums are read as
plain integers. Attributes are rebuilt as XLA's printer writes them, for the attributes
hloscope reads (`kind`, `calls`/`to_apply`/`condition`/`body`/..., `custom_call_target`,
`backend_config`, `metadata`, `dimensions`, `index`, `slice`, `direction`, a dot's
contracting and batch dimensions, a convolution's `dim_labels`, `window` and group
counts, ...); the rest (shardings, gather and scatter dimension numbers) are left out.
"""

from __future__ import annotations

import gc
import json
import lzma
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from hloscope.errors import HloParseError, HloscopeError, MissingDependencyError
from hloscope.files import decompress_xz, expansion_limit
from hloscope.hlo.calls import find_cycle
from hloscope.hlo.lexical import parse_shape
from hloscope.hlo.model import (
    CalledComputation,
    Computation,
    HloModule,
    Instruction,
    Metadata,
    ParseStats,
    Shape,
    SourceLocation,
    StackFrame,
)
from hloscope.hlo.opcodes import KNOWN_OPCODES
from hloscope.hlo.parser import parse_file
from hloscope.hlo.text import MAX_DUMP_BYTES, read_dump

__all__ = [
    "PROTO_SUFFIXES",
    "is_proto_path",
    "load_module_file",
    "parse_proto",
    "parse_proto_file",
    "proto_beside",
    "with_stack_frames",
]

PROTO_SUFFIXES = (".hlo.pb", ".hlo.pb.xz")

# message -> (field name, number, type, repeated). A type is a scalar type name or
# another message of this table. Numbers as in openxla/xla xla/service/hlo.proto and
# xla/xla_data.proto.
_SCHEMA: dict[str, list[tuple[str, int, str, bool]]] = {
    "HloProto": [("hlo_module", 1, "HloModuleProto", False)],
    "HloModuleProto": [
        ("name", 1, "string", False),
        ("entry_computation_name", 2, "string", False),
        ("computations", 3, "HloComputationProto", True),
        ("host_program_shape", 4, "ProgramShapeProto", False),
        ("id", 5, "int64", False),
        ("entry_computation_id", 6, "int64", False),
        ("schedule", 7, "HloScheduleProto", False),
        ("stack_frame_index", 17, "StackFrameIndexProto", False),
    ],
    "HloScheduleProto": [("sequences", 1, "SequenceEntry", True)],  # map<int64, ...>
    "SequenceEntry": [("key", 1, "int64", False), ("value", 2, "InstructionSequence", False)],
    "InstructionSequence": [("instruction_ids", 1, "int64", True)],
    "HloComputationProto": [
        ("name", 1, "string", False),
        ("instructions", 2, "HloInstructionProto", True),
        ("id", 5, "int64", False),
        ("root_id", 6, "int64", False),
        ("execution_thread", 8, "string", False),
    ],
    "HloInstructionProto": [
        ("name", 1, "string", False),
        ("opcode", 2, "string", False),
        ("shape", 3, "ShapeProto", False),
        ("metadata", 7, "OpMetadata", False),
        ("literal", 8, "LiteralProto", False),
        ("parameter_number", 9, "int64", False),
        ("fusion_kind", 11, "string", False),
        ("tuple_index", 13, "int64", False),
        ("dimensions", 14, "int64", True),
        ("slice_dimensions", 17, "SliceDimensions", True),
        ("dynamic_slice_sizes", 20, "int64", True),
        ("channel_id", 26, "int64", False),
        ("custom_call_target", 28, "string", False),
        ("window", 15, "Window", False),
        ("convolution_dimension_numbers", 16, "ConvolutionDimensionNumbers", False),
        ("dot_dimension_numbers", 30, "DotDimensionNumbers", False),
        ("feature_group_count", 50, "int64", False),
        ("batch_group_count", 58, "int64", False),
        ("id", 35, "int64", False),
        ("operand_ids", 36, "int64", True),
        ("control_predecessor_ids", 37, "int64", True),
        ("called_computation_ids", 38, "int64", True),
        ("backend_config", 43, "bytes", False),
        ("replica_groups", 49, "ReplicaGroup", True),
        ("comparison_direction", 63, "string", False),
        ("frontend_attributes", 68, "FrontendAttributes", False),
    ],
    "DotDimensionNumbers": [
        ("lhs_contracting_dimensions", 1, "int64", True),
        ("rhs_contracting_dimensions", 2, "int64", True),
        ("lhs_batch_dimensions", 3, "int64", True),
        ("rhs_batch_dimensions", 4, "int64", True),
    ],
    "ConvolutionDimensionNumbers": [
        ("kernel_input_feature_dimension", 3, "int64", False),
        ("kernel_output_feature_dimension", 4, "int64", False),
        ("kernel_spatial_dimensions", 6, "int64", True),
        ("input_batch_dimension", 7, "int64", False),
        ("input_feature_dimension", 8, "int64", False),
        ("output_batch_dimension", 9, "int64", False),
        ("output_feature_dimension", 10, "int64", False),
        ("input_spatial_dimensions", 11, "int64", True),
        ("output_spatial_dimensions", 12, "int64", True),
    ],
    "Window": [("dimensions", 1, "WindowDimension", True)],
    "WindowDimension": [
        ("size", 1, "int64", False),
        ("stride", 2, "int64", False),
        ("padding_low", 3, "int64", False),
        ("padding_high", 4, "int64", False),
        ("window_dilation", 5, "int64", False),
        ("base_dilation", 6, "int64", False),
        ("window_reversal", 7, "bool", False),
    ],
    "SliceDimensions": [
        ("start", 1, "int64", False),
        ("limit", 2, "int64", False),
        ("stride", 3, "int64", False),
    ],
    "ReplicaGroup": [("replica_ids", 1, "int64", True)],
    "FrontendAttributes": [("map", 1, "StringPair", True)],
    "StringPair": [("key", 1, "string", False), ("value", 2, "string", False)],
    "ShapeProto": [
        ("element_type", 2, "int32", False),
        ("dimensions", 3, "int64", True),
        ("tuple_shapes", 4, "ShapeProto", True),
        ("layout", 5, "LayoutProto", False),
        ("is_dynamic_dimension", 6, "bool", True),
    ],
    "LayoutProto": [
        ("minor_to_major", 1, "int64", True),
        ("tiles", 6, "TileProto", True),
        ("element_size_in_bits", 7, "int64", False),
        ("memory_space", 8, "int64", False),
    ],
    "TileProto": [("dimensions", 1, "int64", True)],
    "ProgramShapeProto": [
        ("parameters", 1, "ShapeProto", True),
        ("result", 2, "ShapeProto", False),
    ],
    "OpMetadata": [
        ("op_type", 1, "string", False),
        ("op_name", 2, "string", False),
        ("source_file", 3, "string", False),
        ("source_line", 4, "int32", False),
        ("stack_frame_id", 15, "int32", False),
    ],
    "LiteralProto": [
        ("preds", 2, "bool", True),
        ("s32s", 4, "int32", True),
        ("s64s", 5, "int64", True),
        ("u32s", 6, "uint32", True),
        ("u64s", 7, "uint64", True),
        ("f32s", 8, "float", True),
        ("f64s", 9, "double", True),
        ("u8s", 3, "bytes", False),
        ("f16s", 11, "bytes", False),
        ("bf16s", 13, "bytes", False),
        ("s8s", 15, "bytes", False),
        ("u16s", 16, "bytes", False),
        ("s16s", 17, "bytes", False),
    ],
    "StackFrameIndexProto": [
        ("file_names", 1, "string", True),
        ("function_names", 2, "string", True),
        ("file_locations", 3, "FileLocation", True),
        ("stack_frames", 4, "StackFrameProto", True),
    ],
    "FileLocation": [
        ("file_name_id", 1, "int32", False),
        ("function_name_id", 2, "int32", False),
        ("line", 3, "int32", False),
        ("column", 4, "int32", False),
    ],
    "StackFrameProto": [
        ("file_location_id", 1, "int32", False),
        ("parent_frame_id", 2, "int32", False),
    ],
}

_PACKAGE = "hloscope_hlo_proto"  # private: never clashes with a real `xla` schema

# xla_data.proto PrimitiveType numbers -> the names HLO text prints.
_ELEMENT_TYPES: dict[int, str] = {
    1: "pred", 2: "s8", 3: "s16", 4: "s32", 5: "s64", 6: "u8", 7: "u16", 8: "u32",
    9: "u64", 10: "f16", 11: "f32", 12: "f64", 13: "tuple", 14: "opaque", 15: "c64",
    16: "bf16", 17: "token", 18: "c128", 19: "f8e5m2", 20: "f8e4m3fn", 21: "s4", 22: "u4",
    23: "f8e4m3b11fnuz", 24: "f8e5m2fnuz", 25: "f8e4m3fnuz", 26: "s2", 27: "u2",
    28: "f8e4m3", 29: "f8e3m4", 30: "s1", 31: "u1", 32: "f4e2m1fn", 33: "f8e8m0fnu",
}  # fmt: skip

_UNBOUNDED = -(2**63)  # Shape::kUnboundedSize, printed `?`

_message_class: Any = None


def is_proto_path(path: str | Path) -> bool:
    """Whether `path` names a binary HLO dump (`*.hlo.pb` or `*.hlo.pb.xz`)."""
    return str(path).endswith(PROTO_SUFFIXES)


def load_module_file(path: str | Path, *, strict: bool = False) -> HloModule:
    """Read one HLO module from a file, text or binary, chosen by the file's suffix.

    Args:
        path: A text dump (`*.txt`, `*.hlo`, ...) or a binary one (`*.hlo.pb[.xz]`).
        strict: For text, raise on anything the tolerant parser would only count.

    Returns:
        The module.

    Raises:
        HloParseError: The file is missing, unreadable or not a well-formed module.
        MissingDependencyError: A binary dump and the `protobuf` package is missing.
    """
    if is_proto_path(path):
        return parse_proto_file(path)
    return parse_file(path, strict=strict)


def proto_beside(path: str | Path) -> Path | None:
    """The binary dump XLA wrote beside a text dump (`--xla_dump_hlo_as_proto`), if any:
    `module_0000.X.before_optimizations.txt` -> `...before_optimizations.hlo.pb` (or
    `.hlo.pb.xz`, compressed)."""
    p = Path(path)
    if not p.name.endswith(".txt"):
        return None
    for suffix in PROTO_SUFFIXES:
        found = p.with_name(p.name[: -len(".txt")] + suffix)
        if found.is_file():
            return found
    return None


def with_stack_frames(module: HloModule) -> HloModule:
    """The text-parsed `module`, with the stack frames of the binary dump beside it.

    The XLA that PyTorch/XLA 2.9 bundles keeps each instruction's Python call stack in
    its modules (`stack_frame_index`; torch_xla fills it with `XLA_HLO_DEBUG=1`) and in
    the binary dump, but prints only the innermost frame in the text
    (`source_file`/`source_line`). Each instruction that has no `stack_frame_id` in the
    text gets the one its namesake has in the binary dump, and the module gets its
    frame table; everything else stays as the text has it.

    Returns:
        `module` unchanged when it has frames, has no binary dump beside it, or the
        binary dump cannot be read (or holds none).
    """
    beside = proto_beside(module.path) if module.path and not module.stack_frames else None
    if beside is None:
        return module
    try:
        binary = parse_proto_file(beside)
    except HloscopeError:  # unreadable, or no protobuf: the text stands alone
        return module
    if not binary.stack_frames:
        return module
    ids = {
        (comp.name, inst.name): inst.metadata.stack_frame_id
        for comp, inst in binary.instructions()
        if inst.metadata is not None and inst.metadata.stack_frame_id
    }
    computations = []
    for comp in module.computations:
        insts = tuple(
            inst._replace(metadata=inst.metadata.with_stack_frame_id(found))
            if inst.metadata is not None
            and inst.metadata.stack_frame_id is None
            and (found := ids.get((comp.name, inst.name)))
            else inst
            for inst in comp.instructions
        )
        computations.append(replace(comp, instructions=insts))
    return replace(module, computations=tuple(computations), stack_frames=binary.stack_frames)


def parse_proto_file(path: str | Path) -> HloModule:
    """Read a binary HLO dump (`*.hlo.pb`, or `*.hlo.pb.xz` compressed with xz, which is
    decompressed to at most `files.MAX_EXPANSION` times its size).

    Raises:
        HloParseError: The file is missing, unreadable, not xz, or not an HloProto.
        MissingDependencyError: The `protobuf` package is not installed.
    """
    p = Path(path)
    data = read_dump(p, "an HLO dump")
    if p.name.endswith(".xz") or data[:6] == b"\xfd7zXZ\x00":
        try:
            data = decompress_xz(data, expansion_limit(len(data), MAX_DUMP_BYTES))
        except lzma.LZMAError as e:
            raise HloParseError(f"not valid xz data ({e})", path=str(path)) from None
        except ValueError as e:
            raise HloParseError(str(e), path=str(path)) from None
    return parse_proto(data, path=str(path))


def parse_proto(data: bytes, path: str | None = None) -> HloModule:
    """Decode a serialized `HloProto` or `HloModuleProto` into an `HloModule`.

    Args:
        data: The message bytes (not compressed).
        path: The file they came from, for messages and `HloModule.path`.

    Returns:
        The module, equal in structure to what the text parser makes of XLA's text.

    Raises:
        HloParseError: The bytes are not an HLO proto.
        MissingDependencyError: The `protobuf` package is not installed.
    """
    hlo_proto, module_proto = _classes()
    module = None
    error = "no computations"
    # An HloProto (what XLA dumps) wraps the module in field 1; a bare HloModuleProto has
    # its name there. Try the wrapper first, then the bare module.
    decoders: tuple[Callable[[], Any], ...] = (
        lambda: hlo_proto.FromString(data).hlo_module,
        lambda: module_proto.FromString(data),
    )
    for decode in decoders:
        try:
            candidate = decode()
        except Exception as e:  # protobuf's DecodeError, or a bad UTF-8 string field
            error = " ".join(str(e).split()) or type(e).__name__  # one line
            continue
        if candidate.computations:
            module = candidate
            break
    if module is None:
        raise HloParseError(f"not a binary HLO dump ({error})", path=path)
    gc_was_enabled = gc.isenabled()
    gc.disable()  # tens of thousands of acyclic objects: see parser.parse_module
    try:
        return _Builder(path).module(module)
    finally:
        if gc_was_enabled:
            gc.enable()


# ---------------------------------------------------------------------------------------
# The schema, built once.


def _classes() -> tuple[Any, Any]:
    global _message_class
    if _message_class is None:
        _message_class = _build_classes()
    found: tuple[Any, Any] = _message_class
    return found


def _build_classes() -> tuple[Any, Any]:
    try:
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    except ImportError:
        raise MissingDependencyError(
            "reading binary HLO dumps (*.hlo.pb) needs the 'protobuf' package: "
            "pip install protobuf (or pip install 'hloscope[proto]')"
        ) from None
    fdp = descriptor_pb2.FileDescriptorProto(
        name=f"{_PACKAGE}.proto", package=_PACKAGE, syntax="proto3"
    )
    F = descriptor_pb2.FieldDescriptorProto
    scalars = {
        "string": F.TYPE_STRING, "bytes": F.TYPE_BYTES, "int64": F.TYPE_INT64,
        "int32": F.TYPE_INT32, "uint32": F.TYPE_UINT32, "uint64": F.TYPE_UINT64,
        "bool": F.TYPE_BOOL, "float": F.TYPE_FLOAT, "double": F.TYPE_DOUBLE,
    }  # fmt: skip
    for message, fields in _SCHEMA.items():
        mdp = fdp.message_type.add(name=message)
        for name, number, kind, repeated in fields:
            fd = mdp.field.add(name=name, number=number)
            fd.label = F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL
            if kind in scalars:
                fd.type = scalars[kind]
            else:
                fd.type = F.TYPE_MESSAGE
                fd.type_name = f".{_PACKAGE}.{kind}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)

    def cls(name: str) -> Any:
        return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.{name}"))

    return cls("HloProto"), cls("HloModuleProto")


# ---------------------------------------------------------------------------------------
# Proto messages -> model objects.


class _Builder:
    """Turns one decoded module message into an `HloModule`."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.unknown_opcodes: dict[str, int] = {}
        self.shapes: dict[bytes, Shape] = {}
        self.metadata: dict[tuple[Any, ...], Metadata | None] = {}
        self.pred_ids: set[int] = set()

    def error(self, message: str) -> HloParseError:
        return HloParseError(message, path=self.path)

    def module(self, m: Any) -> HloModule:
        names: dict[int, str] = {}
        seen: set[str] = set()
        for c in m.computations:
            if c.name in seen:
                raise self.error(f"computation '{c.name}' is defined twice")
            if c.id in names:
                raise self.error(
                    f"computation id {c.id} is used twice ('{names[c.id]}', '{c.name}')"
                )
            seen.add(c.name)
            names[c.id] = c.name
        entry_id = m.entry_computation_id
        entry_name = m.entry_computation_name
        scheduled = m.HasField("schedule")
        order = {e.key: list(e.value.instruction_ids) for e in m.schedule.sequences}
        computations = []
        for c in m.computations:
            is_entry = c.id == entry_id if entry_id else c.name == entry_name
            computations.append(self.computation(c, names, is_entry, order.get(c.id)))
        self.check_calls(computations)
        attributes: dict[str, str] = {}
        if scheduled:
            attributes["is_scheduled"] = "true"
        if m.HasField("host_program_shape"):
            ps = m.host_program_shape
            params = ", ".join(self.shape(s, "the entry layout").text for s in ps.parameters)
            result = self.shape(ps.result, "the entry layout").text
            attributes["entry_computation_layout"] = f"{{({params})->{result}}}"
        return HloModule(
            name=m.name,
            attributes=MappingProxyType(attributes),
            computations=tuple(computations),
            stack_frames=_stack_frames(m.stack_frame_index),
            stats=ParseStats(unknown_opcodes=dict(self.unknown_opcodes)),
            path=self.path,
        )

    def check_calls(self, computations: list[Computation]) -> None:
        """No computation calls itself, directly or through others (XLA's text parser
        cannot even write such a module; every walk of the analyses relies on it)."""
        call_sites = {
            c.name: [i for i in c.instructions if i.called] for c in computations if c.instructions
        }
        cycle = find_cycle({k: v for k, v in call_sites.items() if v})
        if cycle is not None:
            path, inst = cycle
            raise self.error(
                f"computation '{path[0]}' calls itself: {' -> '.join(path)} "
                f"(instruction '{inst.name}')"
            )

    def computation(
        self, c: Any, names: Mapping[int, str], is_entry: bool, schedule: list[int] | None
    ) -> Computation:
        protos = list(c.instructions)
        local: dict[int, str] = {}
        seen: set[str] = set()
        for i in protos:
            if i.name in seen:
                raise self.error(
                    f"instruction '{i.name}' is defined twice in computation '{c.name}'"
                )
            if i.id in local:
                raise self.error(
                    f"instruction id {i.id} is used twice in computation '{c.name}' "
                    f"('{local[i.id]}', '{i.name}')"
                )
            seen.add(i.name)
            local[i.id] = i.name
        self.pred_ids = {i.id for i in protos if i.shape.element_type == 1}  # PRED
        if schedule and len(schedule) == len(protos):
            # A scheduled module prints each computation in its schedule's order: the
            # order the runtime executes it in.
            at = {i.id: i for i in protos}
            if all(n in at for n in schedule):
                scheduled = [at[n] for n in schedule]
                if _defines_before_use(scheduled, local) is None:
                    protos = scheduled
        problem = _defines_before_use(protos, local)
        if problem is not None:
            user, operand = problem
            what = f"id {operand}" if operand not in local else f"'{local[operand]}'"
            where = "is not in the computation" if operand not in local else "comes after it"
            raise self.error(
                f"operand {what} of instruction '{user}' in computation '{c.name}' {where} "
                "(XLA writes operands first: a cycle or a broken dump)"
            )
        instructions = tuple(
            self.instruction(i, local, names, i.id == c.root_id, c.name) for i in protos
        )
        thread = c.execution_thread
        return Computation(
            name=c.name,
            instructions=instructions,
            is_entry=is_entry,
            execution_thread=thread if thread and thread != "main" else None,
        )

    def instruction(
        self,
        i: Any,
        local: Mapping[int, str],
        names: Mapping[int, str],
        is_root: bool,
        computation: str,
    ) -> Instruction:
        opcode = i.opcode
        if opcode not in KNOWN_OPCODES:
            self.unknown_opcodes[opcode] = self.unknown_opcodes.get(opcode, 0) + 1
        operands = tuple(local[o] for o in i.operand_ids)  # checked by the caller
        missing = next((c for c in i.called_computation_ids if c not in names), None)
        if missing is not None:
            raise self.error(
                f"instruction '{i.name}' in computation '{computation}' calls computation "
                f"id {missing}, which the module does not hold"
            )
        callees = [names[c] for c in i.called_computation_ids]
        predicated = bool(i.operand_ids) and i.operand_ids[0] in self.pred_ids
        called = _called(opcode, callees, predicated)
        metadata = self.instruction_metadata(i) if i.HasField("metadata") else None
        attributes = _attributes(i, called, local, metadata)
        if opcode == "parameter":
            literal = str(i.parameter_number)
        elif opcode == "constant":
            literal = _literal(i)
        else:
            literal = ""
        return Instruction(
            name=i.name,
            opcode=opcode,
            shape=self.shape(i.shape, f"instruction '{i.name}'"),
            operands=operands,
            attributes=MappingProxyType(attributes),
            called=called,
            metadata=metadata,
            is_root=is_root,
            literal=literal,
            line=0,
        )

    def shape(self, s: Any, what: str) -> Shape:
        key = s.SerializeToString()
        shape = self.shapes.get(key)
        if shape is None:
            try:
                shape = parse_shape(_shape_text(s, 0))
            except ValueError as e:  # a negative or overflowing dimension, a deep tuple
                raise self.error(f"the shape of {what} is not valid: {_short(str(e))}") from None
            self.shapes[key] = shape
        return shape

    def instruction_metadata(self, i: Any) -> Metadata | None:
        md = i.metadata
        key = (md.op_type, md.op_name, md.source_file, md.source_line, md.stack_frame_id)
        if key not in self.metadata:
            self.metadata[key] = _metadata(*key) if any(key) else None
        return self.metadata[key]


def _metadata(
    op_type: str, op_name: str, source_file: str, source_line: int, frame: int
) -> Metadata:
    fields: dict[str, str] = {}
    if op_type:
        fields["op_type"] = op_type
    if op_name:
        fields["op_name"] = op_name
    if source_file:
        fields["source_file"] = source_file
    if source_line:
        fields["source_line"] = str(source_line)
    if frame:
        fields["stack_frame_id"] = str(frame)
    return Metadata(
        op_type=op_type or None,
        op_name=op_name or None,
        source_file=source_file or None,
        source_line=source_line or None,
        stack_frame_id=frame or None,
        text="{" + " ".join(_field(k, v) for k, v in fields.items()) + "}",
    )


def _defines_before_use(protos: Sequence[Any], local: Mapping[int, str]) -> tuple[str, int] | None:
    """`(user, operand id)` of the first operand that is not an earlier instruction of the
    list (missing, later, or the instruction itself), or None when every one is."""
    defined: set[int] = set()
    for i in protos:
        for o in i.operand_ids:
            if o not in defined:
                return i.name, o
        defined.add(i.id)
    return None


# As the text parser (`lexical._MAX_TUPLE_DEPTH`): deeper tuples are refused.
_MAX_TUPLE_DEPTH = 32


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _shape_text(s: Any, depth: int) -> str:
    """A shape as XLA's printer writes it (`f32[8,<=4]{1,0:T(8,128)S(1)}`).

    Raises:
        ValueError: Tuples nested deeper than the text parser reads.
    """
    kind = _ELEMENT_TYPES.get(s.element_type, f"type{s.element_type}")
    if kind == "tuple":
        if depth >= _MAX_TUPLE_DEPTH:
            raise ValueError(f"tuples nested more than {_MAX_TUPLE_DEPTH} deep")
        return "(" + ", ".join(_shape_text(t, depth + 1) for t in s.tuple_shapes) + ")"
    if kind in ("token", "opaque"):
        return f"{kind}[]"
    dynamic = list(s.is_dynamic_dimension)
    dims = []
    for n, d in enumerate(s.dimensions):
        if d == _UNBOUNDED:
            dims.append("?")
        else:
            dims.append(f"<={d}" if n < len(dynamic) and dynamic[n] else str(d))
    text = f"{kind}[{','.join(dims)}]"
    if s.HasField("layout"):
        layout = _layout_text(s.layout)
        # a scalar's layout is printed only when it says more than the default: a
        # TPU's tiles and memory space (`f32[]{:T(128)S(6)}`)
        if s.dimensions or layout:
            text += "{" + layout + "}"
    return text


def _layout_text(layout: Any) -> str:
    text = ",".join(str(d) for d in layout.minor_to_major)
    extras = ""
    if layout.tiles:
        extras += "T" + "".join(
            "(" + ",".join("*" if d == -(2**62) else str(d) for d in t.dimensions) + ")"
            for t in layout.tiles
        )
    if layout.element_size_in_bits:
        extras += f"E({layout.element_size_in_bits})"
    if layout.memory_space:
        extras += f"S({layout.memory_space})"
    return f"{text}:{extras}" if extras else text


# The attribute XLA's printer names the called computations with, per opcode.
_TO_APPLY = frozenset(
    {
        "map", "reduce", "reduce-window", "scatter", "sort", "call", "all-reduce",
        "all-reduce-start", "reduce-scatter", "collective-reduce",
    }
)  # fmt: skip


def _called(opcode: str, callees: Sequence[str], predicated: bool) -> tuple[CalledComputation, ...]:
    if not callees:
        return ()
    roles: list[str]
    if opcode == "fusion" or opcode.startswith("async-"):
        roles = ["calls"] * len(callees)
    elif opcode == "while" and len(callees) == 2:
        # HloWhileInstruction keeps the body at index 0 (kBodyComputationIndex), then the
        # condition (xla/hlo/ir/hlo_instructions.cc); the text prints the condition first.
        body, condition = callees
        return (CalledComputation("condition", condition), CalledComputation("body", body))
    elif opcode == "select-and-scatter" and len(callees) == 2:
        roles = ["select", "scatter"]
    elif opcode == "conditional" and predicated and len(callees) == 2:
        roles = ["true_computation", "false_computation"]  # a pred operand, as printed
    elif opcode == "conditional":
        roles = ["branch_computations"] * len(callees)
    elif opcode in _TO_APPLY or (opcode == "custom-call" and len(callees) == 1):
        roles = ["to_apply"] * len(callees)
    else:
        roles = ["called_computations"] * len(callees)
    return tuple(CalledComputation(r, n) for r, n in zip(roles, callees, strict=True))


def _attributes(
    i: Any,
    called: tuple[CalledComputation, ...],
    local: Mapping[int, str],
    metadata: Metadata | None,
) -> dict[str, str]:
    """The attributes as XLA prints them, for those the proto reader keeps."""
    out: dict[str, str] = {}
    opcode = i.opcode
    if i.fusion_kind:
        out["kind"] = i.fusion_kind
    if opcode == "iota" and i.dimensions:
        out["iota_dimension"] = str(i.dimensions[0])
    elif i.dimensions or opcode == "broadcast":
        out["dimensions"] = "{" + ",".join(str(d) for d in i.dimensions) + "}"
    if opcode == "get-tuple-element":
        out["index"] = str(i.tuple_index)
    if i.slice_dimensions:
        out["slice"] = "{" + ", ".join(_slice(d) for d in i.slice_dimensions) + "}"
    if i.dynamic_slice_sizes:
        out["dynamic_slice_sizes"] = "{" + ",".join(str(d) for d in i.dynamic_slice_sizes) + "}"
    if i.comparison_direction:
        out["direction"] = i.comparison_direction
    if i.HasField("window") and i.window.dimensions:
        out["window"] = _window(i.window)
    if i.HasField("convolution_dimension_numbers"):
        out["dim_labels"] = _dim_labels(i.convolution_dimension_numbers)
    if i.feature_group_count > 1:
        out["feature_group_count"] = str(i.feature_group_count)
    if i.batch_group_count > 1:
        out["batch_group_count"] = str(i.batch_group_count)
    if i.HasField("dot_dimension_numbers"):
        dnums = i.dot_dimension_numbers
        for side in ("lhs", "rhs"):
            for kind in ("batch", "contracting"):
                dims = getattr(dnums, f"{side}_{kind}_dimensions")
                if dims:
                    out[f"{side}_{kind}_dims"] = "{" + ",".join(map(str, dims)) + "}"
    if i.channel_id:
        out["channel_id"] = str(i.channel_id)
    if i.replica_groups:
        groups = ",".join("{" + ",".join(map(str, g.replica_ids)) + "}" for g in i.replica_groups)
        out["replica_groups"] = "{" + groups + "}"
    roles: dict[str, list[str]] = {}
    for c in called:
        roles.setdefault(c.role, []).append(c.name)
    for role, callees in roles.items():
        several = len(callees) > 1 or role in ("branch_computations", "called_computations")
        refs = ", ".join(f"%{n}" for n in callees)
        out[role] = f"{{{refs}}}" if several else refs
    if i.custom_call_target:
        out["custom_call_target"] = json.dumps(i.custom_call_target)
    if i.control_predecessor_ids:
        preds = ", ".join(f"%{local.get(p, p)}" for p in i.control_predecessor_ids)
        out["control-predecessors"] = f"{{{preds}}}"
    if metadata is not None and metadata.text != "{}":
        out["metadata"] = metadata.text
    if i.backend_config:
        config = i.backend_config.decode("utf-8", "replace")
        out["backend_config"] = config if config.startswith("{") else json.dumps(config)
    if i.HasField("frontend_attributes") and i.frontend_attributes.map:
        pairs = ",".join(f"{e.key}={json.dumps(e.value)}" for e in i.frontend_attributes.map)
        out["frontend_attributes"] = f"{{{pairs}}}"
    return out


def _window(window: Any) -> str:
    """A window as XLA prints it (window_util::ToString): `{size=3x3 stride=2x2
    pad=0_1x0_1}`, each field only where some dimension is not the default."""
    dims = list(window.dimensions)
    fields = [("size", [str(d.size) for d in dims])]
    if any(d.stride != 1 for d in dims):
        fields.append(("stride", [str(d.stride) for d in dims]))
    if any(d.padding_low or d.padding_high for d in dims):
        fields.append(("pad", [f"{d.padding_low}_{d.padding_high}" for d in dims]))
    if any(d.base_dilation not in (0, 1) for d in dims):
        fields.append(("lhs_dilate", [str(d.base_dilation or 1) for d in dims]))
    if any(d.window_dilation not in (0, 1) for d in dims):
        fields.append(("rhs_dilate", [str(d.window_dilation or 1) for d in dims]))
    if any(d.window_reversal for d in dims):
        fields.append(("rhs_reversal", ["1" if d.window_reversal else "0" for d in dims]))
    return "{" + " ".join(f"{name}={'x'.join(v)}" for name, v in fields) + "}"


def _dim_labels(d: Any) -> str:
    """Convolution dimension numbers as XLA prints them: `b01f_01io->b01f`."""

    def labels(rank: int, named: Mapping[int, str], spatial: Sequence[int]) -> str:
        chars = ["?"] * rank
        for dim, label in named.items():
            if 0 <= dim < rank:
                chars[dim] = label
        for n, dim in enumerate(spatial):
            if 0 <= dim < rank:
                chars[dim] = str(n)
        return "".join(chars)

    lhs = labels(
        2 + len(d.input_spatial_dimensions),
        {d.input_batch_dimension: "b", d.input_feature_dimension: "f"},
        d.input_spatial_dimensions,
    )
    rhs = labels(
        2 + len(d.kernel_spatial_dimensions),
        {d.kernel_input_feature_dimension: "i", d.kernel_output_feature_dimension: "o"},
        d.kernel_spatial_dimensions,
    )
    out = labels(
        2 + len(d.output_spatial_dimensions),
        {d.output_batch_dimension: "b", d.output_feature_dimension: "f"},
        d.output_spatial_dimensions,
    )
    return f"{lhs}_{rhs}->{out}"


def _field(key: str, value: str) -> str:
    numeric = key in ("source_line", "stack_frame_id")
    return f"{key}={value}" if numeric else f"{key}={json.dumps(value)}"


def _slice(d: Any) -> str:
    stride = f":{d.stride}" if d.stride not in (0, 1) else ""
    return f"[{d.start}:{d.limit}{stride}]"


def _literal(i: Any) -> str:
    """A scalar constant's value as XLA prints it; `{...}` for arrays and other types."""
    if i.shape.dimensions:
        return "{...}"
    kind = _ELEMENT_TYPES.get(i.shape.element_type, "")
    value = _scalar_value(i.literal, kind)
    if value is None:
        return "{...}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return _float_text(value, kind)


# Scalar types stored as packed little-endian bytes: (field, struct format).
_PACKED = {
    "s8": ("s8s", "<b"), "u8": ("u8s", "<B"), "s16": ("s16s", "<h"), "u16": ("u16s", "<H"),
    "f16": ("f16s", "<e"),
}  # fmt: skip
_REPEATED = {
    "pred": "preds", "s32": "s32s", "s64": "s64s", "u32": "u32s", "u64": "u64s",
    "f32": "f32s", "f64": "f64s",
}  # fmt: skip


def _scalar_value(lit: Any, kind: str) -> bool | int | float | None:
    if kind in _REPEATED:
        values = getattr(lit, _REPEATED[kind])
        return values[0] if len(values) == 1 else None
    if kind in _PACKED:
        name, fmt = _PACKED[kind]
        raw = getattr(lit, name)
        return struct.unpack(fmt, raw)[0] if len(raw) == struct.calcsize(fmt) else None
    if kind == "bf16" and len(lit.bf16s) == 2:
        return float(struct.unpack("<f", b"\0\0" + lit.bf16s)[0])  # the high half of an f32
    return None


def _float_text(v: float, kind: str) -> str:
    """A float as XLA's literal printer writes it (`RoundTripFpToString`): bf16 with 4 and
    f16 with 5 significant digits; f32 with 6, or 9 when 6 do not read back to the same
    value; f64 with 15, or 17."""
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    if kind == "bf16":
        return f"{v:.4g}"
    if kind == "f16":
        return f"{v:.5g}"
    if kind == "f32":
        short = f"{v:.6g}"
        same = struct.unpack("<f", struct.pack("<f", float(short)))[0] == v
        return short if same else f"{v:.9g}"
    short = f"{v:.15g}"
    return short if float(short) == v else f"{v:.17g}"


def _stack_frames(index: Any) -> dict[int, StackFrame]:
    """The module's stack frame table; ids are 1-based, as the text prints them."""
    if not index.stack_frames:
        return {}
    files, functions = list(index.file_names), list(index.function_names)

    def pick(table: list[str], one_based: int) -> str | None:
        return table[one_based - 1] if 0 < one_based <= len(table) else None

    locations = [
        SourceLocation(
            pick(files, loc.file_name_id) or "?",
            loc.line,  # XLA prints line and column even when 0
            pick(functions, loc.function_name_id),
            loc.column,
        )
        for loc in index.file_locations
    ]
    frames = {}
    for n, f in enumerate(index.stack_frames, 1):
        k = f.file_location_id
        location = locations[k - 1] if 0 < k <= len(locations) else SourceLocation("?")
        frames[n] = StackFrame(n, location, max(f.parent_frame_id, 0))
    return frames
