"""Unit tests for planning a dump and reading its logs afterwards (no child process)."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

import pytest

from hloscope.capture.run import plan_dump, xla_error_lines
from hloscope.errors import UsageError

NOW = dt.datetime(2026, 12, 2, 18, 30, 5)


def test_default_run_folder_is_named_after_script_and_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.py").write_text("pass\n")
    plan = plan_dump("model.py", ["--x", "1"], environ={}, now=NOW, command=["hloscope"])
    assert plan.run_dir == tmp_path / "hloscope-runs" / "model-20261202-183005"
    assert plan.dump_dir == plan.run_dir / "dump"
    assert plan.python == sys.executable
    assert plan.script_command == [sys.executable, "model.py", "--x", "1"]
    assert plan.child_argv[-4:] == ["script", "model.py", "--x", "1"]
    assert plan.run_dir.is_dir()  # claimed: the next run in the same second gets a suffix
    again = plan_dump("model.py", environ={}, now=NOW)
    assert again.run_dir.name == "model-20261202-183005-2"
    module = plan_dump(module="pkg.train", environ={}, now=NOW)
    assert module.run_dir.name == "train-20261202-183005"
    assert module.display_name == "-m pkg.train"


def test_env_set_merges_user_flags(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("pass\n")
    plan = plan_dump(
        tmp_path / "m.py",
        out=tmp_path / "run",
        module_re="jit_mlp",
        environ={"XLA_FLAGS": "--xla_dump_hlo_as_proto --xla_dump_hlo_module_re=x"},
    )
    assert plan.env_set["XLA_FLAGS"] == (
        f"--xla_dump_hlo_as_proto --xla_dump_to={tmp_path / 'run' / 'dump'} "
        "--xla_dump_hlo_as_text --xla_dump_hlo_module_re=jit_mlp"
    )
    assert len(plan.flag_conflicts) == 1 and plan.user_xla_flags is not None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "give a script"),
        ({"script": "a.py", "module": "b"}, "give a script"),
        ({"module": "not a name"}, "not a module name"),
        ({"module": "m", "python": "/no/such/python"}, "--python /no/such/python: no such"),
        ({"module": "m", "module_re": "("}, "not a valid regex"),
    ],
)
def test_bad_requests(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        plan_dump(environ={}, **kwargs)  # type: ignore[arg-type]


def test_out_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("pass\n")
    (tmp_path / "f").write_text("x")
    with pytest.raises(UsageError, match="is a file"):
        plan_dump(tmp_path / "m.py", out=tmp_path / "f", environ={})


def test_xla_error_lines_from_both_logs(tmp_path: Path) -> None:
    (tmp_path / "stderr.log").write_text(
        "I0000 00:00:1.2  10 port.cc:153] oneDNN custom operations are on.\n"
        "W0000 00:00:1.3  10 op_kernel.cc:1857] OP_REQUIRES failed at xla_ops.cc:3: "
        "INVALID_ARGUMENT: Detected unsupported operations: UniqueWithCounts\n"
    )
    (tmp_path / "stdout.log").write_text(
        "model: XLA compile error (InvalidArgumentError): Detected unsupported operations\n"
    )
    assert xla_error_lines(tmp_path) == [
        "OP_REQUIRES failed at xla_ops.cc:3: INVALID_ARGUMENT: Detected unsupported "
        "operations: UniqueWithCounts",
        "model: XLA compile error (InvalidArgumentError): Detected unsupported operations",
    ]
    assert xla_error_lines(tmp_path / "missing") == []
