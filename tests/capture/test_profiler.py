"""The in-child profiling hooks: they act on the script's own imports, import nothing
themselves, and record real profiles."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hloscope.capture.profiler import Profiling
from hloscope.timing.sources import load_profile
from tests.timing.helpers import needs

ROOT = Path(__file__).resolve().parents[2]
HOOKS = ROOT / "hloscope" / "capture" / "profiler.py"
RUNNER = ROOT / "hloscope" / "capture" / "runner.py"


def test_the_hooks_take_only_a_parsed_framework(tmp_path: Path) -> None:
    # the parent parses `--framework` (`Framework.parse`); the child gets its value
    assert Profiling(tmp_path, only="tensorflow").only == "tensorflow"
    with pytest.raises(ValueError, match="unknown framework"):
        Profiling(tmp_path, only="tf")


def test_hooks_load_by_path_with_the_standard_library_only() -> None:
    # The dump bootstrap loads the hooks by path, under any Python, before the script.
    code = textwrap.dedent(f"""
        import importlib.util, sys
        spec = importlib.util.spec_from_file_location("hooks", {str(HOOKS)!r})
        hooks = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(hooks)
        profiling = hooks.Profiling("unused")
        profiling.install()
        outcome = profiling.stop()
        assert outcome == {{"profiled": {{}}, "keras_backend": None, "errors": []}}, outcome
        loaded = [m for m in sys.modules if m.split(".")[0] in ("hloscope", "tensorflow", "jax")]
        assert not loaded, loaded
    """)
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_torch_xla_hooks_load_by_path_and_set_nothing_unless_torch_xla_is_imported(
    tmp_path: Path,
) -> None:
    """The bootstrap loads them by path too; for a script that never imports torch_xla
    they set no variable and write nothing. A `torch_xla` found on the path gets its
    variables set before its own code runs (a stand-in package here)."""
    hooks = ROOT / "hloscope" / "capture" / "torch_xla_hooks.py"
    fake = tmp_path / "site" / "torch_xla"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        "import os\nSEEN = {k: os.environ.get(k) for k in ('XLA_HLO_DEBUG', 'XLA_FLAGS')}\n"
    )
    code = textwrap.dedent(f"""
        import importlib.util, os, sys
        spec = importlib.util.spec_from_file_location("hooks", {str(hooks)!r})
        hooks = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(hooks)
        t = hooks.TorchXla({str(tmp_path / "run")!r}, environ=dict(os.environ))
        t.install()
        assert t.finish() is None and t.env_set == {{}}
        loaded = [m for m in sys.modules if m.split(".")[0] in ("hloscope", "torch", "torch_xla")]
        assert not loaded, loaded
        t = hooks.TorchXla({str(tmp_path / "run")!r})
        t.install()
        sys.path.insert(0, {str(tmp_path / "site")!r})
        import torch_xla
        assert torch_xla.SEEN["XLA_HLO_DEBUG"] == "1", torch_xla.SEEN
        assert torch_xla.SEEN["XLA_FLAGS"].endswith("--xla_dump_hlo_as_proto"), torch_xla.SEEN
        assert os.environ["PT_XLA_DEBUG_FILE"].endswith("torch_xla/debug.txt")
        out = t.finish()  # a stand-in without torch_xla's APIs: the error is said
        assert out["env"]["XLA_IR_DEBUG"] == "1" and "error" in out, out
    """)
    env = {**os.environ, "XLA_FLAGS": "--xla_dump_to=/tmp/x --xla_dump_hlo_as_text"}
    env.pop("XLA_HLO_DEBUG", None)
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60, env=env)


def test_the_callback_runs_once_the_package_finished_importing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "fakefw"
    package.mkdir()
    (package / "__init__.py").write_text("from . import core\nREADY = True\n")
    (package / "core.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen: list[tuple[str, bool]] = []
    profiling = Profiling(tmp_path / "profile")

    def imported(name: str) -> None:
        seen.append((name, getattr(sys.modules[name], "READY", False)))

    monkeypatch.setattr(profiling, "_imported", imported)
    monkeypatch.setattr("hloscope.capture.profiler.FRAMEWORKS", ("fakefw",))
    profiling.install()
    try:
        import fakefw  # type: ignore[import-not-found]  # noqa: F401

        assert seen == [("fakefw", True)]  # after its __init__ ran to the end
        loader = sys.modules["fakefw"].__spec__.loader
        assert "exec_module" not in vars(loader)  # the wrapper is gone again
    finally:
        profiling.stop()
        sys.modules.pop("fakefw", None)
        sys.modules.pop("fakefw.core", None)
    assert not any(type(f).__name__ == "_AfterImport" for f in sys.meta_path)


def test_a_script_without_a_framework_is_run_unprofiled_and_unchanged(tmp_path: Path) -> None:
    script = tmp_path / "plain.py"
    script.write_text(
        "import json, sys\nprint(sorted(m for m in ('jax', 'tensorflow') if m in sys.modules))\n"
    )
    report = tmp_path / "report.json"
    config = {"framework": None, "logdir": str(tmp_path / "profile"), "hooks": str(HOOKS)}
    env = dict(os.environ, HLOSCOPE_PROFILE=json.dumps(config))
    out = subprocess.run(
        [sys.executable, str(RUNNER), str(report), "script", str(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert out.stdout.strip() == "[]"  # the hooks imported no framework for it
    doc = json.loads(report.read_text())
    assert doc["profile"] == {"profiled": {}, "keras_backend": None, "errors": []}
    assert not (tmp_path / "profile").exists()


_WRAPPER = """
import importlib.util, runpy, sys
spec = importlib.util.spec_from_file_location("hooks", {hooks!r})
hooks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hooks)
profiling = hooks.Profiling({logdir!r})
profiling.install()
try:
    sys.argv = [{script!r}, "--calls", "3"]
    runpy.run_path({script!r}, run_name="__main__")
