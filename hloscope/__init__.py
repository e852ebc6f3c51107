"""hloscope: see what the XLA compiler fused.

The pipeline is capture -> hlo -> analysis -> timing -> render, one sub-package each.
This module is the public API for scripts and notebooks; names are imported lazily so
that `import hloscope` (and `hloscope --help`) stays fast and never pulls in TensorFlow
or JAX.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS = {
    "parse_module": "hloscope.hlo.parser",
    "parse_file": "hloscope.hlo.parser",
    "parse_modules": "hloscope.hlo.parser",
    "to_networkx": "hloscope.hlo.graph",
    "call_graph": "hloscope.hlo.graph",
    "computation_graph": "hloscope.hlo.graph",
    "HloModule": "hloscope.hlo.model",
    "Computation": "hloscope.hlo.model",
    "Instruction": "hloscope.hlo.model",
    "Shape": "hloscope.hlo.model",
    "module_stats": "hloscope.analysis.stats",
    "HloscopeError": "hloscope.errors",
    "HloParseError": "hloscope.errors",
    "UsageError": "hloscope.errors",
    "inspect": "hloscope.capture.inprocess",
    "load_run": "hloscope.runs",
    "is_trivial": "hloscope.runs",
    "Run": "hloscope.runs",
    "ModuleDump": "hloscope.runs",
}

__all__ = ["__version__", *_EXPORTS]

if TYPE_CHECKING:
    from hloscope.analysis.stats import module_stats
    from hloscope.capture.inprocess import inspect
    from hloscope.errors import HloParseError, HloscopeError, UsageError
    from hloscope.hlo.graph import call_graph, computation_graph, to_networkx
    from hloscope.hlo.model import Computation, HloModule, Instruction, Shape
    from hloscope.hlo.parser import parse_file, parse_module, parse_modules
    from hloscope.runs import ModuleDump, Run, is_trivial, load_run


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hloscope' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
