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

from hloscope.frameworks import Framework
from hloscope.runs import ModuleDump, platform_of

__all__ = ["cpu_model", "detect_device", "detect_platform", "framework_of_run"]

# How each framework names the modules it compiles.
_PREFIXES = {
    Framework.TENSORFLOW: ("a_inference_", "cluster_", "tf_"),
    Framework.JAX: ("jit_", "pjit_", "xmap_", "pmap_"),
    Framework.TORCH_XLA: ("SyncTensorsGraph",),
}


def framework_of_run(
    versions: Mapping[str, Any],
    modules: Iterable[ModuleDump] = (),
    used: Iterable[str] = (),
) -> tuple[Framework, ...]:
    """What the script compiled with, sorted; empty when nothing tells.

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
        fw for fw, prefixes in _PREFIXES.items() if any(n.startswith(prefixes) for n in names)
    }
    seen = {f for u in used if (f := Framework.lookup(u)) is not None}
    imported = {fw for fw in Framework if fw.value in versions}
    found = by_name | seen or imported
    return tuple(sorted(found, key=lambda f: f.value))


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
