"""Which TensorFlow ops ran inside XLA and which outside, and the time outside.

With auto-clustering (`TF_XLA_FLAGS=--tf_xla_auto_jit=2`), or a graph that calls a
`jit_compile=True` function among plain TensorFlow ops, only part of the model runs
through XLA; the HLO modules show that part alone. `xla_coverage` says how much it is,
from TensorFlow's own records: the function graphs it dumped after clustering
(`hloscope.analysis.tf_graphs`) name every op and the cluster it went to, and the
profile's TensorFlow op events (`name:Type` on its executor threads) time the ops that
ran outside XLA beside the `_XlaRun` launches that ran the clusters. Without graph
dumps, the profile alone gives the ops outside and the cluster modules' HLO the ops in.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from hloscope.analysis.report import ModuleReport, RunReport
from hloscope.analysis.tf_graphs import (
    NOT_OPS,
    XLA_LAUNCH_OPS,
    TfCluster,
    TfFunction,
    TfOp,
    read_graph_dumps,
)
from hloscope.capture.tf_graphs import GRAPHS_SUBDIR
from hloscope.errors import HloscopeError
from hloscope.frameworks import Framework
from hloscope.runs import Run
from hloscope.timing.results import ModuleTiming
from hloscope.timing.sources import profile_folder
from hloscope.timing.trace import Trace
from hloscope.timing.xplane import find_profiles, read_trace

__all__ = ["OutsideOp", "XlaCoverage", "tf_op_times", "xla_coverage"]

# A TensorFlow executor's event per op kernel run: `<node name>:<op type>`.
_OP_EVENT = re.compile(r"(?P<name>[^:\s][^:]*):(?P<type>[A-Za-z_][A-Za-z0-9_]*)")
# Ops that only call a function whose own ops are events of their own, and the
# transfers graph partitioning adds between devices.
_CALLS = re.compile(r"__.*|.*PartitionedCall|_Send|_Recv|_HostSend|_HostRecv")
# The nodes BuildXlaOps adds around a cluster launch (`cluster_0_1/xla_run`).
_LAUNCH_SCOPE = re.compile(r"cluster_\d+(?:_\d+)?/")
_XLA_RUNS = XLA_LAUNCH_OPS - {"_XlaCompile", "_XlaMerge"}  # launches that run a cluster
_PS_PER_US = 1e6


@dataclass(frozen=True, slots=True)
class OutsideOp:
    """A TensorFlow op that ran outside XLA.

    Attributes:
        op: Its node name.
        type: Its op type (the graph's, else the kernel the profile names).
        function: The function graph it is in (`__inference_predict_131`), when known.
        time_us: Its time in the profile, summed over its calls after the warm-up ones;
            None when the run was not profiled.
        calls: Those calls.

    Example:
        >>> coverage = hloscope.inspect_run('tests/data/tf_auto_clustering').xla_coverage
        >>> all(isinstance(op, hloscope.OutsideOp) for op in coverage.outside)
        True
    """

    op: str
    type: str
    function: str | None
    time_us: float | None
    calls: int = 0


@dataclass(frozen=True)
class XlaCoverage:
    """How much of a TensorFlow program ran in XLA.

    Attributes:
        source: `graph dumps` (TensorFlow's function graphs after clustering) or
            `profile` (its op events, and the cluster modules' HLO).
        functions: The function graphs read (none with `profile`).
        ops_in_xla: TensorFlow ops inside XLA clusters.
        ops_outside: TensorFlow ops outside them (graph plumbing, constants and the
            launch ops left out on both sides).
        outside: The ops outside, most time first.
        time_outside_us: Their summed time in the profile (None: not profiled).
        time_in_xla_us: The measured wall time of the XLA modules' steady executions
            (else of the `_XlaRun`/`XlaLaunch` launches); None when not profiled.

    Example:
        >>> coverage = hloscope.inspect_run('tests/data/tf_auto_clustering').xla_coverage
        >>> isinstance(coverage, hloscope.XlaCoverage), len(coverage.functions)
        (True, 1)
    """

    source: str
    functions: tuple[TfFunction, ...]
    ops_in_xla: int
    ops_outside: int
    outside: tuple[OutsideOp, ...]
    time_outside_us: float | None = None
    time_in_xla_us: float | None = None

    @property
    def time_outside_share(self) -> float | None:
        """The part of the measured op time spent outside XLA (None: not measured)."""
        if self.time_outside_us is None or self.time_in_xla_us is None:
            return None
        total = self.time_outside_us + self.time_in_xla_us
        return self.time_outside_us / total if total > 0 else None

    def cluster_of(self, module_name: str) -> tuple[TfFunction, TfCluster] | None:
        """The function and cluster an HLO module was compiled from
        (`cluster_0__XlaCompiledKernel_true__...` -> `cluster_0`), when the graphs say."""
        name = module_name.split("__", 1)[0]
        for f in self.functions:
            for c in f.clusters:
                if c.name == name:
                    return f, c
        return None


@dataclass
class _Times:
    """Steady calls of TensorFlow ops in a profile: per node name, its type, time, calls."""

    types: dict[str, str]
    ps: dict[str, int]
    calls: dict[str, int]


def tf_op_times(traces: Iterable[Trace], skip_first: int = 1) -> _Times:
    """The TensorFlow op events of profiles (`name:Type`), per node name: the first
    `skip_first` calls of each left out as warm-up where it ran more often."""
    by_op: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
    for trace in traces:
        for e in trace.events:
            m = _OP_EVENT.fullmatch(e.name)
            if m is None or "hlo_op" in e.stats:
                continue
            by_op[m.group("name")].append((e.start_ps, e.duration_ps, m.group("type")))
    times = _Times({}, {}, {})
    for name, calls in by_op.items():
        calls.sort()
        steady = calls[skip_first:] if len(calls) > skip_first else calls
        times.types[name] = calls[0][2]
        times.ps[name] = sum(d for _, d, _ in steady)
        times.calls[name] = len(steady)
    return times


def _xla_ps(times: _Times) -> int:
    return sum(times.ps[n] for n, t in times.types.items() if t in _XLA_RUNS)


def _profile_traces(run: Run) -> list[Trace]:
    folder = profile_folder(run)
    if folder is None:
        return []
    try:
        return [read_trace(f) for f in find_profiles(folder)]
    except HloscopeError:
        return []


def _is_tensorflow(run: Run, modules: Sequence[ModuleReport]) -> bool:
    return Framework.TENSORFLOW in run.manifest.frameworks or any(
        m.name.startswith(("cluster_", "a_inference_")) for m in modules
    )


def xla_coverage(
    run: Run,
    report: RunReport,
    timings: Mapping[str, ModuleTiming] | None = None,
    *,
    skip_first: int = 1,
    profiled: bool = True,
) -> XlaCoverage | None:
    """Which TensorFlow ops of a run ran inside XLA and which outside; None where that
    does not apply (not TensorFlow, or no op of it ran outside XLA as far as its
    records say).

    Args:
        run: The run (its `tf_graphs/` folder and its profile).
        report: The run's report (the XLA modules, when there are no graph dumps).
        timings: The modules' measured timings, by module key: their steady executions'
            wall time is the time in XLA (else the `_XlaRun`/`XlaLaunch` launch events).
        skip_first: Calls of each op left out as warm-up in the profile's times.
        profiled: Read the profile's times (False: counts only).
    """
    if not _is_tensorflow(run, report.modules):
        return None
    functions = read_graph_dumps(run.path / GRAPHS_SUBDIR) if run.path.is_dir() else ()
    traces = _profile_traces(run) if profiled else []
    times = tf_op_times(traces, skip_first) if traces else None
    xla_us = sum(t.total_us for t in (timings or {}).values())
    if times is not None and not xla_us:
        xla_us = _xla_ps(times) / _PS_PER_US
    ops: list[tuple[TfOp, str | None]]
    if functions:
        ops = [(o, f.name) for f in functions for o in f.outside]
        in_xla = sum(f.ops_in_xla for f in functions)
        source = "graph dumps"
    elif times is not None and xla_us > 0:
        ops = [
            (TfOp(n, t), None)
            for n, t in sorted(times.types.items())
            if t not in XLA_LAUNCH_OPS | NOT_OPS
            and not _CALLS.fullmatch(t)
            and not _LAUNCH_SCOPE.match(n)
        ]
        in_xla = sum(len(m.provenance.placements) for m in report.modules if m.provenance)
        source = "profile"
    else:
        return None
    if not ops:
        return None
    outside = tuple(
        OutsideOp(
            op.name,
            op.type,
            function,
            None if times is None else times.ps.get(op.name, 0) / _PS_PER_US,
            0 if times is None else times.calls.get(op.name, 0),
        )
        for op, function in ops
    )
    outside = tuple(sorted(outside, key=lambda o: (-(o.time_us or 0.0), o.op)))
    time_out = time_in = None
    if times is not None:
        time_out = sum(o.time_us or 0.0 for o in outside)
        time_in = xla_us
    return XlaCoverage(source, functions, in_xla, len(outside), outside, time_out, time_in)
