"""What a run records of its environment, and the hint when XLA compiled nothing:
unit cases, then TensorFlow itself on samples/tf_auto_clustering.py (auto-clustering
with and without `--tf_xla_cpu_global_jit` on the CPU)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hloscope.capture.hints import auto_jit_level, cpu_global_jit, no_xla_hint
from hloscope.capture.runner import framework_env
from hloscope.capture.tf_graphs import GRAPHS_SUBDIR, graph_dump_env, keep_read_stage
from hloscope.cli import app
from tests.capture.test_dump import SAMPLES, _needs

TF = {"tensorflow": "2.21.0"}
CPU = [{"framework": "tensorflow", "platform": "cpu"}]


def test_auto_jit_flags() -> None:
    assert auto_jit_level("--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit") == "2"
    assert auto_jit_level("--tf_xla_auto_jit=fusible,--tf_xla_cpu_global_jit") == "fusible"
    assert auto_jit_level("--tf_xla_auto_jit=0") is None
    assert auto_jit_level(None) is None
    assert cpu_global_jit("--tf_xla_auto_jit=2,--tf_xla_cpu_global_jit")
    assert not cpu_global_jit("--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit=false")


def test_the_hint_names_what_is_missing() -> None:
    alone = no_xla_hint(TF, CPU, {"TF_XLA_FLAGS": "--tf_xla_auto_jit=2"})
    assert "--tf_xla_cpu_global_jit" in alone and "TF_XLA_FLAGS='--tf_xla_auto_jit=2 " in alone
    plain = no_xla_hint(TF, CPU, {})
    assert "jit_compile=True" in plain and "--tf_xla_cpu_global_jit" in plain
    gpu = no_xla_hint(TF, [{"framework": "tensorflow", "platform": "gpu"}], {})
    assert "jit_compile=True" in gpu and "--tf_xla_cpu_global_jit" not in gpu
    assert "jax.jit" in no_xla_hint({"jax": "0.10.2"})
    generic = no_xla_hint({})
    assert "jit_compile=True" in generic and "jax.jit" in generic


def test_graph_dumps_are_asked_for_only_with_auto_clustering(tmp_path: Path) -> None:
    on = {"TF_XLA_FLAGS": "--tf_xla_auto_jit=2"}
    assert graph_dump_env(on, tmp_path)["TF_DUMP_GRAPH_PREFIX"] == str(tmp_path / GRAPHS_SUBDIR)
    assert graph_dump_env({}, tmp_path) == {}
    assert graph_dump_env({**on, "TF_DUMP_GRAPH_PREFIX": "/mine"}, tmp_path) == {}
    folder = tmp_path / GRAPHS_SUBDIR
    folder.mkdir()
    kept = folder / "__inference_f_1.0014.main.after_post_rewrite_for_exec_passes.pbtxt"
    for name in (kept.name, "__inference_f_1.0000.main.initial.pbtxt", "unknown_graph.0.mlir"):
        (folder / name).write_text("node {}\n")
    keep_read_stage(folder)
    assert [p.name for p in folder.iterdir()] == [kept.name]


def test_the_environment_record_leaves_out_other_tools_and_secrets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TF_XLA_FLAGS", "--tf_xla_auto_jit=2")
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", "/root/.terraformrc")  # Terraform's
    monkeypatch.setenv("TF_TOKEN_app_example_io", "x")
    monkeypatch.setenv("JAX_SOME_API_KEY", "x")
    env = framework_env()
    assert env["TF_XLA_FLAGS"] == "--tf_xla_auto_jit=2"
    assert env["XLA_FLAGS"] == "--xla_force_host_platform_device_count=4"
    assert not {"TF_CLI_CONFIG_FILE", "TF_TOKEN_app_example_io", "JAX_SOME_API_KEY"} & set(env)


def _dump(tmp_path: Path, flags: str) -> tuple[int, str, dict]:
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        ["dump", str(SAMPLES / "tf_auto_clustering.py"), "-o", str(out), "--", "--calls", "2"],
        env={"TF_XLA_FLAGS": flags, "XLA_FLAGS": None, "TF_DUMP_GRAPH_PREFIX": None},
    )
    return result.exit_code, result.output, json.loads((out / "run.json").read_text())


@pytest.mark.tf
@pytest.mark.slow
def test_auto_jit_alone_compiles_nothing_on_the_cpu_and_says_why(tmp_path: Path) -> None:
    _needs("tensorflow")
    code, output, manifest = _dump(tmp_path, "--tf_xla_auto_jit=2")
    assert code == 1 and manifest["status"] == "no-modules", output
    assert "XLA compiled nothing" in output and "--tf_xla_cpu_global_jit" in output
    assert manifest["framework_env"]["TF_XLA_FLAGS"] == "--tf_xla_auto_jit=2"


@pytest.mark.tf
@pytest.mark.slow
def test_auto_clustering_sample_keeps_tensorflows_graph(tmp_path: Path) -> None:
    _needs("tensorflow")
    code, output, manifest = _dump(tmp_path, "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit")
    assert code == 0, output
    assert [m["name"].split("__")[0] for m in manifest["modules"]] == ["cluster_0"]
    graphs = sorted((tmp_path / "run" / GRAPHS_SUBDIR).iterdir())
    assert len(graphs) == 1 and graphs[0].name.startswith("__inference_predict_")
    report = CliRunner().invoke(app, ["report", str(tmp_path / "run"), "--json"])
    doc = json.loads(report.stdout)["xla_coverage"]
    assert doc["source"] == "graph dumps" and doc["ops_in_xla"] == 15
    assert {o["type"] for o in doc["outside"]} >= {"_FusedMatMul", "Softmax"}
