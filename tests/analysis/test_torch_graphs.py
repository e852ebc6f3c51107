"""torch_xla's graphs: modules grouped by structure and joined to torch_xla's own log,
checked against XLA's own printer and torch_xla's own counters, on captured runs."""

from __future__ import annotations

import itertools
import re
import shutil
from pathlib import Path

import pytest

from hloscope.analysis.torch_graphs import (
    function_key,
    function_name,
    graph_key,
    group_graphs,
    is_torch_graph,
    torch_xla_run,
)
from hloscope.analysis.torch_xla import parse_debug, read_records
from hloscope.hlo.model import SourceLocation
from hloscope.hlo.parser import parse_module
from hloscope.runs import load_run
from tests.conftest import DATA

TORCH_RUNS = ("torch_mlp", "torch_transformer")


def _befores() -> list[Path]:
    return sorted(p for r in TORCH_RUNS for p in (DATA / r / "dump").glob("*before*.txt"))


def _renamed(text: str, shift: int = 1000) -> str:
    """Every `name.N` renumbered (instructions, computations, the module), consistently."""
    return re.sub(r"\b([A-Za-z_][\w\-]*)\.(\d+)\b", lambda m: f"{m[1]}.{int(m[2]) + shift}", text)


def _xla_structure(text: str) -> str:
    """XLA's own fingerprint print of a module (canonical names, called computations
    inline, no metadata), constants' values masked and the header left out."""
    hlo = pytest.importorskip("jaxlib._hlo")
    options = hlo.HloPrintOptions.fingerprint()
    options.canonicalize_computations = True
    options.print_metadata = False
    printed = hlo.hlo_module_from_text(text).to_string(options)
    body = printed.split("\n", 1)[1]
    return re.sub(r"constant\((?:[^()]|\([^)]*\))*\)", "constant(_)", body)


@pytest.mark.jax
def test_graph_key_is_xlas_structure_up_to_constants() -> None:
    """Two modules share a graph key exactly when XLA prints them the same, names and
    constants aside: over the captured torch_xla modules, renamed copies of them, and
    copies with a constant changed."""
    texts = {p.name: p.read_text() for p in _befores()}
    first = next(iter(texts.values()))
    texts["renamed"] = _renamed(first)
    literal = re.search(r"constant\((\d+)\)", first)
    assert literal is not None
    texts["other constant"] = first.replace(literal[0], f"constant({int(literal[1]) + 7})", 1)
    keys = {n: graph_key(parse_module(t)) for n, t in texts.items()}
    oracle = {n: _xla_structure(t) for n, t in texts.items()}
    assert keys["renamed"] == keys[_befores()[0].name] == keys["other constant"]
    for a, b in itertools.combinations(texts, 2):
        assert (keys[a] == keys[b]) == (oracle[a] == oracle[b]), (a, b)
    assert len(set(keys.values())) == len(texts) - 2


def test_function_key_leaves_out_the_sizes() -> None:
    text = sorted((DATA / "torch_mlp" / "dump").glob("module_0000*before*.txt"))[0].read_text()
    bigger = re.sub(r"\b32\b", "40", text)  # the batch size, everywhere it appears
    a, b = parse_module(text), parse_module(bigger)
    assert graph_key(a) != graph_key(b)
    assert function_key(a) == function_key(b)
    assert function_name(a) == function_name(b) == f"SyncTensorsGraph~{function_key(a)[:8]}"
    where = SourceLocation("samples/torch_mlp.py", 76, "train")
    assert function_name(a, where) == "SyncTensorsGraph@torch_mlp.py:76"


def _sizes(run: Path) -> list[int]:
    """The batch sizes the script says it ran, one per step (its own output)."""
    m = re.search(r"batch sizes \[([\d, ]+)\]", (run / "stdout.log").read_text())
    assert m is not None
    return [int(s) for s in m[1].split(",")]


def test_steps_per_graph_are_the_scripts_steps(tmp_path: Path) -> None:
    """torch_mlp ran SGD steps at batch sizes 32, 32, 48, 32: one graph per size, as
    many steps each as the script ran at that size, and in all as many executions and
    compiles as torch_xla's own counters say."""
    run = load_run(shutil.copytree(DATA / "torch_mlp", tmp_path / "run"))
    view = torch_xla_run(run)
    assert view is not None and view.records is not None
    graphs = view.graphs
    sizes = _sizes(run.path)
    distinct = list(dict.fromkeys(sizes))
    assert graphs.distinct == len(distinct) == 2
    assert [g.executions for g in graphs.graphs] == [sizes.count(s) for s in distinct]
    assert [g.inputs[7][0] for g in graphs.graphs] == distinct  # f32[B,64], the inputs
    counters = view.records.counters
    assert graphs.executions == counters["ExecuteComputation"] == len(sizes)
    assert graphs.compiles == counters["UncachedCompile"]
    assert view.records.metric("CompileTime").count == graphs.compiles  # type: ignore[union-attr]
    assert graphs.note == ""
    # One function (the step, compiled at the sync in train()); each module's compile
    # time is torch_xla's CompileTime sample for it (the compilations view groups them:
    # tests/analysis/test_torch_compilations.py).
    assert {g.function for g in graphs.graphs} == {"SyncTensorsGraph@torch_mlp.py:76"}
    samples = view.records.metric("CompileTime").samples_s  # type: ignore[union-attr]
    assert [m.compile_s for m in graphs.modules.values()] == list(samples)
    assert list(graphs.modules) == [k for g in graphs.graphs for k in g.modules]
    assert graphs.timed


