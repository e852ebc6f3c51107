"""Chrome traces (`*.trace.json.gz`) and profile folders built to break the reader
(issue 25): wrong field types, infinities, negative durations, deep nesting, bombs,
folders nested past Python's recursion limit. Each is read (the bad events skipped and
counted) or refused with a `ProfileReadError`, never another exception.

The seed is the captured JAX MLP profile (tests/data/jax_mlp_profile, see its HOW.md).
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from hloscope.errors import ProfileReadError, UsageError
from hloscope.runs import load_run
from hloscope.timing.attribution import attribute
from hloscope.timing.sources import run_timings
from hloscope.timing.xplane import find_profile, read_trace
from tests.conftest import DATA

(SEED,) = (DATA / "jax_mlp_profile" / "plugins").rglob("*.trace.json.gz")


def _doc() -> dict[str, Any]:
    return json.loads(gzip.decompress(SEED.read_bytes()))


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "vm.trace.json.gz"
    path.write_bytes(gzip.compress(text.encode(), mtime=0))
    return path


def _op_events(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in doc["traceEvents"] if e.get("ph") == "X" and "hlo_op" in e.get("args", {})]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("pid", [1, 2]),
        ("tid", {"a": 1}),
        ("args", [1, 2]),
        ("args", "a string"),
        ("name", ["a", "list"]),
        ("ts", "Infinity"),
        ("dur", "NaN"),
        ("dur", -5.0),
        ("ts", -1.0),
        ("ts", "12"),
        ("dur", 1e308),
    ],
)
def test_events_of_another_shape_are_skipped_and_counted(
    tmp_path: Path, field: str, value: Any
) -> None:
    doc = _doc()
    events = _op_events(doc)
    for e in events[:5]:
        e[field] = value
    text = json.dumps(doc)
    for word in ("Infinity", "NaN"):  # the JSON words, not strings
        text = text.replace(f'"{word}"', word)
    trace = read_trace(_write(tmp_path, text))
    timings = attribute(trace)
    if field != "args":
        assert any("skipped" in p for p in trace.problems)
    for m in timings.modules.values():
        assert m.total_us >= 0 and all(k.total_us >= 0 for k in m.kernels)


def test_metadata_events_of_another_shape_are_ignored(tmp_path: Path) -> None:
    doc = _doc()
    for e in doc["traceEvents"]:
        if e.get("ph") == "M":
            e["args"] = e["pid"] = ["not", "an", "object"]
    assert read_trace(_write(tmp_path, json.dumps(doc))).events


@pytest.mark.parametrize("depth", [5_000, 100_000])
def test_json_nested_past_the_recursion_limit_is_refused(tmp_path: Path, depth: int) -> None:
    text = '{"traceEvents": ' + "[" * depth + "]" * depth + "}"
    with pytest.raises(ProfileReadError, match=r"nested too deep|objects and lists"):
        read_trace(_write(tmp_path, text))


def test_a_bomb_of_small_objects_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    """200 MB of `{},` gzips to 200 KB: refused by the expansion limit; 20 MB of it (under
    that limit) by the density of objects, before json.loads builds 7 million dicts."""
    big = tmp_path / "big" / "vm.trace.json.gz"
    big.parent.mkdir()
    with gzip.open(big, "wb", compresslevel=1) as f:
        f.write(b'{"traceEvents":[')
        for _ in range(200):
            f.write(b"{}," * 333_333)
        f.write(b"{}]}")
    with pytest.raises(ProfileReadError, match="decompresses to more than"):
        read_trace(big)
    dense = _write(tmp_path, '{"traceEvents":[' + "{}," * 7_000_000 + "{}]}")
    with pytest.raises(ProfileReadError, match="objects and lists"):
        read_trace(dense)


def _nested(root: Path, levels: int) -> list[Path]:
    """Folders nested `levels` deep (os.makedirs and shutil.rmtree recurse per level)."""
    chain = [root]
    root.mkdir()
    for _ in range(levels):
        chain.append(chain[-1] / "d")
        chain[-1].mkdir()
    return chain


def test_folders_nested_past_the_recursion_limit_are_not_walked(tmp_path: Path) -> None:
    shutil.copytree(DATA / "jax_mlp_profile" / "plugins", tmp_path / "plugins")
    chain = _nested(tmp_path / "trap", 1200)
    shutil.copy(SEED, chain[-1] / "other.trace.json.gz")  # never found: too deep to look
    try:
        assert find_profile(tmp_path).parent.parent.name == "profile"
    finally:
        (chain[-1] / "other.trace.json.gz").unlink()
        for folder in reversed(chain):
            folder.rmdir()


def _run(tmp_path: Path, profile_dir: str) -> Path:
    run = tmp_path / "run"
    shutil.copytree(DATA / "jax_mlp_profile" / "hlo", run / "dump")
    manifest = {"source": "dump", "dump_dir": "dump", "profile": {"dir": profile_dir}}
    (run / "run.json").write_text(json.dumps(manifest))
    return run


@pytest.mark.parametrize("where", ["/", "/etc", "..", "profile/../..", "C:\\profile"])
def test_profile_dir_outside_the_run_is_refused_like_dump_dir(tmp_path: Path, where: str) -> None:
    with pytest.raises(UsageError, match=r"profile\.dir .* points outside the run folder"):
        load_run(_run(tmp_path, where))


def test_a_profile_dir_linked_out_of_the_run_is_not_read(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(DATA / "jax_mlp_profile" / "plugins", elsewhere / "plugins")
    run = _run(tmp_path, "profile")
    (run / "profile").symlink_to(elsewhere)
    with pytest.raises(ProfileReadError, match="leads out of the run folder"):
        run_timings(load_run(run))
