"""One name per framework: `Framework`, its one alias table, and the joined form run.json
keeps."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from hloscope.capture import profiler
from hloscope.errors import UsageError
from hloscope.frameworks import Framework, join_frameworks, split_frameworks

PACKAGE = Path(__file__).resolve().parents[1] / "hloscope"


@pytest.mark.parametrize(
    ("name", "framework"),
    [
        ("tf", Framework.TENSORFLOW),
        (" TensorFlow ", Framework.TENSORFLOW),
        ("JAX", Framework.JAX),
        ("PyTorch", Framework.TORCH_XLA),
        ("torch_xla", Framework.TORCH_XLA),
    ],
)
def test_every_spelling_parses(name: str, framework: Framework) -> None:
    assert Framework.parse(name) is framework
    assert Framework.lookup(name) is framework


def test_an_unknown_framework_is_one_usage_error_naming_the_known_ones() -> None:
    with pytest.raises(UsageError, match="'tensorflow', 'jax' or 'torch_xla'"):
        Framework.parse("caffe")
    assert Framework.lookup("caffe") is None


def test_joined_names_round_trip_sorted() -> None:
    both = split_frameworks("tensorflow+jax")
    assert both == (Framework.JAX, Framework.TENSORFLOW)
    assert join_frameworks(both) == "jax+tensorflow"
    assert split_frameworks("jax+caffe") == (Framework.JAX,)  # a newer hloscope's name
    assert split_frameworks(None) == () and join_frameworks(()) == ""


def test_a_framework_prints_and_compares_as_its_value() -> None:
    assert str(Framework.JAX) == f"{Framework.JAX}" == "jax"
    assert Framework.TENSORFLOW == "tensorflow"


def test_the_child_hooks_know_the_same_frameworks() -> None:
    # profiler.py runs in the child under any Python and cannot import hloscope
    assert set(profiler.FRAMEWORKS) <= {f.value for f in Framework}


def test_no_other_module_keeps_an_alias_table() -> None:
    """`"tf"` as a dict key or a compared string appears only in `frameworks.py`."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "frameworks.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value == "tf":
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not found, found
