"""Tests for merging the user's XLA_FLAGS with the dump flags."""

from __future__ import annotations

from pathlib import Path

from hloscope.capture.flags import merge_xla_flags, split_flags

DUMP = Path("/runs/r1/dump")


def test_no_user_flags() -> None:
    merged = merge_xla_flags(None, DUMP, None)
    assert merged.value == "--xla_dump_to=/runs/r1/dump --xla_dump_hlo_as_text"
    assert merged.user is None and merged.conflicts == ()


def test_user_flags_kept_in_order_and_ours_appended() -> None:
    user = "--xla_cpu_use_thunk_runtime=false --xla_dump_hlo_as_proto --xla_dump_hlo_module_re=mlp"
    merged = merge_xla_flags(user, DUMP, None)
    assert merged.value.startswith(user + " ")
    assert merged.value.endswith("--xla_dump_to=/runs/r1/dump --xla_dump_hlo_as_text")
    assert merged.conflicts == ()


def test_conflicting_flags_are_replaced_and_reported() -> None:
    user = "--xla_dump_to=/tmp/mine --xla_dump_hlo_as_text=false --xla_dump_hlo_module_re=a --xla_foo=1"
    merged = merge_xla_flags(user, DUMP, "jit_mlp")
    tokens = split_flags(merged.value)
    assert tokens == [
        "--xla_foo=1",
        "--xla_dump_to=/runs/r1/dump",
        "--xla_dump_hlo_as_text",
        "--xla_dump_hlo_module_re=jit_mlp",
    ]
    assert len(merged.conflicts) == 3
    assert "--xla_dump_to=/tmp/mine" in merged.conflicts[0]
    assert "--xla_dump_hlo_as_text=false" in merged.conflicts[1]
    assert "--xla_dump_hlo_module_re=jit_mlp" in merged.conflicts[2]


def test_same_values_are_not_conflicts() -> None:
    user = "--xla_dump_to=/runs/r1/dump --xla_dump_hlo_as_text=true"
    merged = merge_xla_flags(user, DUMP, None)
    assert merged.conflicts == ()
    assert split_flags(merged.value) == ["--xla_dump_to=/runs/r1/dump", "--xla_dump_hlo_as_text"]


def test_paths_with_spaces_are_quoted() -> None:
    merged = merge_xla_flags('--xla_dump_hlo_pass_re="a b"', Path("/my runs/dump"), None)
    assert split_flags(merged.value) == [
        '--xla_dump_hlo_pass_re="a b"',
        '--xla_dump_to="/my runs/dump"',
        "--xla_dump_hlo_as_text",
    ]
