"""The bootstrap `hloscope dump` runs in the child process, in front of the user's script.

It runs the script (or `-m` module) with `runpy` exactly as `python` would, then writes a
small JSON report: which of TensorFlow, JAX, jaxlib, torch and torch_xla were imported,
their versions, the devices they saw, the exit status and the end of the traceback. It is
run by path with any Python (`--python`), so it imports nothing from hloscope and only the standard
library; it never imports a framework the script did not import itself. It always loads
the compile watch (`compile_watch.py` beside it, standard library only) by path, which
hears each framework's compile events as the script uses it. With
`hloscope dump --profile` (the `HLOSCOPE_PROFILE` variable), it loads the profiler hooks
(`profiler.py` beside it, standard library only) by path; they start the profiler of
each framework as the script starts using it, and the report says which ran. The
PyTorch/XLA hooks (`torch_xla_hooks.py` beside it, loaded the same way) set torch_xla's
debug variables as the script imports torch_xla, and keep its metrics at the end.

Usage: python runner.py REPORT.json (script PATH | module NAME) [ARGS...]
"""

import os
import sys

# Run by path, Python put this file's folder first on sys.path; it holds `jax.py` and
# `tf.py`, which must never shadow the real packages. Removed before any other import.
if (
    __name__ == "__main__"
    and sys.path
    and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__))
):
    del sys.path[0]

import contextlib
import json
import platform
import runpy
import signal
import traceback
from typing import Any

FRAMEWORKS = ("tensorflow", "keras", "jax", "jaxlib", "flax", "numpy", "torch", "torch_xla")
TRACEBACK_LINES = 12
EXIT_MODULE_NOT_FOUND = 2
EXIT_INTERRUPTED = 130


def framework_info() -> dict[str, Any]:
    """Versions of the frameworks this process imported, and the devices they use.

    Only frameworks already in `sys.modules` are asked, and only about devices they have
    already initialised, so that the answer costs nothing and changes nothing.
    """
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in FRAMEWORKS:
        module = sys.modules.get(name)
        if module is not None:
            versions[name] = str(getattr(module, "__version__", None) or "") or None
    devices: list[dict[str, Any]] = []
    if "jax" in sys.modules:
        devices += _jax_devices()
    if "tensorflow" in sys.modules:
        devices += _tf_devices()
    if "torch_xla" in sys.modules:
        devices += _torch_xla_devices()
    return {
        "versions": versions,
        "devices": devices,
        "environment": framework_env(),
        "executable": sys.executable,
        "machine": platform.machine(),
        "system": platform.system(),
    }


# Environment variables that steer XLA and the frameworks, recorded as the script left
# them (a script may set XLA_FLAGS or TF_XLA_FLAGS itself before importing a framework).
ENV_PREFIXES = ("XLA_", "TF_", "JAX_", "KERAS_", "PJRT_", "TPU_", "LIBTPU_", "NCCL_", "PT_XLA")
ENV_NAMES = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "NVIDIA_TF32_OVERRIDE")
_SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "API_KEY")
# Terraform's variables share the TF_ prefix; they say nothing about TensorFlow.
_TERRAFORM = (
    "TF_CLI_", "TF_VAR_", "TF_LOG", "TF_INPUT", "TF_DATA_DIR", "TF_WORKSPACE",
    "TF_IN_AUTOMATION", "TF_REGISTRY_", "TF_PLUGIN_", "TF_TOKEN_", "TF_APPEND_USER_AGENT",
    "TF_IGNORE", "TF_STATE_",
)  # fmt: skip


def framework_env() -> dict[str, str]:
    """The XLA- and framework-related environment variables this process has now."""
    return {
        name: value
        for name, value in sorted(os.environ.items())
        if (name.startswith(ENV_PREFIXES) or name in ENV_NAMES)
        and not name.startswith(_TERRAFORM)
        and not any(word in name.upper() for word in _SECRET_WORDS)
    }


