"""PyTorch/XLA's source ops as PyTorch users know them, for `provenance`.

With `XLA_HLO_DEBUG=1` torch_xla names each HLO instruction after the IR node that made
it, with `::` written as `_` for the profiler's sake (`aten::addmm` becomes op_type and
op_name `aten__addmm`; `xla::device_data`, `prim::Constant`). An op_name may carry
scopes before the op: the names of `torch_xla.debug.profiler.Trace` regions the op ran
in (`encoder/aten__addmm`), or the aten op a composite op was lowered inside
(`aten__lerp.7/aten__mul`). Unlike TensorFlow's, these names repeat: every `aten::addmm`
of a model is named `aten__addmm`. A source op of torch_xla is therefore its name and the
user's source line that made it (`aten::addmm@train.py:31`), so that the layers of a
model stay apart.
"""

from __future__ import annotations

import os
import re

from hloscope.hlo.model import SourceLocation

__all__ = ["is_torch_op", "torch_op_name", "torch_source_op"]

# torch_xla's IR namespaces, as they appear in op_type.
_OP_TYPE = re.compile(r"(?:aten|prim|xla)__\w+")
_NAMESPACES = ("aten__", "prim__", "xla__")
# One component of an op_name: `aten__mm`, `aten___log_softmax` (aten::_log_softmax),
# `aten__lerp.7` (the 7th lerp, as a scope).
_PART = re.compile(r"(aten|prim|xla)__(\w+(?:\.\d+)?)")


def is_torch_op(op_type: str | None, op_name: str) -> bool:
    """Whether an instruction's metadata names a torch_xla op: its op_type is an IR
    op (`aten__addmm`) and its op_name ends with it."""
    return (
        op_type is not None
        and op_type.startswith(_NAMESPACES)  # most op types are not: no regex for them
        and _OP_TYPE.fullmatch(op_type) is not None
        and (op_name == op_type or op_name.endswith("/" + op_type))
    )


def torch_op_name(op_name: str) -> str:
    """`aten__addmm` -> `aten::addmm`, in every scope of the name
    (`aten__lerp.7/aten__mul` -> `aten::lerp.7/aten::mul`); other scopes stay as written."""
    return "/".join(_part(p) for p in op_name.split("/"))


def torch_source_op(op_name: str, location: SourceLocation | None, user_frame: bool) -> str:
    """The source op name of a torch_xla op: `aten::addmm@train.py:31` (the file's base
    name and the line of the user's frame), or the bare op name without a user frame."""
    name = torch_op_name(op_name)
    if not user_frame or location is None or location.line is None:
        return name
    return f"{name}@{os.path.basename(location.file)}:{location.line}"


def _part(text: str) -> str:
    m = _PART.fullmatch(text)
    return f"{m[1]}::{m[2]}" if m else text
