"""PyTorch/XLA in the `hloscope dump` child: its debug settings, set as the script imports
torch_xla, and its own records, kept when the script ends.

The dump child bootstrap (`runner.py`) installs a `TorchXla` before the script runs.
Nothing is imported on the script's behalf: only when the script's own `import torch_xla`
starts (and before torch_xla's `__init__` runs) are the variables torch_xla reads at start
set, each only where the user has not set it:

- `XLA_HLO_DEBUG=1` and `XLA_IR_DEBUG=1`: every HLO instruction names its aten op and
  the Python stack that made it;
- `--xla_dump_hlo_as_proto` added to `XLA_FLAGS`: torch_xla's XLA prints no stack frames
  in its HLO text, but keeps them in the binary dump beside it (`hloscope.runs` reads
  them from there);
- `PT_XLA_DEBUG_LEVEL=2` with `PT_XLA_DEBUG_FILE=<run>/torch_xla/debug.txt`: torch_xla's
  compilation and execution analysis, one record per compile and per execution with the
  graph's hash, the cause and the Python frame that triggered it.

When the script ends, torch_xla's own counters and metrics (`torch_xla.debug.metrics`:
`CompileTime`, `ExecuteTime`, `UncachedCompile`, the `aten::` ops that fell back to the
CPU) are written to `<run>/torch_xla/metrics.json`.

This module uses the standard library only and imports nothing from hloscope, so that
the bootstrap can load it by path under any Python.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["DEBUG_FILE", "ENV", "FOLDER", "METRICS_FILE", "TorchXla"]

FOLDER = "torch_xla"
"""The folder of a run that holds torch_xla's own records."""
DEBUG_FILE = "debug.txt"
METRICS_FILE = "metrics.json"
ENV = {"XLA_HLO_DEBUG": "1", "XLA_IR_DEBUG": "1", "PT_XLA_DEBUG_LEVEL": "2"}
"""What hloscope sets before torch_xla starts, where the user has not."""
PROTO_FLAG = "--xla_dump_hlo_as_proto"
# torch_xla's metrics with a time per sample (nanoseconds), and the counters kept.
_TIMED = ("CompileTime", "ExecuteTime", "ExecuteReplicatedTime", "TransferFromDeviceTime")
_COUNTERS = ("UncachedCompile", "CachedCompile", "ExecuteComputation", "MarkStep")


class _BeforeImport(importlib.abc.MetaPathFinder):
    """Calls back once, when the import of a watched top-level package starts; finds
    nothing itself, so the import goes on as it would have."""

    def __init__(self, name: str, callback: Callable[[], None]) -> None:
        self.name = name
        self.callback: Callable[[], None] | None = callback

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == self.name and self.callback is not None:
            callback, self.callback = self.callback, None
            callback()
        return None


class TorchXla:
    """torch_xla's settings and records in one dump child.

    Args:
        run_dir: The run folder; torch_xla's records go to `<run_dir>/torch_xla/`.
        environ: The environment to set (default: `os.environ`, which torch_xla reads).
    """

    def __init__(self, run_dir: Path | str, environ: Any = None) -> None:
        self.folder = Path(run_dir) / FOLDER
        self.environ = os.environ if environ is None else environ
        self.env_set: dict[str, str] = {}
        self.late = False  # torch_xla was imported before the hooks were installed
        self._finder: _BeforeImport | None = None

    def install(self) -> None:
        """Watch the script's imports (call before the script runs)."""
        if "torch_xla" in sys.modules:
            self.late = True
            return
        self._finder = _BeforeImport("torch_xla", self.prepare)
        sys.meta_path.insert(0, self._finder)

    def prepare(self) -> None:
        """Set torch_xla's debug variables (those the user has not set) and the proto
        dump flag; called as the script's import of torch_xla starts."""
        for name, value in ENV.items():
            if name not in self.environ:
                self.environ[name] = self.env_set[name] = value
        if "PT_XLA_DEBUG_FILE" not in self.environ:
            with contextlib.suppress(OSError):
                self.folder.mkdir(parents=True, exist_ok=True)
                path = str(self.folder / DEBUG_FILE)
                self.environ["PT_XLA_DEBUG_FILE"] = self.env_set["PT_XLA_DEBUG_FILE"] = path
        flags = self.environ.get("XLA_FLAGS", "")
        if "xla_dump_to" in flags and PROTO_FLAG not in flags.split():
            value = f"{flags} {PROTO_FLAG}".strip()
            self.environ["XLA_FLAGS"] = self.env_set["XLA_FLAGS"] = value

    def finish(self) -> dict[str, Any] | None:
        """Stop watching; when the script used torch_xla, write its metrics.

        Returns:
            For the child report: `env` (what was set), `device` (the PJRT device type),
            `late`, and `error` when the metrics could not be read; None when
            the script never imported torch_xla.
        """
        if self._finder is not None and self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        if "torch_xla" not in sys.modules:
            return None
        out: dict[str, Any] = {"env": self.env_set, "late": self.late}
        try:
            out["device"] = _device()
            metrics = _metrics()
            self.folder.mkdir(parents=True, exist_ok=True)
            (self.folder / METRICS_FILE).write_text(json.dumps(metrics, indent=1), "utf-8")
        except Exception as e:  # a torch_xla without these APIs: the run stands
            out["error"] = f"torch_xla's metrics were not read: {type(e).__name__}: {e}"
        return out


def _device() -> str | None:
    """The PJRT device type torch_xla runs on (`CPU`, `CUDA`, `TPU`)."""
    import torch_xla.runtime as xr

    return xr.device_type()


def _metrics() -> dict[str, Any]:
    """torch_xla's metrics and counters as its own API gives them.

    `metrics`: for each timed metric, `count` (samples posted), `total_ns` (their sum)
    and `samples_ns` (the last samples torch_xla keeps, in order); `counters`: the
    compile and execution counters; `fallbacks`: each `aten::` counter (an op that ran on
    the CPU outside XLA) and its count.
    """
    import torch_xla.debug.metrics as met

    names = set(met.metric_names())
    metrics = {}
    for name in _TIMED:
        if name in names:
            count, total, samples = met.metric_data(name)
            metrics[name] = {
                "count": int(count),
                "total_ns": float(total),
                "samples_ns": [float(v) for _, v in samples],
            }
    counters = {}
    fallbacks = {}
    for name in met.counter_names():
        if name in _COUNTERS:
            counters[name] = int(met.counter_value(name) or 0)
        elif name.startswith("aten::"):
            fallbacks[name] = int(met.counter_value(name) or 0)
    return {"metrics": metrics, "counters": counters, "fallbacks": fallbacks}
