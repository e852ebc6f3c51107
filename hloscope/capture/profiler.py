"""In-child profiling for `hloscope dump --profile`: the framework's profiler, started when
the script itself starts using the framework, and stopped when the script ends.

Nothing is decided before the script runs and nothing is imported on its behalf: the
dump child bootstrap installs a `Profiling` before the script, which watches the
script's own imports. TensorFlow's profiler starts when the script's import of
TensorFlow completes, PyTorch/XLA's (`torch_xla.debug.profiler`) when its import of
torch_xla does; JAX's at JAX's first XLA compile (JAX starts its backends then,
and its profiler must not start them earlier: `jax.distributed.initialize` and platform
settings come after `import jax`). So Keras 3 profiles whichever backend
`KERAS_BACKEND` or keras.json chose, and a script that only imports the other framework
(Keras on TensorFlow imports JAX too) leaves no JAX profile. Each framework writes
`<logdir>/<framework>/plugins/profile/<time>/<host>.xplane.pb`, which
`hloscope.timing` reads. Python's own tracer stays off unless asked for
(`--python-trace`): it records millions of events and slows the script down.

This module uses the standard library only and imports nothing from hloscope, so that
the bootstrap can load it by path under any Python.
"""

from __future__ import annotations

import datetime as _dt
import importlib.abc
import importlib.machinery
import json
import socket
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["COMPILES_FILE", "FRAMEWORKS", "Profiling", "keras_backend"]

# The values of `hloscope.frameworks.Framework` whose profilers this module starts (it
# cannot import hloscope); the parent passes `only` as one of them, already parsed.
FRAMEWORKS = ("tensorflow", "jax", "torch_xla")
COMPILES_FILE = "compiles.json"
# JAX records these right after lowering a jitted function and after compiling it
# (`jax._src.dispatch`); the first one heard starts JAX's profiler.
_JAX_COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)