finally:
    print("PROFILED", sorted(profiling.stop()["profiled"]))
"""


def _profile_sample(sample: str, tmp_path: Path) -> tuple[Path, str]:
    logdir = tmp_path / "profile"
    script = str(ROOT / "samples" / sample)
    code = _WRAPPER.format(hooks=str(HOOKS), script=script, logdir=str(logdir))
    env = dict(
        os.environ,
        TF_CPP_MIN_LOG_LEVEL="2",
        XLA_FLAGS=f"--xla_dump_to={tmp_path / 'hlo'} --xla_dump_hlo_as_text",
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        timeout=300,
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    return tmp_path, out.stdout


@pytest.mark.jax
def test_jax_hooks_record_a_profile(tmp_path: Path) -> None:
    needs("jax")
    run, stdout = _profile_sample("jax_mlp.py", tmp_path)
    assert "PROFILED ['jax']" in stdout
    assert list((run / "profile" / "jax").rglob("*.xplane.pb"))
    assert not list(run.rglob("*.trace.json.gz"))  # only the XSpace is written
    p = load_profile(run)
    m = p.module("jit_mlp")
    # 3 calls, the first (with compilation) left out as warm-up
    assert (m.executions, m.skipped) == (2, 1)
    assert m.static_launches == m.launches_per_execution and m.launch_mismatch is False


@pytest.mark.tf
def test_tensorflow_hooks_record_a_profile(tmp_path: Path) -> None:
    needs("tensorflow")
    if importlib.util.find_spec("tensorflow.tsl") is None:
        pytest.skip("this TensorFlow has no profiler")
    run, stdout = _profile_sample("dense_relu.py", tmp_path)
    assert "PROFILED ['tensorflow']" in stdout
    p = load_profile(run)
    m = p.module("a_inference_dense_relu")
    assert (m.executions, m.skipped) == (2, 1)
    assert [k.name for k in m.kernels][:1] and m.launch_mismatch is False
