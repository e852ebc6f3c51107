"""What a run ran on: framework, versions, platform and device, for the manifest.

The child bootstrap (`runner.py`) reports what the script imported and which devices it
saw; the dump file names say what XLA compiled for. These functions combine the two,
never importing a framework in the hloscope process.
"""

from __future__ import annotations

import functools
import os
import platform as _platform
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hloscope.runs import ModuleDump, platform_of

__all__ = ["cpu_model", "detect_device", "detect_platform", "framework_of_run"]

_TF_PREFIXES = ("a_inference_", "cluster_", "tf_")
_JAX_PREFIXES = ("jit_", "pjit_", "xmap_", "pmap_")
_TORCH_XLA_PREFIXES = ("SyncTensorsGraph",)


def framework_of_run(
    versions: Mapping[str, Any],
    modules: Iterable[ModuleDump] = (),
    used: Iterable[str] = (),
) -> str | None:
    """`"tensorflow"`, `"jax"`, `"torch_xla"`, `"jax+tensorflow"`, ... or None: what the
    script compiled with.

    Args:
        versions: Imported packages and their versions (from the child report).
        modules: The run's modules; their names tell (TensorFlow names its modules
            `a_inference_*`/`cluster_*`, JAX `jit_*`, PyTorch/XLA `SyncTensorsGraph.*`).
        used: The frameworks the child saw the script trace or compile with (its compile
            watch). With the module names, they decide; what was merely imported
            (TensorFlow imports JAX) counts only when nothing else tells.
    """
    names = [m.name for m in modules]
    by_name = {
        fw
        for fw, prefixes in (
            ("tensorflow", _TF_PREFIXES),
            ("jax", _JAX_PREFIXES),
            ("torch_xla", _TORCH_XLA_PREFIXES),
        )
        if any(n.startswith(prefixes) for n in names)
    }
    known = {"tensorflow", "jax", "torch_xla"}
    imported = {fw for fw in known if fw in versions}
    found = (by_name | set(used)) & known or imported
    if not found:
        return None
    return "+".join(sorted(found))


def detect_platform(
    modules: Iterable[ModuleDump], devices: Sequence[Mapping[str, Any]] = ()
) -> str | None:
    """What XLA compiled for: from the after-optimization file names, else the devices.

    Returns:
        `cpu`, `sm_90`, `gpu`, `gfx950`, ... or None when nothing says.
    """
    found = platform_of(modules)
    if found:
        return found
    accelerators = [d for d in devices if d.get("platform") not in (None, "cpu")]
    for d in accelerators:
        cc = d.get("compute_capability")
        if cc and str(d.get("platform")) in ("gpu", "cuda"):
            return "sm_" + str(cc).replace(".", "")
    if accelerators:
        return str(accelerators[0]["platform"])
    return "cpu" if devices else None


def detect_device(platform: str | None, devices: Sequence[Mapping[str, Any]] = ()) -> str | None:
    """A human name of the device: `NVIDIA H200`, `2x NVIDIA H100`, or the CPU model."""
    if platform is None and not devices:
        return None
    if platform not in (None, "cpu"):
        kinds = [
            str(d.get("kind"))
            for d in devices
            if d.get("platform") not in (None, "cpu") and d.get("kind")
        ]
        # TensorFlow and JAX may both report the same GPU.
        per_framework: dict[str, list[str]] = {}
        for d in devices:
            if d.get("platform") not in (None, "cpu") and d.get("kind"):
                per_framework.setdefault(str(d.get("framework")), []).append(str(d["kind"]))
        if per_framework:
            kinds = max(per_framework.values(), key=len)
        if kinds:
            name = kinds[0]
            return name if len(kinds) == 1 else f"{len(kinds)}x {name}"
        return platform
    return cpu_model()


@functools.cache
def cpu_model() -> str:
    """The CPU model name (`AMD EPYC 7B13`), else the machine type (`x86_64`)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    cores = os.cpu_count()
                    return f"{name} ({cores} cores)" if cores else name
    except OSError:
        pass
    return _platform.processor() or _platform.machine() or "cpu"
