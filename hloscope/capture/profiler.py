"""In-child profiling hooks for `hloscope dump --profile`: start and stop the framework's
profiler around the user's script.

The dump child bootstrap calls `start` before the script runs and `stop` after it ends;
the profiler writes `<logdir>/plugins/profile/<time>/<host>.xplane.pb` (JAX also
`<host>.trace.json.gz`), which `hloscope.timing.load_profile` reads. This module uses the
standard library only and imports nothing from hloscope, so that the bootstrap can load it
by path under any Python; the framework is imported only when a hook is called.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

__all__ = ["FRAMEWORKS", "framework_from_imports", "normalize_framework", "start", "stop"]

FRAMEWORKS = ("tensorflow", "jax")

# Top-level packages whose import says which framework a script runs on. Keras counts
# as TensorFlow (its default backend), as the issue asks.
_PACKAGES = {
    "tensorflow": "tensorflow",
    "tf_keras": "tensorflow",
    "keras": "tensorflow",
    "jax": "jax",
    "jaxlib": "jax",
    "flax": "jax",
    "optax": "jax",
    "equinox": "jax",
    "haiku": "jax",
}
_ALIASES = {"tf": "tensorflow", "tensorflow": "tensorflow", "jax": "jax"}
_IMPORT_LINE = re.compile(r"^\s*(?:from\s+([\w.]+)\s+import\b|import\s+([\w.,\s]+?)(?:\s+as\b|$))")


def normalize_framework(framework: str) -> str:
    """`tf`/`tensorflow` -> `tensorflow`, `jax` -> `jax`.

    Raises:
        ValueError: Any other name.
    """
    name = _ALIASES.get(framework.strip().lower())
    if name is None:
        raise ValueError(f"unknown framework {framework!r}; expected 'tensorflow' or 'jax'")
    return name


def _imported(script_source: str) -> list[str]:
    """Top-level names of every module the source imports (absolute imports only)."""
    try:
        tree = ast.parse(script_source)
    except (SyntaxError, ValueError):
        # Not valid Python for this interpreter: fall back to reading import lines.
        names = []
        for line in script_source.splitlines():
            m = _IMPORT_LINE.match(line)
            if m:
                names += [p.split()[0] for p in (m.group(1) or m.group(2)).split(",") if p.strip()]
        return [n.split(".")[0] for n in names]
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module.split(".")[0])
    return names


def framework_from_imports(script_source: str) -> str | None:
    """Which framework a script uses, from its imports.

    `import tensorflow`, `from tensorflow ...`, `import keras` mean TensorFlow;
    `import jax`, `from jax ...`, `import flax` (and optax, equinox, haiku) mean JAX.
    Imports anywhere count (inside functions too); strings and comments do not.

    Args:
        script_source: The script's text.

    Returns:
        `"tensorflow"` or `"jax"`; None when the script imports neither, or both (then
        the caller has to ask which one to profile).
    """
    found = {_PACKAGES[n] for n in _imported(script_source) if n in _PACKAGES}
    return found.pop() if len(found) == 1 else None


def start(framework: str, logdir: Path | str) -> None:
    """Start the framework's profiler, writing into `logdir`.

    TensorFlow: `tf.profiler.experimental.start(logdir)`; JAX:
    `jax.profiler.start_trace(logdir)`. Imports the framework if the script has not.

    Args:
        framework: `tensorflow` (or `tf`) or `jax`.
        logdir: The profiler's log dir; created when missing.

    Raises:
        ValueError: Unknown framework.
        ImportError: The framework is not installed.
    """
    name = normalize_framework(framework)
    path = Path(logdir)
    path.mkdir(parents=True, exist_ok=True)
    if name == "tensorflow":
        import tensorflow as tf

        tf.profiler.experimental.start(str(path))
    else:
        import jax

        jax.profiler.start_trace(str(path))


def stop(framework: str) -> None:
    """Stop the profiler `start` started and write the profile.

    Raises:
        ValueError: Unknown framework. When no profiling session runs, TensorFlow and
            JAX raise their own errors, passed on as they are.
    """
    name = normalize_framework(framework)
    if name == "tensorflow":
        import tensorflow as tf

        tf.profiler.experimental.stop()
    else:
        import jax

        jax.profiler.stop_trace()
