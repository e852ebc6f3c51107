"""Which TensorFlow ops ran in XLA, checked against TensorFlow's and XLA's own records:
the auto-clustered run in tests/data/tf_auto_clustering (see its HOW.md). The graph dump
is read here with TensorFlow's `GraphDef` and protobuf's text format, the cluster's ops
from the HLO's op metadata, and the times from the raw XSpace events, none through
hloscope's readers."""

from __future__ import annotations

import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from hloscope.analysis.tf_graphs import parse_pbtxt, read_graph_dumps
from hloscope.hlo.parser import parse_file
from hloscope.inspection import inspect_run
from hloscope.render.json import report_doc
from hloscope.timing.xla_coverage import xla_coverage
from hloscope.timing.xplane import find_profile, read_xspace
from tests.conftest import DATA

RUN = DATA / "tf_auto_clustering"
_PLUMBING = {"_Arg", "_Retval", "_DeviceArg", "_DeviceRetval", "NoOp", "Const"}
_LAUNCH = {"_XlaCompile", "_XlaRun", "_XlaMerge"}


@pytest.fixture
def run(tmp_path: Path) -> Path:
    shutil.copytree(RUN, tmp_path / "run")
    return tmp_path / "run"


def _tf_oracle() -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """(ops in clusters, ops outside) of the dumped graph, read with TensorFlow's own
    GraphDef: cluster bodies are the library functions the `_XlaCompile` nodes name;
    outside are the other nodes, less plumbing and the launch ops' scope."""
    graph_pb2 = pytest.importorskip("tensorflow.core.framework.graph_pb2")
    from google.protobuf import text_format

    (path,) = (RUN / "tf_graphs").iterdir()
    graph = text_format.Parse(path.read_text(), graph_pb2.GraphDef())
    launches = {
        n.name.split("/")[0]: n.attr["function"].func.name
        for n in graph.node
        if n.op == "_XlaCompile"
    }
    bodies = {f.signature.name: f for f in graph.library.function}
    inside = {
        (n.name, n.op)
        for name in launches.values()
        for n in bodies[name].node_def
        if n.op not in _PLUMBING
    }
    outside = {
        (n.name, n.op)
        for n in graph.node
        if n.op not in _PLUMBING | _LAUNCH and n.name.split("/")[0] not in launches
    }
    return inside, outside


def _event_times(skip_first: int = 1) -> dict[str, tuple[int, int]]:
    """Per TensorFlow node (`name:Type` events) and for XLA's executions
    (`CpuExecutable::ExecuteAsyncOnStream`): (calls after the first, their summed ps),
    from the raw XSpace."""
    space = read_xspace(find_profile(RUN))
    calls: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for plane in space.planes:
        for line in plane.lines:
            for ev in line.events:
                meta = plane.event_metadata.get(ev.metadata_id)
                name = meta.name if meta else ""
                start = line.timestamp_ns * 1000 + ev.offset_ps
                if name == "CpuExecutable::ExecuteAsyncOnStream":
                    calls[name].append((start, ev.duration_ps))
                elif ":" in name and not name.startswith("end:"):
                    calls[name.split(":")[0]].append((start, ev.duration_ps))
    return {
        op: (len(c[skip_first:]), sum(d for _, d in sorted(c)[skip_first:]))
        for op, c in calls.items()
    }


@pytest.mark.tf
def test_ops_in_and_out_of_xla_as_tensorflow_dumped_them(run: Path) -> None:
    inside, outside = _tf_oracle()
    (f,) = read_graph_dumps(run / "tf_graphs")
    assert f.label == "predict"
    (cluster,) = f.clusters
    assert {(o.name, o.type) for o in cluster.ops} == inside
    assert {(o.name, o.type) for o in f.outside} == outside
    assert cluster.layers == ("classifier_1/norm_1",)
    # XLA's record agrees: the cluster's HLO names exactly the ops TensorFlow put in it
    before = parse_file(next((run / "dump").glob("*before_optimizations.txt")))
    named = {
        i.metadata.op_name for _, i in before.instructions() if i.metadata and i.metadata.op_type
    }
    assert named == {name for name, _ in inside} - {
        name for name, op in inside if op == "ReadVariableOp"
    }  # variable reads become parameters


