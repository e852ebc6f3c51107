"""In-child compile watching for every `hloscope dump`: what the frameworks themselves say
about each compile, heard while the script runs.

JAX records a duration event for each phase of a compile (`jax.monitoring`: tracing the
function, lowering it to HLO, XLA's compile) and, with `jax_explain_cache_misses`, logs
why a call missed its caches. The watch registers a listener when the script's own
`import jax` completes and turns the explanations on, keeping them for the run (shown
on stderr only when the user asked for them too). TensorFlow logs each XLA compile of a
function with its time (`device_compilation_profiler.cc`, at VLOG 1, which
`TF_CPP_VMODULE` switches on); that log is written only when TensorFlow's C++ logging
admits INFO records, so the watch sees to it while TensorFlow is imported and gives the
script its own `TF_CPP_MIN_LOG_LEVEL` back afterwards (the INFO records are hidden from
the live display and kept in `stderr.log`, where `hloscope.capture.compiles` reads
them). The watch also notes which framework the script really used, so that a run is
not called a JAX run because TensorFlow imported JAX.

This module uses the standard library only and imports nothing from hloscope, so that
the bootstrap can load it by path under any Python.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["JAX_PHASES", "TF_VMODULE", "CompileWatch", "tf_vmodule"]

# JAX's compile events (`jax._src.dispatch`), by the phase hloscope calls them.
JAX_PHASES = {
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    "/jax/core/compile/backend_compile_duration": "compile",
}
# The TensorFlow source file whose VLOG(1) line reports each XLA compile and its time.
TF_VMODULE = "device_compilation_profiler=1"
# The logger JAX's tracing-cache explanations come from (`explain` in partial_eval.py).
_JAX_EXPLAIN_LOGGER = "jax._src.interpreters.partial_eval"
_MISS = "TRACING CACHE MISS"
_MAX_EVENTS = 50_000
_MAX_NAME = 300
_MAX_REASON = 4000


def tf_vmodule(user: str | None) -> str:
    """`TF_CPP_VMODULE` for the child: the user's modules, plus TensorFlow's compile log
    (unless the user set that module's level already)."""
    parts = [p for p in (user or "").split(",") if p.strip()]
    if any(p.split("=", 1)[0].strip() == TF_VMODULE.split("=")[0] for p in parts):
        return ",".join(parts)
    return ",".join([*parts, TF_VMODULE])


class _ImportHook(importlib.abc.MetaPathFinder):
    """Calls `before(name)` as a watched top-level package starts importing and
    `after(name)` once its `__init__` has run, inside the script's own import."""

    def __init__(
        self, names: Sequence[str], before: Callable[[str], None], after: Callable[[str], None]
    ) -> None:
        self.names = set(names)
        self.before, self.after = before, after
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
        before, after = self.before, self.after

        def exec_module(module: Any) -> None:
            before(fullname)
            try:
                run(module)
            finally:
                # back to the class's method, unless another hook (the profiler's)
                # wrapped ours since: it removes its own
                if vars(loader).get("exec_module") is exec_module:
                    del loader.exec_module
                after(fullname)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


class CompileWatch:
    """The compile events of one dump child, in the order they happened.

    Each event is a list: `["jax", phase, function, seconds]` for JAX's compile phases
    (`trace`, `lower`, `compile`), `["jax", "miss", function, text]` for JAX's
    explanation of a cache miss. TensorFlow's compiles are in its log, read afterwards.
    """

    def __init__(self) -> None:
        self.events: list[list[Any]] = []
        self.notes: list[str] = []
        self._jax_used = False
        self._user_explains = False
        self._tf_level: str | None = None
        self._hook: _ImportHook | None = None
        self._lock = threading.Lock()

    def install(self) -> None:
        """Watch the script's imports (call before the script runs)."""
        names = [n for n in ("tensorflow", "jax") if n not in sys.modules]
        self._hook = _ImportHook(names, self._before, self._after)
        sys.meta_path.insert(0, self._hook)
        if "jax" in sys.modules:
            self._after("jax")

    def _before(self, name: str) -> None:
        if name != "tensorflow":
            return
        level = os.environ.get("TF_CPP_MIN_LOG_LEVEL")
        if level not in (None, "", "0"):
            # TensorFlow reads it once, at its first log record (during this import)
            self._tf_level = level
            os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"

    def _after(self, name: str) -> None:
        if name == "tensorflow":
            if self._tf_level is not None:  # the script sees the level it set
                os.environ["TF_CPP_MIN_LOG_LEVEL"] = self._tf_level
            return
        try:
            import jax

            jax.monitoring.register_event_duration_secs_listener(self._jax_event)
            self._explain(jax)
        except Exception as e:  # an older or unusual JAX: run on, without its events
            self.notes.append(f"JAX's compile events were not heard: {type(e).__name__}: {e}")

    def _jax_event(self, event: str, duration_secs: float, **kwargs: Any) -> None:
        phase = JAX_PHASES.get(event)
        if phase is None:
            return
        self._jax_used = True
        self._add(["jax", phase, str(kwargs.get("fun_name", ""))[:_MAX_NAME], duration_secs])

    def _add(self, event: list[Any]) -> None:
        with self._lock:
            if len(self.events) < _MAX_EVENTS:
                self.events.append(event)

    def _explain(self, jax: Any) -> None:
        """Turn on JAX's cache-miss explanations and keep them; they reach stderr only
        when the user turned them on too."""
        self._user_explains = bool(jax.config.jax_explain_cache_misses)
        jax.config.update("jax_explain_cache_misses", True)
        watch = self

        class _Keep(logging.Filter):
            def filter(self, record: logging.LogRecord) -> bool:
                try:
                    text = record.getMessage()
                except Exception:
                    return True
                if not text.startswith(_MISS):
                    return True
                watch._add(["jax", "miss", "", text[:_MAX_REASON]])
                return watch._user_explains

        logging.getLogger(_JAX_EXPLAIN_LOGGER).addFilter(_Keep())

    def stop(self) -> dict[str, Any]:
        """Stop watching.

        Returns:
            For the child report: `events` (in order), `used` (the frameworks the
            script compiled or traced with) and `notes`.
        """
        if self._hook is not None and self._hook in sys.meta_path:
            sys.meta_path.remove(self._hook)
        self._hook = None
        used = ["jax"] if self._jax_used else []
        if _tensorflow_used():
            used.append("tensorflow")
        with self._lock:
            return {"events": list(self.events), "used": used, "notes": list(self.notes)}


def _tensorflow_used() -> bool:
    """Whether the script made a `tf.function` with `jit_compile=True` (TensorFlow's own
    counter); importing TensorFlow, or tracing functions XLA never sees (`tf.data`), is
    not compiling with it. Auto-clustered runs show in TensorFlow's compile log."""
    if "tensorflow" not in sys.modules:
        return False
    try:
        from tensorflow.python.eager.polymorphic_function import polymorphic_function

        return bool(polymorphic_function._tf_function_counter.get_cell("1").value())
    except Exception:  # another TensorFlow: the dump's module names will tell
        return False
