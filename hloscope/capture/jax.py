"""JAX support for `hloscope.inspect`: before/after HLO of one function, in process.

Imported only when JAX code is inspected; JAX itself is imported inside the function,
with an install hint when it is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hloscope.capture.compile_watch import JAX_PHASES
from hloscope.capture.inprocess import Captured
from hloscope.errors import MissingDependencyError
from hloscope.frameworks import Framework
from hloscope.manifest import Compile

__all__ = ["capture"]


def capture(fn: Callable[..., Any], args: Sequence[Any]) -> Captured:
    """Lower and compile `fn(*args)` with `jax.jit` and return both HLO texts.

    A jitted function (anything with `.lower`) is used as it is; any other callable is
    wrapped in `jax.jit`. Before: `lower(*args).as_text('hlo')`; after:
    `.compile().as_text()`.

    Raises:
        MissingDependencyError: JAX is not installed.
    """
    try:
        import jax
    except ImportError:
        raise MissingDependencyError("JAX is not installed; pip install 'hloscope[jax]'") from None
    jitted = fn if hasattr(fn, "lower") else jax.jit(fn)
    phases: dict[str, float] = {}
    names: list[str] = []

    def listen(event: str, duration_secs: float, **kwargs: str | int) -> None:
        phase = JAX_PHASES.get(event)
        if phase is not None:  # what lower() and compile() below cost, as JAX times it
            phases[phase] = phases.get(phase, 0.0) + duration_secs
            if phase != "trace":
                names.append(str(kwargs.get("fun_name", "")))

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        lowered = jitted.lower(*args)
        before = lowered.as_text("hlo")
        after = lowered.compile().as_text()
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    compiled = None
    if "compile" in phases:
        name = names[-1] if names else "jit"
        compiled = Compile(Framework.JAX, name, sum(phases.values()), phases)
    return Captured(
        framework=Framework.JAX,
        before=before,
        after=after,
        platform=_platform(jax),
        compile=compiled,
    )


def _platform(jax: Any) -> str:
    """`cpu`, `sm_XY` for a CUDA GPU, else JAX's backend name (`gpu`, `tpu`, ...)."""
    backend = str(jax.default_backend())
    if backend == "cpu":
        return "cpu"
    device = jax.devices()[0]
    cc = getattr(device, "compute_capability", None)
    if cc and backend in ("gpu", "cuda"):
        return "sm_" + str(cc).replace(".", "")
    return backend
