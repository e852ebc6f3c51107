"""What to do when XLA compiled nothing: a hint for the framework and platform the script
used, and the environment it ran with.

The child bootstrap (`runner.py`) reports which frameworks the script imported, the
devices they saw and the XLA- and framework-related environment variables as the
script left them (`framework_env`); `no_xla_hint` turns that into the one sentence
`hloscope dump` prints when the dump folder stayed empty.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["auto_jit_level", "cpu_global_jit", "no_xla_hint"]

_GENERIC = (
    "Compile the model with XLA: tf.function(f, jit_compile=True), Keras "
    "model.compile(jit_compile=True), or jax.jit(f)."
)
_TF = (
    "TensorFlow compiles with XLA only where asked: tf.function(f, jit_compile=True), "
    "Keras model.compile(jit_compile=True), or auto-clustering with "
    "TF_XLA_FLAGS='--tf_xla_auto_jit=2'{cpu}."
)
_TF_CPU = " (on the CPU also --tf_xla_cpu_global_jit)"
# TensorFlow registers its CPU JIT device with the auto-clustering policy
# `kIfEnabledGlobally` only when --tf_xla_cpu_global_jit is set, else
# `kIfExplicitlyRequested` (tensorflow/compiler/tf2xla/xla_op_registry.cc,
# `XlaOpRegistry::GetCompilationDevice`): --tf_xla_auto_jit alone clusters nothing there.
_TF_AUTO_CPU = (
    "TF_XLA_FLAGS turns on auto-clustering ({flag}), but TensorFlow leaves the CPU out of "
    "it unless TF_XLA_FLAGS also has --tf_xla_cpu_global_jit: run with "
    "TF_XLA_FLAGS='{flags} --tf_xla_cpu_global_jit', or compile the function with "
    "tf.function(f, jit_compile=True)."
)
_JAX = "JAX compiles with XLA under jax.jit(f) (and every op it runs eagerly)."


def auto_jit_level(tf_xla_flags: str | None) -> str | None:
    """The value of `--tf_xla_auto_jit` in a `TF_XLA_FLAGS` string (`2`, `1`,
    `fusible`, ...), or None when absent or off (`0`, `-1`)."""
    if not tf_xla_flags:
        return None
    found = None
    for word in re.split(r"[\s,]+", tf_xla_flags):
        m = re.fullmatch(r"--tf_xla_auto_jit=(\S+)", word)
        if m:
            found = m.group(1)
    return None if found in (None, "0", "-1") else found


def cpu_global_jit(tf_xla_flags: str | None) -> bool:
    """Whether a `TF_XLA_FLAGS` string turns on `--tf_xla_cpu_global_jit`."""
    words = re.split(r"[\s,]+", tf_xla_flags or "")
    on = {"--tf_xla_cpu_global_jit", "--tf_xla_cpu_global_jit=true", "--tf_xla_cpu_global_jit=1"}
    return any(w in on for w in words)


def _cpu_only(devices: Sequence[Mapping[str, Any]]) -> bool:
    platforms = {str(d.get("platform", "")).lower() for d in devices if d.get("platform")}
    return not platforms or platforms <= {"cpu"}


def no_xla_hint(
    versions: Mapping[str, Any],
    devices: Sequence[Mapping[str, Any]] = (),
    env: Mapping[str, str] | None = None,
) -> str:
    """What was missing for XLA to compile anything, for the framework and platform the
    script used.

    Args:
        versions: Imported packages (the child report's `versions`).
        devices: Devices the frameworks saw (`platform` of each).
        env: XLA- and framework-related environment variables as the script left them
            (`RunManifest.framework_env`).
    """
    env = env or {}
    flags = env.get("TF_XLA_FLAGS")
    if "tensorflow" in versions:
        cpu = _cpu_only([d for d in devices if d.get("framework") in (None, "tensorflow")])
        level = auto_jit_level(flags)
        if level is not None and cpu and not cpu_global_jit(flags):
            words = shlex.join(shlex.split(flags or ""))
            return _TF_AUTO_CPU.format(flag=f"--tf_xla_auto_jit={level}", flags=words)
        return _TF.format(cpu=_TF_CPU if cpu else "")
    if "jax" in versions:
        return _JAX
    return _GENERIC