def test_without_the_log_steps_are_unknown_and_the_structure_groups(tmp_path: Path) -> None:
    run_dir = shutil.copytree(DATA / "torch_mlp", tmp_path / "run")
    shutil.rmtree(run_dir / "torch_xla")
    run = load_run(run_dir)
    view = torch_xla_run(run)
    assert view is not None and view.records is None
    assert [g.executions for g in view.graphs.graphs] == [None, None]
    assert view.graphs.executions is None and "not in the run" in view.graphs.note
    # Without the trigger, the two graphs differ in structure (two more transposes at
    # 48): two functions of one compile each, and no compile times (torch_xla's metrics
    # are gone with its log).
    assert len({g.function for g in view.graphs.graphs}) == 2
    assert not view.graphs.timed


def test_a_log_that_does_not_pair_with_the_dump_is_said(tmp_path: Path) -> None:
    run = load_run(DATA / "torch_mlp")
    records = read_records(DATA / "torch_mlp")
    assert records is not None
    (first,) = [m for m in run.modules if m.key.startswith("0000")]
    module = first.load_before()
    assert module is not None
    graphs = group_graphs([(first.key, module)], records)
    assert graphs.graphs[0].executions is None and "2 compiles" in graphs.note


def test_torch_graph_names() -> None:
    assert is_torch_graph("SyncTensorsGraph.212") and is_torch_graph("SyncTensorsGraph")
    assert not is_torch_graph("SyncTensorsGraphs.1") and not is_torch_graph("jit_f")


def test_parse_debug_reads_records_and_skips_the_rest() -> None:
    text = "\n".join(
        [
            "Compilation Analysis: ==========",
            "Compilation Analysis: Compilation Cause",
            "Compilation Analysis:   user torch_xla.sync",
            "Compilation Analysis: Graph Info: ",
            "Compilation Analysis:   Graph Hash: abc",
            "Compilation Analysis:   Number of Graph Inputs: 3",
            "Compilation Analysis:   Number of Graph Outputs: x",
            "Compilation Analysis: Python Frame Triggered Execution: ",
            "Compilation Analysis:   sync (/venv/lib/python3.11/site-packages/torch_xla/torch_xla.py:87)",
            "Compilation Analysis:   step (train.py:12)",
            "Compilation Analysis: --------",
            "Post Compilation Analysis: Graph input size: 0.1 GB",
            "garbage line",
            "Execution Analysis: Execution Cause",
            "Execution Analysis:   most likely user code trying to access tensor value",
            "Execution Analysis:   Graph Hash: abc",
            "Execution Analysis: Execution Cause",
            "Execution Analysis:   no hash: skipped",
        ]
    )
    compiles, executions = parse_debug(text)
    (c,) = compiles
    assert (c.graph_hash, c.cause, c.inputs, c.outputs) == ("abc", "user torch_xla.sync", 3, None)
    assert c.frame == SourceLocation("train.py", 12, "step")
    (e,) = executions
    assert e.graph_hash == "abc" and e.cause.startswith("most likely") and e.frame is None


def test_records_are_read_as_untrusted_files(tmp_path: Path) -> None:
    assert read_records(tmp_path) is None
    folder = tmp_path / "torch_xla"
    folder.mkdir()
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("Execution Analysis: Execution Cause\n")
    (folder / "debug.txt").symlink_to(outside)
    (folder / "metrics.json").write_text("{not json")
    records = read_records(tmp_path)
    assert records is not None and not records.logged
    assert len(records.errors) == 2
    assert "links out of the run folder" in records.errors[0]
    assert "not JSON" in records.errors[1]
    (folder / "metrics.json").write_text(
        '{"metrics": {"CompileTime": {"count": "2", "total_ns": 1e9}, "ExecuteTime": '
        '{"count": 3, "total_ns": 3e9, "samples_ns": [1e9, "x"]}}, "counters": [1], '
        '"fallbacks": {"aten::nonzero": 2, "aten::bad": true}}'
    )
    records = read_records(tmp_path)
    assert records is not None
    assert list(records.metrics) == ["ExecuteTime"]
    assert records.metrics["ExecuteTime"].samples_s == (1.0,)
    assert records.counters == {} and records.fallbacks == {"aten::nonzero": 2}


def test_a_log_of_compiles_only_gives_no_executions(tmp_path: Path) -> None:
    """With the user's PT_XLA_DEBUG_LEVEL=1 torch_xla logs compiles, not executions:
    the graphs are paired (their trigger is known) but nothing says they ran 0 times."""
    run_dir = Path(shutil.copytree(DATA / "torch_mlp", tmp_path / "run"))
    debug = run_dir / "torch_xla" / "debug.txt"
    kept = [line for line in debug.read_text().splitlines() if "Execution Analysis" not in line]
    debug.write_text("\n".join(kept))
    view = torch_xla_run(load_run(run_dir))
    assert view is not None
    assert [g.executions for g in view.graphs.graphs] == [None, None]
    assert view.graphs.executions is None and "PT_XLA_DEBUG_LEVEL" in view.graphs.note
    assert view.graphs.graphs[0].function == "SyncTensorsGraph@torch_mlp.py:76"
