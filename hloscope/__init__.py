"""hloscope: see what the XLA compiler fused.

The pipeline is capture -> hlo -> runs -> analysis -> timing -> inspection -> render,
one module or sub-package each (README.md, "How the code is laid out"). This module is
the public API for scripts and notebooks; names are imported lazily so that
`import hloscope` (and `hloscope --help`) stays fast and never pulls in TensorFlow or
JAX.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> module that defines it, or (module, name there) for the notebook facade
_EXPORTS: dict[str, str | tuple[str, str]] = {
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
    "inspect": "hloscope.notebook",
    "load_run": ("hloscope.notebook", "open_run"),
    "RunView": "hloscope.notebook",
    "ModuleView": "hloscope.notebook",
    "inspect_run": "hloscope.inspection",
    "Inspection": "hloscope.inspection",
    "RunManifest": "hloscope.manifest",
    "is_trivial": "hloscope.runs",
    "Run": "hloscope.runs",
    "ModuleDump": "hloscope.runs",
    "bench": "hloscope.timing.bench",
    "BenchResult": "hloscope.timing.bench",
    "load_profile": "hloscope.timing.sources",
    "attribute": "hloscope.timing.attribution",
    "read_trace": "hloscope.timing.xplane",
    "ProfileTimings": "hloscope.timing.results",
    "ModuleTiming": "hloscope.timing.results",
    "KernelTiming": "hloscope.timing.results",
    "timings_doc": "hloscope.render.timing_json",
    "diff_runs": "hloscope.analysis.diff",
    "diff_modules": "hloscope.analysis.diff",
    "select_diffs": "hloscope.analysis.diff",
    "match_modules": "hloscope.analysis.match",
    "kernel_times_for": "hloscope.analysis.match",
    "check_run": "hloscope.analysis.budget",
    "regressions": "hloscope.analysis.diff",
    "Budget": "hloscope.analysis.budget",
    "RunDiff": "hloscope.analysis.diff",
    "ModuleDiff": "hloscope.analysis.diff",
    "KernelChange": "hloscope.analysis.diff",
    "OpChange": "hloscope.analysis.diff",
    "Violation": "hloscope.analysis.budget",
    "diff_doc": "hloscope.render.json",
    "kernel_graph": "hloscope.render.diagram",
    "op_graph": "hloscope.render.diagram",
    "side_by_side": "hloscope.render.diagram",
    "module_diagram": "hloscope.render.diagram",
    "kernel_of_before_ops": "hloscope.analysis.provenance",
    "to_dot": "hloscope.render.dot",
    "DiagramSpec": "hloscope.render.diagram",
    "report_html": "hloscope.render.html",
    "write_html": "hloscope.render.html",
}

__all__ = ["__version__", *_EXPORTS]

if TYPE_CHECKING:
    from hloscope.analysis.budget import Budget, Violation, check_run
    from hloscope.analysis.diff import (
        KernelChange,
        ModuleDiff,
        OpChange,
        RunDiff,
        diff_modules,
        diff_runs,
        regressions,
        select_diffs,
    )
    from hloscope.analysis.match import kernel_times_for, match_modules
    from hloscope.analysis.provenance import kernel_of_before_ops
    from hloscope.analysis.stats import module_stats
    from hloscope.errors import HloParseError, HloscopeError, UsageError
    from hloscope.hlo.graph import call_graph, computation_graph, to_networkx
    from hloscope.hlo.model import Computation, HloModule, Instruction, Shape
    from hloscope.hlo.parser import parse_file, parse_module, parse_modules
    from hloscope.inspection import Inspection, inspect_run
    from hloscope.manifest import RunManifest
    from hloscope.notebook import ModuleView, RunView, inspect
    from hloscope.notebook import open_run as load_run
    from hloscope.render.diagram import (
        DiagramSpec,
        kernel_graph,
        module_diagram,
        op_graph,
        side_by_side,
    )
    from hloscope.render.dot import to_dot
    from hloscope.render.html import report_html, write_html
    from hloscope.render.json import diff_doc
    from hloscope.render.timing_json import timings_doc
    from hloscope.runs import ModuleDump, Run, is_trivial
    from hloscope.timing.attribution import attribute
    from hloscope.timing.bench import BenchResult, bench
    from hloscope.timing.results import KernelTiming, ModuleTiming, ProfileTimings
    from hloscope.timing.sources import load_profile, run_timings
    from hloscope.timing.xplane import read_trace


def __getattr__(name: str) -> Any:
    where = _EXPORTS.get(name)
    if where is None:
        raise AttributeError(f"module 'hloscope' has no attribute {name!r}")
    module, attr = where if isinstance(where, tuple) else (where, name)
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
