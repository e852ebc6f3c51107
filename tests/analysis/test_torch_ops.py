"""torch_xla's op names as PyTorch users know them, on real captured torch_xla dumps."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hloscope.analysis.provenance import FUSED, trace
from hloscope.analysis.torch_ops import is_torch_op, torch_op_name, torch_source_op
from hloscope.hlo.model import SourceLocation
from hloscope.runs import load_run
from tests.conftest import DATA


@pytest.mark.parametrize(
    ("op_type", "op_name", "torch"),
    [
        ("aten__addmm", "aten__addmm", True),
        ("aten__mul", "aten__mul.19/aten__mul", True),
        ("xla__device_data", "xla__device_data", True),
        ("prim__Constant", "encoder/prim__Constant", True),
        ("aten__mul", "aten__add", False),  # the name is not of that op
        ("MatMul", "dense/MatMul", False),  # TensorFlow
        (None, "jit(f)/dot_general", False),  # JAX
        ("aten_mm", "aten_mm", False),
    ],
)
def test_is_torch_op(op_type: str | None, op_name: str, torch: bool) -> None:
    assert is_torch_op(op_type, op_name) is torch


def test_names_as_pytorch_writes_them() -> None:
    assert torch_op_name("aten__addmm") == "aten::addmm"
    assert torch_op_name("aten___log_softmax_backward_data") == "aten::_log_softmax_backward_data"
    assert torch_op_name("aten__lerp.7/aten__lerp") == "aten::lerp.7/aten::lerp"
    assert torch_op_name("encoder/layer_0/aten__mm") == "encoder/layer_0/aten::mm"
    assert torch_op_name("xla__device_data") == "xla::device_data"


def test_source_ops_carry_the_users_line() -> None:
    here = SourceLocation("/home/u/proj/train.py", 31, "forward")
    assert torch_source_op("aten__addmm", here, True) == "aten::addmm@train.py:31"
    assert torch_source_op("aten__addmm", here, False) == "aten::addmm"
    assert torch_source_op("aten__mm", None, True) == "aten::mm"


def _module(tmp_path: Path, folder: str, key_part: str):  # type: ignore[no-untyped-def]
    run = load_run(shutil.copytree(DATA / folder, tmp_path / folder))
    (m,) = [m for m in run.modules if key_part in m.key]
    return m.load_before(), m.load_after()


def test_each_linear_layer_is_its_own_source_op(tmp_path: Path) -> None:
    """torch_mlp's three Linear layers all lower to `aten__addmm`; their user lines
    (torch_mlp.py:39, 40, 41, each `self.fcN(...)`) keep them apart, and each fuses with
    its own ReLU."""
    from hloscope.analysis.fusion import analyze_module

    before, after = _module(tmp_path, "torch_mlp", "0000")
    prov = trace(after, analyze_module(after), before)
    by_name = {p.op.name: p for p in prov.placements}
    lines = (DATA.parent.parent / "samples" / "torch_mlp.py").read_text().splitlines()
    addmm = sorted(n for n in by_name if n.startswith("aten::addmm@"))
    assert len(addmm) == 3
    for name in addmm:
        p = by_name[name]
        assert p.op.type == "aten::addmm" and p.op.user_frame
        assert p.op.location is not None and p.op.location.file == "samples/torch_mlp.py"
        line = lines[(p.op.location.line or 0) - 1]
        assert "self.fc1(x)" in line or "self.fc2(h)" in line or "self.head(h)" in line
    for name in addmm[:2]:  # fc1 and fc2 (the head has no ReLU)
        relu = by_name[name.replace("addmm", "relu")]
        assert relu.status == FUSED and name in relu.shares_with


def test_ops_without_a_user_frame_keep_the_bare_name(tmp_path: Path) -> None:
    """The backward pass runs in autograd's engine: torch_xla records no Python frame."""
    from hloscope.analysis.fusion import analyze_module

    before, after = _module(tmp_path, "torch_mlp", "0000")
    prov = trace(after, analyze_module(after), before)
    mm = [p for p in prov.placements if p.op.name == "aten::mm"]
    assert len(mm) == 1 and mm[0].op.location is None and mm[0].kernels
