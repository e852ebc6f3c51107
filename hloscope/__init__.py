"""hloscope: see what the XLA compiler fused.

The package is laid out along its pipeline, and imports flow one way along it (each
layer imports only the layers before it; `tests/test_layers.py` enforces the order):

    errors, frameworks, files, store, user_cache, status -> hlo -> manifest, runs, unpack, passes,
    pass_log -> capture -> analysis -> timing -> inspection -> render -> notebook, cli, __main__

`capture` runs a script under XLA's dump flags and writes a run folder; `runs` loads it
(`hlo` parses its modules); `analysis` counts kernels and places source ops; `timing`
reads profiles; `inspection` gathers all of it once; `render` draws it as text, JSON,
Graphviz and HTML; `notebook` and `cli` are the two faces over it.

This module is the typed public API for scripts and notebooks. Every type a public
function returns or raises is exported here too. Names are imported lazily, so that
`import hloscope` (and `hloscope --help`) stays fast and never pulls in TensorFlow or
JAX.

Example:
    >>> import hloscope
    >>> run = hloscope.load_run("tests/data/jax_mlp")       # a Run: the folder's modules
    >>> inspection = hloscope.inspect_run(run)              # analysed and timed, once
    >>> view = hloscope.open_run("tests/data/jax_mlp")      # the same, for a notebook
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# defining module -> the public names it gives, in pipeline order
_MODULES: dict[str, tuple[str, ...]] = {
    "hloscope.errors": (
        "HloscopeError",
        "UsageError",
        "HloParseError",
        "ProfileReadError",
        "MissingDependencyError",
        "DocumentError",
    ),
    "hloscope.frameworks": ("Framework",),
    "hloscope.hlo.parser": ("parse_module", "parse_file", "parse_modules"),
    "hloscope.hlo.model": (
        "HloModule",
        "Computation",
        "Instruction",
        "Shape",
        "Layout",
        "ParseStats",
        "SourceLocation",
        "StackFrame",
    ),
    "hloscope.hlo.graph": ("to_networkx", "call_graph", "computation_graph"),
    "hloscope.hlo.fusion_log": ("FusionDecisions",),
    "hloscope.manifest": (
        "RunManifest",
        "RunStatus",
        "Target",
        "ModuleEntry",
        "Compile",
        "ProfileSettings",
    ),
    "hloscope.runs": ("load_run", "Run", "ModuleDump", "is_trivial"),
    "hloscope.passes": ("PassDump",),
    "hloscope.analysis.stats": ("module_stats", "ModuleStats", "ComputationStats"),
    "hloscope.analysis.fusion": ("ModuleAnalysis", "Kernel", "Loop", "Branch"),
    "hloscope.analysis.provenance": (
        "kernel_of_before_ops",
        "Provenance",
        "Placement",
        "SourceOp",
    ),
    "hloscope.analysis.evidence": ("Inferred",),
    "hloscope.analysis.report": ("ModuleReport", "RunReport"),
    "hloscope.analysis.cost": ("ModuleCost", "KernelCost", "Cost"),
    "hloscope.analysis.memory": ("MemoryReport", "Allocation", "BufferValue"),
    "hloscope.analysis.compilations": (
        "Compilations",
        "Compilation",
        "Variant",
        "Varying",
        "FusesDifferently",
    ),
    "hloscope.analysis.tf_graphs": ("TfFunction", "TfCluster", "TfOp"),
    "hloscope.analysis.torch_graphs": ("TorchXlaRun", "TorchGraphs", "TorchGraph", "ModuleCompile"),
    "hloscope.analysis.torch_xla": ("TorchXlaRecords", "GraphEvent", "TimedMetric"),
    "hloscope.analysis.passes": (
        "pass_story",
        "PassStory",
        "PassStep",
        "PassTime",
        "Counts",
        "KernelHistory",
        "KernelEvent",
        "OpHistory",
    ),
    "hloscope.analysis.diff": (
        "diff_runs",
        "diff_modules",
        "select_diffs",
        "regressions",
        "RunDiff",
        "ModuleDiff",
        "KernelChange",
        "OpChange",
        "KernelRef",
        "Metric",
    ),
    "hloscope.analysis.match": ("match_modules", "kernel_times_for"),
    "hloscope.analysis.budget": ("check_run", "Budget", "Violation"),
    "hloscope.timing.sources": ("run_timings", "load_profile"),
    "hloscope.timing.xplane": ("read_trace",),
    "hloscope.timing.trace": ("Trace", "TraceEvent"),
    "hloscope.timing.attribution": ("attribute",),
    "hloscope.timing.results": ("ProfileTimings", "ModuleTiming", "KernelTiming", "DeviceTiming"),
    "hloscope.timing.xla_coverage": ("XlaCoverage", "OutsideOp"),
    "hloscope.timing.roofline": ("Peaks", "KernelRoof"),
    "hloscope.timing.bench": ("bench", "BenchResult", "ModeResult"),
    "hloscope.inspection": ("inspect_run", "Inspection"),
    "hloscope.render.diagram": (
        "module_diagram",
        "kernel_graph",
        "op_graph",
        "side_by_side",
        "DiagramSpec",
        "Node",
        "Edge",
        "Cluster",
        "LegendEntry",
    ),
    "hloscope.render.dot": ("to_dot",),
    "hloscope.render.html": ("report_html", "write_html"),
    "hloscope.notebook": ("open_run", "inspect", "RunView", "ModuleView", "SVG", "to_dataframe"),
}

# public name -> the module that defines it
_EXPORTS: dict[str, str] = {name: module for module, names in _MODULES.items() for name in names}

__all__ = ["__version__", *_EXPORTS]

if TYPE_CHECKING:
    from hloscope.analysis.budget import Budget, Violation, check_run
    from hloscope.analysis.compilations import (
        Compilation,
        Compilations,
        FusesDifferently,
        Variant,
        Varying,
    )
    from hloscope.analysis.cost import Cost, KernelCost, ModuleCost
    from hloscope.analysis.diff import (
        KernelChange,
        KernelRef,
        Metric,
        ModuleDiff,
        OpChange,
        RunDiff,
        diff_modules,
        diff_runs,
        regressions,
        select_diffs,
    )
    from hloscope.analysis.evidence import Inferred
    from hloscope.analysis.fusion import Branch, Kernel, Loop, ModuleAnalysis
    from hloscope.analysis.match import kernel_times_for, match_modules
    from hloscope.analysis.memory import Allocation, BufferValue, MemoryReport
    from hloscope.analysis.passes import (
        Counts,
        KernelEvent,
        KernelHistory,
        OpHistory,
        PassStep,
        PassStory,
        PassTime,
        pass_story,
    )
    from hloscope.analysis.provenance import Placement, Provenance, SourceOp, kernel_of_before_ops
    from hloscope.analysis.report import ModuleReport, RunReport
    from hloscope.analysis.stats import ComputationStats, ModuleStats, module_stats
    from hloscope.analysis.tf_graphs import TfCluster, TfFunction, TfOp
    from hloscope.analysis.torch_graphs import ModuleCompile, TorchGraph, TorchGraphs, TorchXlaRun
    from hloscope.analysis.torch_xla import GraphEvent, TimedMetric, TorchXlaRecords
    from hloscope.errors import (
        DocumentError,
        HloParseError,
        HloscopeError,
        MissingDependencyError,
        ProfileReadError,
        UsageError,
    )
    from hloscope.frameworks import Framework
    from hloscope.hlo.fusion_log import FusionDecisions
    from hloscope.hlo.graph import call_graph, computation_graph, to_networkx
    from hloscope.hlo.model import (
        Computation,
        HloModule,
        Instruction,
        Layout,
        ParseStats,
        Shape,
        SourceLocation,
        StackFrame,
    )
    from hloscope.hlo.parser import parse_file, parse_module, parse_modules
    from hloscope.inspection import Inspection, inspect_run
    from hloscope.manifest import (
        Compile,
        ModuleEntry,
        ProfileSettings,
        RunManifest,
        RunStatus,
        Target,
    )
    from hloscope.notebook import SVG, ModuleView, RunView, inspect, open_run, to_dataframe
    from hloscope.passes import PassDump
    from hloscope.render.diagram import (
        Cluster,
        DiagramSpec,
        Edge,
        LegendEntry,
        Node,
        kernel_graph,
        module_diagram,
        op_graph,
        side_by_side,
    )
    from hloscope.render.dot import to_dot
    from hloscope.render.html import report_html, write_html
    from hloscope.runs import ModuleDump, Run, is_trivial, load_run
    from hloscope.timing.attribution import attribute
    from hloscope.timing.bench import BenchResult, ModeResult, bench
    from hloscope.timing.results import DeviceTiming, KernelTiming, ModuleTiming, ProfileTimings
    from hloscope.timing.roofline import KernelRoof, Peaks
    from hloscope.timing.sources import load_profile, run_timings
    from hloscope.timing.trace import Trace, TraceEvent
    from hloscope.timing.xla_coverage import OutsideOp, XlaCoverage
    from hloscope.timing.xplane import read_trace


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hloscope' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