def _jax_devices() -> list[dict[str, Any]]:
    try:
        from jax._src import xla_bridge  # only asked when backends are already up

        if not getattr(xla_bridge, "_backends", None):
            return []
        import jax

        out = []
        for d in jax.devices():
            out.append(
                {
                    "framework": "jax",
                    "platform": str(d.platform),
                    "kind": str(getattr(d, "device_kind", "") or ""),
                    "id": int(d.id),
                    "compute_capability": _str_or_none(getattr(d, "compute_capability", None)),
                }
            )
        return out
    except Exception:
        return []


def _tf_devices() -> list[dict[str, Any]]:
    try:
        tf = sys.modules["tensorflow"]
        out = []
        for d in tf.config.list_physical_devices():
            entry: dict[str, Any] = {
                "framework": "tensorflow",
                "platform": str(d.device_type).lower(),
                "kind": str(d.device_type).lower(),
                "name": str(d.name),
            }
            if d.device_type == "GPU":
                details = tf.config.experimental.get_device_details(d)
                entry["kind"] = str(details.get("device_name", "gpu"))
                cc = details.get("compute_capability")
                if cc:
                    entry["compute_capability"] = ".".join(str(x) for x in cc)
            out.append(entry)
        return out
    except Exception:
        return []


def _torch_xla_devices() -> list[dict[str, Any]]:
    """The devices of torch_xla's PJRT runtime (`CPU:0`, `CUDA:0`), asked only when the
    runtime is already up (asking would start it)."""
    try:
        xlac = sys.modules["torch_xla"]._XLAC
        if not xlac._xla_runtime_is_initialized():
            return []
        out = []
        for i, name in enumerate(xlac._xla_get_all_devices()):
            hw = str(name).split(":", 1)[0]
            out.append(
                {
                    "framework": "torch_xla",
                    "platform": hw.lower(),
                    "kind": hw,
                    "id": i,
                    "name": str(name),
                }
            )
        return out
    except Exception:
        return []


def _str_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def _user_traceback(exc: BaseException) -> list[str]:
    """The formatted traceback without the frames of this bootstrap and of runpy."""
    tb = exc.__traceback__
    here = os.path.abspath(__file__)
    while tb is not None and (
        tb.tb_frame.f_globals.get("__name__") == "runpy"
        or os.path.abspath(tb.tb_frame.f_code.co_filename) == here
    ):
        tb = tb.tb_next
    return traceback.format_exception(type(exc), exc, tb)


def _start_compile_watch(report: dict[str, Any]) -> Any:
    """The compile watch (`compile_watch.py` beside this file), watching the script's
    imports; None, with the reason in the report, when it cannot be set up."""
    try:
        watch = _load_sibling("compile_watch.py").CompileWatch()
        watch.install()
        return watch
    except Exception as e:
        report["compile_watch_error"] = f"{type(e).__name__}: {e}"
        return None


def _stop_compile_watch(watch: Any, report: dict[str, Any]) -> None:
    if watch is None:
        return
    try:
        report["compiles"] = watch.stop()
    except Exception as e:
        report["compile_watch_error"] = f"{type(e).__name__}: {e}"


def _start_profiler(report: dict[str, Any]) -> Any:
    """Set up the profiling `hloscope dump --profile` asked for (HLOSCOPE_PROFILE).

    Returns:
        The hooks' `Profiling`, watching the script's imports; None when not profiling.

    Profiling that cannot be set up is reported, and the script runs unprofiled.
    """
    raw = os.environ.pop("HLOSCOPE_PROFILE", None)  # not for the script's own children
    if not raw:
        return None
    try:
        config = json.loads(raw)
        hooks = _load_module(config["hooks"], "_hloscope_profiler")
        profiling = hooks.Profiling(
            config["logdir"],
            only=config.get("framework"),
            python_trace=bool(config.get("python_trace")),
        )
        profiling.install()
        return profiling
    except Exception as e:
        report["profile_error"] = f"the profiler was not set up: {type(e).__name__}: {e}"
        print(f"hloscope: warning: {report['profile_error']}", file=sys.stderr)
        return None


