"""PyTorch/XLA in the compilations view: torch_xla's modules grouped by the line whose
sync compiled them, checked against torch_xla's own counters and log, the raw profile's
compile events and what the scripts say they ran (never against hloscope's output)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from hloscope.analysis.compilations import (
    Compilations,
    find_module,
    find_modules,
    module_shapes,
    run_compilations,
    run_functions,
)
from hloscope.analysis.report import analyze_run
from hloscope.analysis.torch_graphs import function_name, is_torch_graph, torch_xla_run
from hloscope.analysis.torch_xla import parse_debug, read_records
from hloscope.errors import UsageError
from hloscope.hlo.model import SourceLocation
from hloscope.hlo.parser import parse_module
from hloscope.runs import load_run
from hloscope.timing.xplane import find_profile, read_xspace
from tests.conftest import DATA

ADAMW = DATA / "torch_mlp_adamw"
SEQLEN = DATA / "torch_seqlen"
STEP = "SyncTensorsGraph@torch_mlp.py:76"


def _compilations(path: Path) -> Compilations:
    run = load_run(path)
    return run_compilations(run, analyze_run(run).modules)


def _metrics(path: Path) -> dict[str, dict[str, object]]:
    doc = json.loads((path / "torch_xla" / "metrics.json").read_text())
    return {"counters": doc["counters"], "CompileTime": doc["metrics"]["CompileTime"]}


def _logged_inputs(path: Path) -> list[int]:
    """The number of graph inputs torch_xla logged for each compile, in order."""
    records = read_records(path)
    assert records is not None
    return [c.inputs for c in records.compiles if c.inputs is not None]


def _batch_sizes(path: Path) -> list[int]:
    m = re.search(r"batch sizes \[([\d, ]+)\]", (path / "stdout.log").read_text())
    assert m is not None
    return [int(s) for s in m[1].split(",")]


def test_adamw_steps_are_one_function_compiled_twice() -> None:
    """AdamW, 5 steps at one batch size: torch_xla compiled twice (UncachedCompile), the
    first step (fewer graph inputs: the optimizer's state is created there) and the one
    every later step ran; one function, the first compile set apart, no varying shape."""
    run = ADAMW / "steps"
    metrics = _metrics(run)
    (step,) = _compilations(run).functions
    assert step.function == STEP and step.framework == "torch_xla"
    assert step.count == metrics["counters"]["UncachedCompile"] == 2
    first, later = _logged_inputs(run)
    assert first < later
    assert [len(v.inputs) for v in step.variants] == [first, later]
    assert [v.index for v in step.set_apart] == [0]
    assert step.varying == () and step.fuses_differently == ()
    assert step.advice.startswith("nothing to fix: #0 is the first step")
    assert f"({first} inputs, then {later})" in step.advice


def test_adamw_at_changing_batch_sizes_varies_the_batch_dimension() -> None:
    """AdamW at batch sizes 32, 48, 32, 48, 64: the first step, then one compile per new
    size of the later steps; the varying dimension's values are those sizes, read from
    the HLO, and the compile times are torch_xla's CompileTime samples."""
    run = ADAMW / "sizes"
    metrics = _metrics(run)
    sizes = _batch_sizes(run)
    later = list(dict.fromkeys(sizes[1:]))
    (step,) = _compilations(run).functions
    assert step.count == metrics["counters"]["UncachedCompile"] == 1 + len(later)
    assert [v.index for v in step.set_apart] == [0]
    # labels s64[B] (arg 0) and inputs f32[B,64] (arg 7); None for the first step
    assert [(v.arg, v.dim, list(v.values)) for v in step.varying] == [
        (0, 0, [None, *later]),
        (7, 0, [None, *later]),
    ]
    samples = metrics["CompileTime"]["samples_ns"]
    assert isinstance(samples, list)
    assert [v.compile_s for v in step.variants] == pytest.approx([s / 1e9 for s in samples])
    assert step.advice.startswith("pad or bucket args 0, 7 dim 0 to a few sizes")
    assert "drop_last=True" in step.advice


def test_the_run_compile_time_is_torch_xlas() -> None:
    comps = _compilations(ADAMW / "sizes")
    total = _metrics(ADAMW / "sizes")["CompileTime"]["total_ns"]
    assert isinstance(total, float)
    assert comps.compile_s == pytest.approx(total / 1e9)
    assert comps.recompiled == comps.functions


def test_each_modules_compile_time_is_its_compile_in_the_profile() -> None:
    """The profile (torch_xla's profiler) holds each XLA compile: the
    `PjRtComputationClient::Compile` event (where torch_xla times `CompileTime`) around
    `CpuCompiler::RunBackend`, whose `name` stat is the module's. Each module's compile
    time is that event's duration."""
    run = DATA / "torch_mlp"
    space = read_xspace(find_profile(run / "profile"))
    (plane,) = [p for p in space.planes if p.name == "/host:CPU"]
    events = [
        (plane.event_metadata[e.metadata_id].name, e, plane.stats_dict(e.stats))
        for line in plane.lines
        for e in line.events
    ]
    compiles = [e for name, e, _ in events if name == "PjRtComputationClient::Compile"]
    seconds = {}
    for name, e, stats in events:
        if name == "CpuCompiler::RunBackend":
            (outer,) = [
                c
                for c in compiles
                if c.offset_ps <= e.offset_ps
                and e.offset_ps + e.duration_ps <= c.offset_ps + c.duration_ps
            ]
            seconds[stats["name"]] = outer.duration_ps / 1e12
    (step,) = _compilations(run).functions
    assert len(seconds) == step.count == 2
    names = {v.key: v.key.split(".", 1)[1] for v in step.variants}
    for v in step.variants:
        assert v.compile_s == pytest.approx(seconds[names[v.key]], rel=0.01)


def test_a_tensor_read_is_a_function_of_its_own() -> None:
    """seqlen.py reads the loss with .item() before each step's sync, at lengths 16, 24,
    16: two functions, one per line that compiled (the read's, the sync's), each
    compiled once per distinct length, as torch_xla counted (UncachedCompile)."""
    script = (SEQLEN / "seqlen.py").read_text().splitlines()
    read = next(n for n, line in enumerate(script, 1) if ".item()" in line and "print" in line)
    sync = next(n for n, line in enumerate(script, 1) if line.strip() == "torch_xla.sync()")
    run = SEQLEN / "run"
    m = re.search(r"sequence lengths \[([\d, ]+)\]", (run / "stdout.log").read_text())
    assert m is not None
    lengths = list(dict.fromkeys(int(s) for s in m[1].split(",")))
    comps = _compilations(run)
    assert [c.function for c in comps.functions] == [
        f"SyncTensorsGraph@seqlen.py:{read}",
        f"SyncTensorsGraph@seqlen.py:{sync}",
    ]
    assert sum(c.count for c in comps.functions) == _metrics(run)["counters"]["UncachedCompile"]
    for c in comps.functions:
        assert c.count == len(lengths)
        (v,) = c.varying
        assert (v.arg, v.dim, list(v.values)) == (5, 1, lengths)  # f32[8,L,32]
    reader, step = comps.functions
    assert all("access tensor value" in (v.reason or "") for v in reader.variants)
    assert reader.advice.startswith("Python read a tensor's value before torch_xla.sync()")
    assert reader.advice.endswith("pad or bucket arg 5 dim 1")
    assert all(v.reason == "user torch_xla.sync" for v in step.variants)
    assert step.advice.startswith("pad or bucket arg 5 dim 1")


def test_module_picks_a_torch_xla_variant() -> None:
    run = load_run(ADAMW / "sizes")
    assert [m.key for m in find_modules(run, f"{STEP}#2")] == ["0002.SyncTensorsGraph.364"]
    assert find_module(run, f"{STEP}(f32[64,64])").key == "0003.SyncTensorsGraph.364"
    assert len(find_modules(run, STEP)) == 4
    # three modules share the name SyncTensorsGraph.364: one function, so all three
    assert len(find_modules(run, "SyncTensorsGraph.364")) == 3
    with pytest.raises(UsageError, match=r"compiled 4×.*#0 to #3"):
        find_modules(run, f"{STEP}#4")


def test_without_torch_xlas_log_modules_group_by_structure(tmp_path: Path) -> None:
    """Without its log nothing says which line compiled a graph: modules of the same
    structure up to sizes are one function (AdamW's steady step at three sizes), the
    first step another."""
    run_dir = shutil.copytree(ADAMW / "sizes", tmp_path / "run")
    shutil.rmtree(run_dir / "torch_xla")
    comps = _compilations(run_dir)
    assert [c.count for c in comps.functions] == [1, 3]
    assert all(c.function.startswith("SyncTensorsGraph~") for c in comps.functions)
    assert comps.compile_s is None  # torch_xla's metrics went with its log


def test_run_functions_ask_the_run_rule_then_the_name() -> None:
    run = load_run(ADAMW / "steps")
    assert set(run_functions(run).values()) == {("torch_xla", STEP)}
    jax = run_functions(load_run(DATA / "jax_recompile"))  # no torch_xla: names decide
    assert ("jax", "jit_attend") in jax.values()
    assert {fw for fw, _ in jax.values()} <= {"jax", None}


def test_graphs_named_by_torch_xla_compile() -> None:
    """`torch_xla.compile(step, name="train_step")` names its graphs (`train_step.245`)
    and logs `Graph Name: train_step`: they are torch_xla's, and the function is that
    name whatever line called it."""
    text = "\n".join(
        [
            "Compilation Analysis: Compilation Cause",
            "Compilation Analysis:   torch_xla.compile",
            "Compilation Analysis: Graph Info: ",
            "Compilation Analysis:   Graph Name: train_step",
            "Compilation Analysis:   Graph Hash: ca1e",
            "Compilation Analysis: Python Frame Triggered Execution: ",
            "Compilation Analysis:   sync (/v/lib/python3.11/site-packages/torch_xla/torch_xla.py:87)",
            "Compilation Analysis:   __exit__ (/usr/lib/python3.11/contextlib.py:144)",
            "Compilation Analysis:   main (train.py:43)",
            "Compilation Analysis: --------",
        ]
    )
    ((event,), _) = parse_debug(text)
    assert event.name == "train_step"
    assert event.frame == SourceLocation("train.py", 43, "main")  # not contextlib's
    assert is_torch_graph("train_step.245", {event.name})
    assert not is_torch_graph("train_step.245") and not is_torch_graph("jit_train_step")
    before = sorted((DATA / "torch_mlp" / "dump").glob("module_0000*before*.txt"))[0]
    module = parse_module(before.read_text().replace("SyncTensorsGraph.212", "train_step.245"))
    assert function_name(module, event.frame) == "train_step"


def test_the_view_is_computed_again_when_a_file_changes(tmp_path: Path) -> None:
    run_dir = shutil.copytree(ADAMW / "steps", tmp_path / "run")
    run = load_run(run_dir)
    view = torch_xla_run(run)
    assert view is not None and torch_xla_run(run) is view
    (run_dir / "torch_xla" / "metrics.json").write_text("{}")
    again = torch_xla_run(run)
    assert again is not view and again is not None and not again.graphs.timed


@pytest.mark.tf
@pytest.mark.jax
def test_shapes_from_a_header_are_xlas() -> None:
    """A module not analysed takes its shapes from its file's header, where XLA numbers
    long tuples (`/*index=5*/f32[128]`); they are the shapes XLA's own parser reads."""
    from tests.analysis.test_compilations import _xla_program_shapes

    run = load_run(DATA / "torch_mlp")
    for dump in run.modules:
        assert dump.before is not None
        assert "/*index=5*/" in dump.before.read_text(encoding="utf-8").split("\n", 1)[0]
        params, _ = _xla_program_shapes(dump.before)
        assert list(module_shapes(dump)[0]) == params