@pytest.mark.tf
def test_coverage_counts_and_times_outside(run: Path) -> None:
    inside, outside = _tf_oracle()
    times = _event_times()
    inspection = inspect_run(run)
    c = inspection.xla_coverage
    assert c is not None and c.source == "graph dumps"
    assert (c.ops_in_xla, c.ops_outside) == (len(inside), len(outside)) == (15, 10)
    for o in c.outside:
        n, ps = times[o.op]
        assert (o.calls, o.time_us) == (n, pytest.approx(ps / 1e6, rel=1e-12)), o.op
    # in XLA: the cluster module's executions (its steady ones, as the ops')
    xla = times["CpuExecutable::ExecuteAsyncOnStream"][1]
    out = sum(times[name][1] for name, _ in outside)
    assert c.time_outside_share == pytest.approx(out / (out + xla), rel=1e-12)
    doc = report_doc(inspection)["xla_coverage"]
    assert doc["ops_in_xla"] == 15 and doc["ops_outside"] == 10
    assert {o["op"] for o in doc["outside"]} == {name for name, _ in outside}
    (fn,) = doc["functions"]
    assert fn["clusters"][0]["module"] == inspection.modules[0].key
    assert 0 < doc["time_outside_share"] < 1


@pytest.mark.tf
def test_without_graph_dumps_the_profile_says_what_ran_outside(run: Path) -> None:
    shutil.rmtree(run / "tf_graphs")
    _, outside = _tf_oracle()
    c = inspect_run(run).xla_coverage
    assert c is not None and c.source == "profile"
    # the profile names the kernels that ran: the fused matmuls as oneDNN's
    assert {o.op for o in c.outside} == {name for name, _ in outside}
    assert {o.type for o in c.outside if "dense" in o.op and "Read" not in o.op} == {
        "_MklNativeFusedMatMul"
    }
    # in XLA: the ops the cluster's HLO names (its variable reads became parameters)
    before = parse_file(next((run / "dump").glob("*before_optimizations.txt")))
    named = {
        i.metadata.op_name for _, i in before.instructions() if i.metadata and i.metadata.op_type
    }
    assert c.ops_in_xla == len(named) == 13


def test_a_jax_run_has_no_coverage() -> None:
    inspection = inspect_run(DATA / "jax_four_devices_profile")
    assert inspection.xla_coverage is None
    assert report_doc(inspection)["xla_coverage"] is None


def test_the_bridge_placeholder_file_is_no_source_location(run: Path) -> None:
    inspection = inspect_run(run, timings=False)
    (m,) = inspection.modules
    assert m.provenance is not None
    assert all(p.op.location is None for p in m.provenance.placements)
    assert not m.provenance.kernels_by_line
    # the HLO names `dummy_file_name` line 10 for every op; no view shows it as a place
    assert "dummy_file_name" in (run / "dump").glob("*before*").__next__().read_text()
    assert "dummy_file_name" not in str(report_doc(inspection)["modules"])


def test_pbtxt_reader_reads_nested_messages_and_escapes() -> None:
    doc: dict[str, Any] = parse_pbtxt(
        'node { name: "a/b" op: "Mul" attr { key: "T" value { type: DT_FLOAT } } }\n'
        'node { name: "q\\"x" op: "Const" }\nversions { producer: 2000 }'
    )
    assert [n["name"] for n in doc["node"]] == [["a/b"], ['q"x']]
    assert doc["node"][0]["attr"][0]["value"][0]["type"] == ["DT_FLOAT"]
    assert doc["versions"][0]["producer"] == ["2000"]
    assert xla_coverage.__name__ == "xla_coverage"
