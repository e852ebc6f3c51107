"""TensorFlow's own record of what it auto-clustered: the function graphs it dumps, read.

With XLA auto-clustering (`TF_XLA_FLAGS=--tf_xla_auto_jit=2`), TensorFlow compiles only
the parts of each function graph that XLA takes: its MarkForCompilation pass picks the
clusters, EncapsulateSubgraphs moves each into a function of its own (`cluster_0`), and
BuildXlaOps replaces it with `_XlaCompile`/`_XlaRun` launch ops. With
`TF_DUMP_GRAPH_PREFIX`, `TF_DUMP_GRAPH_NAME_FILTER=*` and `TF_DUMP_GRAPH_GROUPS=main`
(which `hloscope dump` sets when auto-clustering is on), TensorFlow's debug data dumper
writes each function's graph after those passes as
`<function>.<NNNN>.main.after_post_rewrite_for_exec_passes.pbtxt`: the ops left outside
XLA are its nodes, the clustered ones are the nodes of the `cluster_N` functions in its
library. `read_graph_dumps` reads them (a GraphDef in protobuf text format, read here
without TensorFlow).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hloscope.capture.tf_graphs import GRAPH_STAGE
from hloscope.errors import HloscopeError
from hloscope.files import read_regular

__all__ = [
    "NOT_OPS",
    "XLA_LAUNCH_OPS",
    "TfCluster",
    "TfFunction",
    "TfOp",
    "function_label",
    "layers_of",
    "parse_pbtxt",
    "read_graph_dumps",
]

# The ops TensorFlow runs to launch a cluster on XLA (BuildXlaOps, XlaLaunch for a
# function with jit_compile=True called from a graph).
XLA_LAUNCH_OPS = frozenset({"_XlaCompile", "_XlaRun", "_XlaMerge", "XlaLaunch", "_XlaLaunch"})
# Graph plumbing that computes nothing, on both sides of the count.
NOT_OPS = frozenset({"_Arg", "_Retval", "_DeviceArg", "_DeviceRetval", "NoOp", "Const"})
_MAX_GRAPH_BYTES = 256 << 20
_DUMP_NAME = re.compile(r"(?P<function>.+)\.(?P<order>\d{4})\.main\." + GRAPH_STAGE + r"\.pbtxt")


@dataclass(frozen=True, slots=True)
class TfOp:
    """One TensorFlow op (graph node).

    Attributes:
        name: The node name (`classifier_1/norm_1/moments/mean`).
        type: Its op type (`Mean`, `_FusedMatMul`).

    Example:
        >>> coverage = hloscope.inspect_run('tests/data/tf_auto_clustering').xla_coverage
        >>> op = coverage.functions[0].clusters[0].ops[0]
        >>> isinstance(op, hloscope.TfOp), bool(op.name and op.type)
        (True, True)
    """

    name: str
    type: str


@dataclass(frozen=True)
class TfCluster:
    """One XLA cluster of a function graph.

    Attributes:
        name: The cluster's function (`cluster_0`); its HloModule is named after it
            (`cluster_0__XlaCompiledKernel_true__...`).
        ops: The TensorFlow ops it holds (plumbing and constants left out).

    Example:
        >>> coverage = hloscope.inspect_run('tests/data/tf_auto_clustering').xla_coverage
        >>> cluster = coverage.functions[0].clusters[0]
        >>> cluster.name, len(cluster.ops)
        ('cluster_0', 15)
    """

    name: str
    ops: tuple[TfOp, ...]

    @property
    def layers(self) -> tuple[str, ...]:
        """The name scopes (Keras layers) its ops come from."""
        return layers_of(self.ops)


@dataclass(frozen=True)
class TfFunction:
    """One TensorFlow function graph, after auto-clustering.

    Attributes:
        name: The function (`__inference_predict_131`).
        path: The graph dump it was read from.
        clusters: Its XLA clusters.
        outside: Its ops that run as TensorFlow ops, outside every cluster (plumbing,
            constants and the cluster launch ops left out).

    Example:
        >>> coverage = hloscope.inspect_run('tests/data/tf_auto_clustering').xla_coverage
        >>> f = coverage.functions[0]
        >>> isinstance(f, hloscope.TfFunction), len(f.clusters)
        (True, 1)
    """

    name: str
    path: str
    clusters: tuple[TfCluster, ...]
    outside: tuple[TfOp, ...]

    @property
    def label(self) -> str:
        """The Python function's name (`predict`)."""
        return function_label(self.name)

    @property
    def ops_in_xla(self) -> int:
        """Ops of its clusters."""
        return sum(len(c.ops) for c in self.clusters)


def function_label(name: str) -> str:
    """`__inference_predict_131` -> `predict` (the Python function tf.function traced)."""
    m = re.fullmatch(r"__(?:inference|forward|backward)_(.+?)_\d+", name)
    return m.group(1) if m else name


def layers_of(ops: tuple[TfOp, ...] | list[TfOp]) -> tuple[str, ...]:
    """The name scopes ops come from, two levels deep (`classifier_1/norm_1`: a Keras
    model and its layer), most ops first."""
    counts: dict[str, int] = {}
    for op in ops:
        parts = op.name.split("/")[:-1]
        if parts:
            scope = "/".join(parts[:2])
            counts[scope] = counts.get(scope, 0) + 1
    return tuple(sorted(counts, key=lambda s: (-counts[s], s)))


