"""Tests for `hloscope.runs`: finding modules in run folders, dump folders and files.

The dumps are the captured ones in tests/data (see each folder's HOW.md); older and GPU
file names are made by copying a real dump file to the old name in tmp_path.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hloscope.errors import UsageError
from hloscope.manifest import RunManifest
from hloscope.runs import ModuleDump, dump_file_info, is_trivial, load_run, scan_dump_dir
from tests.conftest import DATA, dump_file

TF_NAME = (
    "a_inference_dense_relu_12__XlaMustCompile_true_config_proto_13561319589895757934"
    "_executor_type_11160318154034397263_.1"
)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("module_0008.jit_mlp.before_optimizations.txt", (None, "0008", "jit_mlp", None)),
        ("module_0008.jit_mlp.cpu_after_optimizations.txt", (None, "0008", "jit_mlp", "cpu")),
        (f"module_0000.{TF_NAME}.cpu_after_optimizations.txt", (None, "0000", TF_NAME, "cpu")),
        (
            "module_0023.jit_step.sm_8.0_gpu_after_optimizations.txt",
            (None, "0023", "jit_step", "sm_80"),
        ),
        ("module_0001.main.sm_9.0_gpu_after_optimizations.txt", (None, "0001", "main", "sm_90")),
        ("module_0001.main.sm_80_gpu_after_optimizations.txt", (None, "0001", "main", "sm_80")),
        ("module_0001.main.sm_100a_gpu_after_optimizations.txt", (None, "0001", "main", "sm_100a")),
        (
            "module_0142.jit_train_step.gfx950_gpu_after_optimizations.txt",
            (None, "0142", "jit_train_step", "gfx950"),
        ),
        ("module_0001.main.gpu_after_optimizations.txt", (None, "0001", "main", "gpu")),
        (
            "1669123456789012.module_0000.cluster_0__XlaCompiledKernel_true__XlaNumConstantArgs_0_.13.before_optimizations.txt",
            (
                "1669123456789012",
                "0000",
                "cluster_0__XlaCompiledKernel_true__XlaNumConstantArgs_0_.13",
                None,
            ),
        ),
        ("jit_f.before_optimizations.txt", (None, None, "jit_f", None)),
        ("jit_f.cpu_after_optimizations.txt", (None, None, "jit_f", "cpu")),
    ],
)
def test_dump_file_info_reads_xla_names(name: str, expected: tuple[object, ...]) -> None:
    assert dump_file_info(name) == expected


def test_dump_file_info_reads_binary_protos() -> None:
    # what nsys-jax and --xla_dump_hlo_as_proto write
    assert dump_file_info(
        "module_0016.jit_train_step.sm_9.0_gpu_after_optimizations.hlo.pb.xz"
    ) == (
        None,
        "0016",
        "jit_train_step",
        "sm_90",
    )
    assert dump_file_info("module_0001.f.before_optimizations.hlo.pb") == (None, "0001", "f", None)


def test_text_is_preferred_to_proto_for_the_same_side(tmp_path: Path) -> None:
    for name in (
        "module_0001.f.before_optimizations.hlo.pb",
        "module_0001.f.before_optimizations.txt",
    ):
        (tmp_path / name).write_text("x")
    (module,) = scan_dump_dir(tmp_path)
    assert module.before is not None and module.before.name.endswith(".txt")


@pytest.mark.parametrize(
    "name",
    [
        "module_0000.jit_f.cpu_after_optimizations-buffer-assignment.txt",
        "module_0000.jit_f.cpu_after_optimizations-memory-usage-report.txt",
        "module_0000.jit_f.sm_9.0_gpu_after_optimizations-buffer-assignment.txt",
        "module_0000.jit_f.debug_options",
        "module_0000.jit_f.ir-no-opt.ll",
        "module_0000.jit_f.obj-file.fusion_kernel_module.o",
        "module_0000.jit_f.fusion_kernel_module-pre-optimization.mlir",
        "module_0000.jit_f.before_optimizations.hlo.pb.gz",
        "module_0000.jit_f.gpu_target_config.pbtxt.xz",
        "module_0000.jit_f.0003.cpu-hlo-pipeline.after_foo.before_bar.txt",
        "HOW.md",
        "notes.txt",
    ],
)
def test_dump_file_info_ignores_other_files(name: str) -> None:
    assert dump_file_info(name) is None


def test_dump_file_info_tests_suffixes_first_without_losing_a_name() -> None:
    """`dump_file_info` rejects most names by suffix before its pattern: every file name
    of the test data, and each case above, reads as the pattern alone reads it."""
    from hloscope.runs import _DUMP_NAME

    names = {p.name for p in DATA.rglob("*")}
    names |= {
        "module_0016.jit_train_step.sm_9.0_gpu_after_optimizations.hlo.pb.xz",
        "module_0001.f.before_optimizations.hlo.pb",
        "module_0000.jit_f.cpu_after_optimizations-buffer-assignment.txt",
        "module_0000.jit_f.before_optimizations.hlo.pb.gz",
        "x.before_optimizations.txt.before_optimizations.txt",
        "optimizations.txt",
        ".before_optimizations.txt",
    }
    read = {n for n in names if dump_file_info(n) is not None}
    assert read == {n for n in names if _DUMP_NAME.fullmatch(n)}
    assert len(read) > 100  # the test data's modules are among them


def test_bare_jax_dump_folder() -> None:
    run = load_run(DATA / "jax_mlp")
    assert run.manifest == RunManifest()
    assert run.dump_dir == DATA / "jax_mlp"
    assert len(run.modules) == 21
    ids = [m.id_number for m in run.modules]
    assert ids == sorted(ids) and ids[0] == 0 and ids[-1] == 40
    mlp = run.module("jit_mlp")
    assert mlp.key == "0030.jit_mlp"
    assert mlp.platform == "cpu" and run.platform == "cpu"
    assert mlp.before is not None and mlp.before.name.endswith(".before_optimizations.txt")
    assert mlp.after is not None and mlp.after.name.endswith(".cpu_after_optimizations.txt")
    after = mlp.load_after()
    assert after is not None and after.name == "jit_mlp" and after.is_scheduled
    assert mlp.load_after() is after  # cached


def test_tf_module_name_matches_header() -> None:
    run = load_run(DATA / "tf_dense_relu")
    (module,) = run.modules
    assert module.name == TF_NAME
    before = module.load_before()
    assert before is not None and before.name == module.name and not before.is_scheduled


def test_dump_one_level_down_is_found() -> None:
    run = load_run(DATA / "jax_mlp_profile")
    assert run.dump_dir == DATA / "jax_mlp_profile" / "hlo"
    assert run.module("jit_mlp").module_id == "0030"


def test_run_folder_reads_manifest_and_dump_subfolder(tmp_path: Path) -> None:
    shutil.copytree(DATA / "tf_dense_relu", tmp_path / "dump")
    (tmp_path / "run.json").write_text(json.dumps({"schema_version": 1, "platform": "cpu"}))
    run = load_run(tmp_path)
    assert run.manifest.schema_version == 1 and run.manifest.platform == "cpu"
    assert run.dump_dir == tmp_path / "dump"
    assert len(run.modules) == 1


def test_run_folder_without_modules_loads_empty(tmp_path: Path) -> None:
    (tmp_path / "dump").mkdir()
    (tmp_path / "run.json").write_text("{}")
    assert load_run(tmp_path).modules == ()


def test_single_after_file_pairs_with_its_before_file() -> None:
    path = dump_file("jax_mlp", "module_0030.*cpu_after_optimizations.txt")
    run = load_run(path)
    assert run.path == path and run.dump_dir is None
    (module,) = run.modules
    assert module.after == path and module.before is not None
    assert module.key == "0030.jit_mlp"


@pytest.mark.parametrize(("pattern", "is_after"), [("*before*", False), ("*cpu_after*", True)])
def test_single_file_with_any_name_is_decided_by_header(
    tmp_path: Path, pattern: str, is_after: bool
) -> None:
    src = dump_file("tf_dense_relu", pattern)
    path = tmp_path / "model.hlo"
    shutil.copy(src, path)
    (module,) = load_run(path).modules
    assert module.name == TF_NAME and module.module_id is None
    assert (module.after == path) is is_after and (module.before == path) is not is_after
    loaded = module.load_after() if is_after else module.load_before()
    assert loaded is not None and loaded.is_scheduled is is_after


def test_single_file_that_is_not_hlo(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello\n")
    with pytest.raises(UsageError, match="no 'HloModule' line"):
        load_run(path)


def test_tf29_timestamped_and_gpu_names(tmp_path: Path) -> None:
    """TensorFlow 2.9 prefixes a timestamp; GPU runs write sm_XY_gpu after files."""
    before = dump_file("tf_dense_relu", "*before*")
    after = dump_file("tf_dense_relu", "*cpu_after*")
    stem = "1669123456789012.module_0000.cluster_0__XlaCompiledKernel_true_.13"
    shutil.copy(before, tmp_path / f"{stem}.before_optimizations.txt")
    shutil.copy(after, tmp_path / f"{stem}.sm_80_gpu_after_optimizations.txt")
    (tmp_path / f"{stem}.sm_80_gpu_after_optimizations-buffer-assignment.txt").write_text("x")
    (tmp_path / f"{stem}.ir-no-opt.ll").write_text("x")
    run = load_run(tmp_path)
    (module,) = run.modules
    assert module.module_id == "0000" and module.stamp == "1669123456789012"
    assert module.name == "cluster_0__XlaCompiledKernel_true_.13"
    assert module.platform == "sm_80" and run.platform == "sm_80"
    assert module.load_after() is not None and module.load_before() is not None


def test_same_id_from_two_processes_gets_distinct_keys(tmp_path: Path) -> None:
    src = dump_file("tf_dense_relu", "*before*")
    for stamp in ("1669123456789012", "1669123456799999"):
        shutil.copy(src, tmp_path / f"{stamp}.module_0000.cluster_0.before_optimizations.txt")
    keys = [m.key for m in scan_dump_dir(tmp_path)]
    assert len(set(keys)) == 2


def test_module_lookup() -> None:
    run = load_run(DATA / "jax_mlp")
    assert run.module("0030.jit_mlp").name == "jit_mlp"
    assert run.module("0030").name == "jit_mlp"
    assert run.module("30").name == "jit_mlp"
    assert run.module("mlp").name == "jit_mlp"
    assert run.module("jit_sqrt").key == "0010.jit_sqrt"
    with pytest.raises(UsageError, match=r"matches 4 modules.*0008\.jit__normal"):
        run.module("jit__normal")
    with pytest.raises(UsageError, match=r"no module matches 'nope'.*modules: 0000\.jit_stage"):
        run.module("nope")


def test_is_trivial() -> None:
    run = load_run(DATA / "jax_mlp")
    trivial = {m.name for m in run.modules if is_trivial(m)}
    assert "jit_mlp" not in trivial
    assert {"jit__normal", "jit_broadcast_in_dim", "jit__threefry_split", "jit_stage"} <= trivial
    assert trivial == {m.name for m in run.modules} - {"jit_mlp"}
    assert not is_trivial(load_run(DATA / "tf_dense_relu").modules[0])
    block = load_run(DATA / "jax_transformer_block")
    assert [m.name for m in block.modules if not is_trivial(m)] == ["jit_block"]


def test_user_function_with_helper_like_size_is_kept_by_name() -> None:
    module = ModuleDump("jit_train_step", "0001", None, None, None)
    assert not is_trivial(module)  # nothing to parse, name is not a helper's


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file or folder") as e:
        load_run(tmp_path / "nope")
    assert e.value.exit_code == 2


def test_folder_without_dumps(tmp_path: Path) -> None:
    (tmp_path / "readme.txt").write_text("x")
    with pytest.raises(UsageError, match=r"no HLO dumps here.*--xla_dump_to"):
        load_run(tmp_path)


def test_folder_of_runs_names_them(tmp_path: Path) -> None:
    for name in ("a-20260101-000000", "b-20260101-000001"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "run.json").write_text("{}")
    with pytest.raises(UsageError, match=r"holds 2 runs.*b-20260101-000001"):
        load_run(tmp_path)


def test_bad_manifest(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text("{not json")
    with pytest.raises(UsageError, match="not a readable run manifest"):
        load_run(tmp_path)