def keras_backend() -> str | None:
    """The backend of the Keras the script imported (`jax`, `tensorflow`, ...), or None
    when it imported none. Asks Keras itself, so KERAS_BACKEND and keras.json count as
    Keras reads them; tf-keras always runs on TensorFlow."""
    keras = sys.modules.get("keras")
    try:
        if keras is not None and hasattr(keras, "backend"):
            return str(keras.backend.backend())
    except Exception:  # a half-imported or unusual Keras: say nothing rather than fail
        pass
    return "tensorflow" if "tf_keras" in sys.modules else None


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls back once a watched top-level package has finished importing.

    It finds the package's spec through the rest of `sys.meta_path` and wraps that
    spec's loader's `exec_module`, so the callback runs right after the package's
    `__init__` did, inside the script's own import statement.
    """

    def __init__(self, names: Sequence[str], callback: Callable[[str], None]) -> None:
        self.names = set(names)
        self.callback = callback
        self._finding: set[str] = set()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.names or fullname in self._finding:
            return None
        self._finding.add(fullname)
        try:
            spec = next(
                (
                    s
                    for finder in sys.meta_path
                    if finder is not self and hasattr(finder, "find_spec")
                    for s in [finder.find_spec(fullname, path, target)]
                    if s is not None
                ),
                None,
            )
        finally:
            self._finding.discard(fullname)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        self.names.discard(fullname)
        run = loader.exec_module
        callback = self.callback

        def exec_module(module: Any) -> None:
            try:
                run(module)
            finally:
                del loader.exec_module  # back to the class's method: nothing of us stays
            callback(fullname)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


class Profiling:
    """The profilers of one dump child: started as the script starts using each
    framework, stopped together at the end.

    Args:
        logdir: The run's profile folder; each framework writes below `<logdir>/<name>`.
        only: Profile only this framework (`--framework`); None: whichever the script
            uses.
        python_trace: Also record Python function calls (JAX's Python tracer,
            TensorFlow's `python_tracer_level`).
        warn: Receives one line for each profiler that fails to start or stop.
    """

    def __init__(
        self,
        logdir: Path | str,
        *,
        only: str | None = None,
        python_trace: bool = False,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self.logdir = Path(logdir)
        if only and only not in FRAMEWORKS:
            raise ValueError(f"unknown framework {only!r}; expected one of {FRAMEWORKS}")
        self.only = only or None
        self.python_trace = python_trace
        self.warn = warn or (lambda line: print(f"hloscope: warning: {line}", file=sys.stderr))
        self.started: dict[str, dict[str, Any]] = {}
        self.errors: list[str] = []
        self._sessions: dict[str, Any] = {}
        self._tried: set[str] = set()
        # JAX's compiles, in order: (function, seconds); written beside its profile.
        self.compiles: list[tuple[str, float]] = []
        self._lock = threading.Lock()
        self._finder: _AfterImport | None = None

    def install(self) -> None:
        """Watch the script's imports (call before the script runs)."""
        wanted = [f for f in FRAMEWORKS if self.only in (None, f)]
        self._finder = _AfterImport([f for f in wanted if f not in sys.modules], self._imported)
        sys.meta_path.insert(0, self._finder)
        for name in [f for f in wanted if f in sys.modules]:  # already there: act now
            self._imported(name)

    def _imported(self, name: str) -> None:
        if name in ("tensorflow", "torch_xla"):
            self._start(name, "import")
            return
        try:
            import jax.monitoring

            def first_compile(event: str, duration_secs: float, **kwargs: str | int) -> None:
                if event == _JAX_COMPILE_EVENTS[1]:
                    self.compiles.append((str(kwargs.get("fun_name", "")), duration_secs))
                if event in _JAX_COMPILE_EVENTS and "jax" not in self.started:
                    self._start("jax", "first compile")

            jax.monitoring.register_event_duration_secs_listener(first_compile)
        except Exception as e:
            self._failed("jax", "start", e)

    def _start(self, framework: str, trigger: str) -> None:
        with self._lock:
            if framework in self._tried or self._finder is None:
                return
            self._tried.add(framework)
            logdir = self.logdir / framework
            try:
                logdir.mkdir(parents=True, exist_ok=True)
                self._sessions[framework] = _STARTS[framework](logdir, self.python_trace)
            except Exception as e:
                self._failed(framework, "start", e)
                return
            self.started[framework] = {"dir": logdir.name, "started_at": trigger}

    def stop(self) -> dict[str, Any]:
        """Stop every profiler that started and write its profile.

        Returns:
            What happened, for the child report: `profiled` (framework -> where it wrote
            and when it started), `keras_backend`, and `errors`.
        """
        with self._lock:
            if self._finder is not None and self._finder in sys.meta_path:
                sys.meta_path.remove(self._finder)
            self._finder = None
            for framework in list(self.started):
                try:
                    _STOPS[framework](self._sessions.pop(framework), self.logdir / framework)
                    if framework == "jax":
                        _write_compiles(self.logdir / framework, self.compiles)
                except Exception as e:
                    self._failed(framework, "stop", e)
                    self.started.pop(framework)
        return {"profiled": self.started, "keras_backend": keras_backend(), "errors": self.errors}

    def _failed(self, framework: str, what: str, e: BaseException) -> None:
        line = f"the {framework} profiler did not {what}: {type(e).__name__}: {e}"
        self.errors.append(line)
        self.warn(line)


def _write_compiles(logdir: Path, compiles: Sequence[tuple[str, float]]) -> None:
    """`<logdir>/compiles.json`: JAX's compile time of each function, in order (as
    `jit(mlp)`), which the profile does not hold, for `hloscope.timing`."""
    doc = {"event": _JAX_COMPILE_EVENTS[1], "compiles": [[n, s] for n, s in compiles]}
    (logdir / COMPILES_FILE).write_text(json.dumps(doc), encoding="utf-8")


def _start_tensorflow(logdir: Path, python_trace: bool) -> None:
    """TensorFlow's profiler with its default options (host tracer level 2, device 1, no
    Python tracer), passed as none: TensorFlow's binding hands every option it is given
    to XLA's `GetRemoteSessionManagerOptionsLocked` in a form that fails its type check
    (`session_manager.cc`: "host_tracer_level expects an i value", one warning each, the
    option ignored), so options would only print warnings. `--python-trace` is asked for
    all the same: where a TensorFlow takes it, it applies."""
    import tensorflow as tf

    options = None
    if python_trace:
        options = tf.profiler.experimental.ProfilerOptions(
            host_tracer_level=2, python_tracer_level=1, device_tracer_level=1, delay_ms=0
        )
    tf.profiler.experimental.start(str(logdir), options=options)


def _stop_tensorflow(session: None, logdir: Path) -> None:
    import tensorflow as tf

    tf.profiler.experimental.stop()


def _start_jax(logdir: Path, python_trace: bool) -> Any:
    """JAX's profiler session, without its Python tracer unless asked for.

    The session is driven directly where this JAX has one, so that stopping writes only
    the XSpace (`jax.profiler.stop_trace` also converts every event to a gzipped JSON
    trace); else through `jax.profiler.start_trace`.
    """
    import jax

    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 1 if python_trace else 0
    try:
        from jax._src.lib import _profiler

        return _profiler.ProfilerSession(options)
    except (ImportError, AttributeError, TypeError):
        jax.profiler.start_trace(str(logdir), profiler_options=options)
        return None


def _stop_jax(session: Any, logdir: Path) -> None:
    if session is None:
        import jax

        jax.profiler.stop_trace()
        return
    data = session.stop()
    host = socket.gethostname() or "localhost"
    folder = logdir / "plugins" / "profile" / f"{_dt.datetime.now():%Y_%m_%d_%H_%M_%S}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{host}.xplane.pb").write_bytes(bytes(data))


def _start_torch_xla(logdir: Path, python_trace: bool) -> None:
    """torch_xla's profiler session (its host tracer and PJRT's: the CPU thunks, GPU
    kernels); it has no Python tracer to turn on or off."""
    import torch_xla.debug.profiler as xp

    xp.start_trace(str(logdir))


def _stop_torch_xla(session: None, logdir: Path) -> None:
    import torch_xla.debug.profiler as xp

    xp.stop_trace()  # writes <logdir>/plugins/profile/<time>/<host>.xplane.pb


_STARTS: dict[str, Callable[[Path, bool], Any]] = {
    "tensorflow": _start_tensorflow,
    "jax": _start_jax,
    "torch_xla": _start_torch_xla,
}
_STOPS: dict[str, Callable[[Any, Path], None]] = {
    "tensorflow": _stop_tensorflow,
    "jax": _stop_jax,
    "torch_xla": _stop_torch_xla,
}