# --------------------------------------------------------------------------------------
# Protobuf text format, as TensorFlow writes a GraphDef: enough to read nodes, their
# attributes and the function library.

_TOKEN = re.compile(
    r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<word>[^\s{}:"<>\[\],]+)|(?P<sym>[{}:<>\[\],]))'
)


def _tokens(text: str) -> Iterator[str]:
    pos = 0
    while True:
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip():
                raise HloscopeError(f"not protobuf text at offset {pos}: {text[pos : pos + 40]!r}")
            return
        pos = m.end()
        yield m.group(0).strip()


def parse_pbtxt(text: str) -> dict[str, list[Any]]:
    """A protobuf text-format message as nested dicts: every field a list of its values
    (strings unquoted, scalars as their text, messages as dicts).

    Raises:
        HloscopeError: The text is not protobuf text format.
    """
    stack: list[dict[str, list[Any]]] = [{}]
    field: str | None = None
    expect_value = False
    for tok in _tokens(text):
        if tok in ("{", "<"):
            if field is None:
                raise HloscopeError("protobuf text: a message without a field name")
            child: dict[str, list[Any]] = {}
            stack[-1].setdefault(field, []).append(child)
            stack.append(child)
            field, expect_value = None, False
        elif tok in ("}", ">"):
            if len(stack) == 1:
                raise HloscopeError("protobuf text: unbalanced braces")
            stack.pop()
        elif tok == ":":
            expect_value = True
        elif tok in ("[", "]", ","):
            continue
        elif expect_value:
            assert field is not None
            value = _unquote(tok) if tok.startswith('"') else tok
            stack[-1].setdefault(field, []).append(value)
            expect_value = False
        else:
            field = tok
    if len(stack) != 1:
        raise HloscopeError("protobuf text: unbalanced braces")
    return stack[0]


def _unquote(tok: str) -> str:
    body = tok[1:-1]
    if "\\" not in body:
        return body
    return body.encode("latin-1", "backslashreplace").decode("unicode_escape")


def _one(msg: dict[str, list[Any]], key: str, default: Any = "") -> Any:
    values = msg.get(key)
    return values[0] if values else default


def _attr(node: dict[str, list[Any]], key: str) -> dict[str, list[Any]] | None:
    for a in node.get("attr", ()):
        if _one(a, "key") == key:
            value = _one(a, "value", None)
            return value if isinstance(value, dict) else None
    return None


# --------------------------------------------------------------------------------------


def _function_from(graph: dict[str, list[Any]], name: str, path: str) -> TfFunction:
    nodes = [n for n in graph.get("node", ()) if isinstance(n, dict)]
    library = _one(graph, "library", {}) or {}
    bodies = {}
    for f in library.get("function", ()):
        sig = _one(f, "signature", {}) or {}
        bodies[_one(sig, "name")] = [n for n in f.get("node_def", ()) if isinstance(n, dict)]
    # Each launch names the cluster function it compiles; BuildXlaOps puts its own
    # helper nodes (the compilation key's Switch, the fallback call) under its scope.
    launched: dict[str, str] = {}
    for n in nodes:
        if _one(n, "op") in XLA_LAUNCH_OPS:
            func = _attr(n, "function")
            target = _one(_one(func, "func", {}) or {}, "name") if func else ""
            scope = str(_one(n, "name")).split("/", 1)[0]
            if target:
                launched[scope] = target
    clusters: list[TfCluster] = []
    for target in launched.values():
        ops = tuple(
            TfOp(str(_one(n, "name")), str(_one(n, "op")))
            for n in bodies.get(target, ())
            if _one(n, "op") not in NOT_OPS
        )
        if all(c.name != target for c in clusters):
            clusters.append(TfCluster(target, ops))
    outside = tuple(
        TfOp(str(_one(n, "name")), str(_one(n, "op")))
        for n in nodes
        if _one(n, "op") not in NOT_OPS | XLA_LAUNCH_OPS
        and str(_one(n, "name")).split("/", 1)[0] not in launched
    )
    return TfFunction(name, path, tuple(sorted(clusters, key=lambda c: c.name)), outside)


def read_graph_dumps(folder: Path) -> tuple[TfFunction, ...]:
    """Every function graph dumped in a folder after auto-clustering, the last dump of
    each function (a function traced again is dumped again), by name.

    Files that cannot be read or parsed are left out.
    """
    if not folder.is_dir():
        return ()
    latest: dict[str, tuple[int, Path]] = {}
    for path in folder.iterdir():
        m = _DUMP_NAME.fullmatch(path.name)
        if m is None or not path.is_file():
            continue
        order = int(m.group("order"))
        name = m.group("function")
        if name not in latest or order > latest[name][0]:
            latest[name] = (order, path)
    out = []
    for name in sorted(latest):
        path = latest[name][1]
        try:
            text = read_regular(path, _MAX_GRAPH_BYTES).decode("utf-8", "replace")
            out.append(_function_from(parse_pbtxt(text), name, str(path)))
        except (OSError, HloscopeError):
            continue
    return tuple(out)
