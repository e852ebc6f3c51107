"""TensorFlow support for `hloscope.inspect`: before/after HLO of one function, in process.

Imported only when TensorFlow code is inspected; TensorFlow itself is imported inside the
function, with an install hint when it is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hloscope.capture.inprocess import Captured
from hloscope.errors import MissingDependencyError
from hloscope.frameworks import Framework

__all__ = ["capture"]


def capture(fn: Callable[..., Any], args: Sequence[Any]) -> Captured:
    """Compile `fn(*args)` with XLA through TensorFlow and return both HLO texts.

    A `tf.function` is used as it is; any other callable is wrapped in
    `tf.function(fn, jit_compile=True)`. Uses `experimental_get_compiler_ir` with
    `stage='hlo'` (before optimization) and `stage='optimized_hlo'` (after).

    Raises:
        MissingDependencyError: TensorFlow is not installed.
        tf.errors.InvalidArgumentError: XLA cannot compile the function.
    """
    try:
        import tensorflow as tf
    except ImportError:
        raise MissingDependencyError(
            "TensorFlow is not installed; pip install 'hloscope[tf]' (tensorflow-cpu)"
        ) from None
    function = fn if hasattr(fn, "experimental_get_compiler_ir") else None
    if function is None:
        function = tf.function(fn, jit_compile=True)
    ir = function.experimental_get_compiler_ir(*args)
    before = ir(stage="hlo")
    after = ir(stage="optimized_hlo")
    return Captured(
        framework=Framework.TENSORFLOW,
        before=before,
        after=after,
        platform=_platform(tf),
    )


def _platform(tf: Any) -> str:
    """`cpu`, or `sm_XY` for the GPU TensorFlow places the function on by default."""
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return "cpu"
    try:
        cc = tf.config.experimental.get_device_details(gpus[0]).get("compute_capability")
    except Exception:  # details are best effort; the platform is still a GPU
        cc = None
    return "sm_" + "".join(str(x) for x in cc) if cc else "gpu"