def _load_sibling(name: str) -> Any:
    """Load a standard-library module that lies beside this file, by path."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
    return _load_module(path, f"_hloscope_{name[:-3]}")


def _load_module(path: str, name: str) -> Any:
    """Load a standard-library module from a file, by path, as `name` (this process
    imports nothing of hloscope: the script's imports stay its own)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _start_torch_xla(report_path: str, report: dict[str, Any]) -> Any:
    """The PyTorch/XLA hooks, watching for the script's import of torch_xla; None when
    they cannot be set up (reported; the script runs as it would)."""
    try:
        hooks = _load_sibling("torch_xla_hooks.py").TorchXla(os.path.dirname(report_path))
        hooks.install()
        return hooks
    except Exception as e:
        report["torch_xla_error"] = f"{type(e).__name__}: {e}"
        return None


def _stop_torch_xla(hooks: Any, report: dict[str, Any]) -> None:
    if hooks is None:
        return
    try:
        found = hooks.finish()
    except Exception as e:
        found = {"error": f"{type(e).__name__}: {e}"}
    if found is not None:
        report["torch_xla"] = found


def _stop_profiler(profiling: Any, report: dict[str, Any]) -> None:
    if profiling is None:
        return
    try:
        outcome = profiling.stop()
    except Exception as e:
        outcome = {"errors": [f"the profiler did not stop: {type(e).__name__}: {e}"]}
        print(f"hloscope: warning: {outcome['errors'][0]}", file=sys.stderr)
    report["profile"] = outcome
    if outcome.get("errors"):
        report["profile_error"] = "; ".join(outcome["errors"])


def main(argv: list[str]) -> int:
    """Run the target, write the report, return the exit status."""
    report_path, kind, target, *args = argv
    report: dict[str, Any] = {"kind": kind, "target": target}
    status = 0
    watch = _start_compile_watch(report)
    profiler = _start_profiler(report)
    torch_xla = _start_torch_xla(report_path, report)
    # hloscope runs this in a process group of its own and forwards Ctrl-C as SIGINT;
    # make sure it is heard even when hloscope itself was started with SIGINT ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        if kind == "module":
            sys.path.insert(0, os.getcwd())  # what `python -m` puts first
            import importlib.util

            try:
                found = importlib.util.find_spec(target) is not None
            except (ImportError, ValueError):
                found = False
            if found:
                sys.argv = [target, *args]
                runpy.run_module(target, run_name="__main__", alter_sys=True)
            else:
                report["error"] = "module-not-found"  # hloscope says so
                status = EXIT_MODULE_NOT_FOUND
        else:
            sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
            sys.argv = [target, *args]
            runpy.run_path(target, run_name="__main__")
    except SystemExit as e:
        code = e.code
        if code is None:
            status = 0
        elif isinstance(code, int):
            status = code
        else:
            print(code, file=sys.stderr)
            status = 1
    except KeyboardInterrupt as e:
        lines = _user_traceback(e)
        sys.stderr.write("".join(lines))
        report["exception"] = {"type": "KeyboardInterrupt", "message": "", "traceback": []}
        status = EXIT_INTERRUPTED
    except BaseException as e:
        lines = _user_traceback(e)
        sys.stderr.write("".join(lines))
        text = "".join(lines).rstrip("\n").splitlines()
        report["exception"] = {
            "type": type(e).__name__,
            "message": str(e),
            "traceback": text[-TRACEBACK_LINES:],
        }
        status = 1
    finally:
        _stop_profiler(profiler, report)
        _stop_compile_watch(watch, report)
        _stop_torch_xla(torch_xla, report)
        sys.stdout.flush()
        sys.stderr.flush()
        report["exit_code"] = status
        # The report must never change the script's outcome.
        with contextlib.suppress(BaseException):
            report.update(framework_info())
        with contextlib.suppress(OSError), open(report_path, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
