"""`hloscope dump` and `hloscope.inspect`/`bench` on real PyTorch/XLA code, on the CPU,
checked against what the script did and what torch_xla itself counted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hloscope.analysis.compilations import run_compilations
from hloscope.analysis.report import analyze_run
from hloscope.analysis.torch_graphs import torch_xla_run
from hloscope.cli import app
from hloscope.runs import load_run
from hloscope.timing.sources import load_profile
from tests.capture.test_dump import ROOT, SAMPLES, _needs

# AdamW steps at changing batch sizes: step 0 also creates AdamW's state (a graph of its
# own), then one graph per new size.
SIZES = [32, 48, 32, 48, 64]


@pytest.fixture(scope="module")
def torch_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _needs("torch_xla")
    out = tmp_path_factory.mktemp("torch") / "run"
    sizes = ",".join(map(str, SIZES))
    args = ["dump", "--profile", str(SAMPLES / "torch_mlp.py"), "-o", str(out), "--"]
    result = CliRunner().invoke(app, [*args, "--batch-sizes", sizes], env={"XLA_FLAGS": None})
    assert result.exit_code == 0, result.output
    (out.parent / "dump-output.txt").write_text(result.output)  # what the user saw
    return out


@pytest.mark.slow
@pytest.mark.torch
def test_run_json_records_torch_xla(torch_run: Path) -> None:
    manifest = json.loads((torch_run / "run.json").read_text())
    assert manifest["framework"] == "torch_xla"
    # torch.__version__ carries the build (`2.9.0+cu128`); the distribution's does not
    assert manifest["versions"]["torch"].split("+")[0] == version("torch")
    assert manifest["versions"]["torch_xla"] == version("torch_xla")
    assert {
        "framework": "torch_xla",
        "platform": "cpu",
        "kind": "CPU",
        "id": 0,
        "name": "CPU:0",
    } in (manifest["devices"])
    env = manifest["env"]
    assert env["XLA_HLO_DEBUG"] == env["XLA_IR_DEBUG"] == "1"
    assert env["PT_XLA_DEBUG_LEVEL"] == "2"
    assert env["PT_XLA_DEBUG_FILE"] == str(torch_run / "torch_xla" / "debug.txt")
    assert "--xla_dump_hlo_as_proto" in env["XLA_FLAGS"].split()
    assert manifest["profile"]["profiled"] == ["torch_xla"]


@pytest.mark.slow
@pytest.mark.torch
def test_recompiles_and_steps_are_the_scripts(torch_run: Path) -> None:
    """One module per compile torch_xla counted; a graph per batch size after the first
    step, each run as many steps as the script ran at that size; the varying dimension,
    read from the HLO, is the batch size the script used."""
    view = torch_xla_run(load_run(torch_run))
    assert view is not None and view.records is not None
    graphs = view.graphs
    assert graphs.compiles == view.records.counters["UncachedCompile"] == 4
    assert graphs.executions == len(SIZES) == view.records.counters["ExecuteComputation"]
    first, *steady = graphs.graphs
    assert first.executions == 1  # AdamW's first step
    later = list(dict.fromkeys(SIZES[1:]))
    assert [g.executions for g in steady] == [SIZES[1:].count(s) for s in later]
    # one function in the compilations view: the first step set apart, the batch
    # dimension varying among the later steps' graphs
    run = load_run(torch_run)
    (step,) = run_compilations(run, analyze_run(run).modules).functions
    assert step.function == "SyncTensorsGraph@torch_mlp.py:76" and step.count == 4
    assert [v.index for v in step.set_apart] == [0]
    varying = {(v.arg, v.dim): list(v.values) for v in step.varying}
    # labels s64[B], inputs f32[B,64]
    assert varying == {(0, 0): [None, *later], (7, 0): [None, *later]}
    # each profiled module ran as often as torch_xla logged its graph
    timed = load_profile(torch_run, skip_first=0).modules.values()
    by_program = {t.program_id: t.executions for t in timed}
    assert {int(g.modules[0][:4]): g.executions for g in graphs.graphs} == by_program


@pytest.mark.slow
@pytest.mark.torch
def test_report_and_ops_name_aten_ops_on_the_scripts_lines(torch_run: Path) -> None:
    runner = CliRunner()
    text = runner.invoke(app, ["report", str(torch_run)], terminal_width=200).output
    assert f"torch_xla: 4 distinct graphs ran {len(SIZES)} times · {len(SIZES)} executions" in text
    assert "SyncTensorsGraph@torch_mlp.py:76 compiled 4× · args 0, 7 dim 0: 48, 32, 64" in text
    # `dump` ends with the same: the recompile line, then the torch_xla block
    said = (torch_run.parent / "dump-output.txt").read_text()
    assert "SyncTensorsGraph@torch_mlp.py:76 compiled 4× · args 0, 7 dim 0: 48, 32, 64" in said
    assert f"torch_xla: 4 distinct graphs ran {len(SIZES)} times" in said
    doc = json.loads(runner.invoke(app, ["report", str(torch_run), "--json"]).stdout)
    assert doc["run"]["framework"] == "torch_xla"
    assert doc["torch_xla"]["distinct_graphs"] == 4 and doc["torch_xla"]["executions"] == len(SIZES)
    ops = json.loads(runner.invoke(app, ["ops", str(torch_run), "--json"]).stdout)
    lines = (SAMPLES / "torch_mlp.py").read_text().splitlines()
    fc1 = next(n for n, line in enumerate(lines, 1) if "self.fc1(x)" in line)
    for module in ops:
        by_op = {o["op"]: o for o in module["ops"]}
        addmm, relu = f"aten::addmm@torch_mlp.py:{fc1}", f"aten::relu@torch_mlp.py:{fc1}"
        assert by_op[addmm]["status"] == "fused" and relu in by_op[addmm]["shares_with"]
        assert by_op[addmm]["location"].endswith(f"samples/torch_mlp.py:{fc1} (forward)")
        assert by_op[addmm]["user_frame"] is True


@pytest.mark.slow
def test_a_script_without_torch_xla_gets_none_of_its_settings(tmp_path: Path) -> None:
    script = tmp_path / "plain.py"
    script.write_text("import os\nprint(os.environ.get('XLA_HLO_DEBUG'))\n")
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["dump", str(script), "-o", str(out)])
    assert result.exit_code == 1  # compiled nothing
    assert (out / "stdout.log").read_text() == "None\n"
    manifest = json.loads((out / "run.json").read_text())
    env = manifest["env"]
    assert not {"XLA_HLO_DEBUG", "XLA_IR_DEBUG", "PT_XLA_DEBUG_LEVEL", "PT_XLA_DEBUG_FILE"} & set(
        env
    )
    assert "--xla_dump_hlo_as_proto" not in env["XLA_FLAGS"]
    assert not (out / "torch_xla").exists()


_INSPECT = """
import collections, json, sys
import torch, hloscope
from hloscope.runs import load_run
from jaxlib import _hlo
sys.path.insert(0, {samples!r})
from torch_mlp import MLP

def f(x, w):
    return torch.softmax(torch.tanh(x @ w) * 2.0, dim=-1)

x, w = torch.randn(16, 8), torch.randn(8, 4)
run = hloscope.inspect(f, x, w)
(m,) = load_run(run.path).modules
before, after = m.load_before(), m.load_after()
import torch_xla
dev = torch_xla.device()
own = torch_xla._XLAC._get_xla_tensors_hlo([f(x.to(dev), w.to(dev))])  # torch_xla's own HLO
xla = _hlo.hlo_module_from_text(own)
import re
opcode = re.compile(r"(?:^|\\s)([a-z][a-z0-9\\-]*)\\(")
xla_ops = collections.Counter(
    opcode.search(i.to_string().split(" = ", 1)[1])[1]
    for c in xla.computations() for i in c.instructions()
)
ours = collections.Counter(i.opcode for _, i in before.instructions())
view = hloscope.open_run(run.path).main()
ops = {{p.op.name: p.status for p in view.ops()}}
mlp = hloscope.inspect(MLP().eval(), torch.randn(4, 64))
mlp_ops = {{p.op.name for p in hloscope.open_run(mlp.path).main().ops()}}
result = hloscope.bench(MLP().eval(), torch.randn(4, 64), repeats=3, rounds=1)
print(json.dumps({{
    "name": before.name,
    "params": [list(p.shape.dimensions) for p in before.entry.parameters],
    "same_ops": xla_ops == ours,
    "kernels": len(view.kernels()),
    "ops": ops,
    "mlp_ops": sorted(mlp_ops),
    "framework": load_run(run.path).manifest.framework,
    "compiles": [[c.framework, c.module, c.seconds > 0] for c in load_run(run.path).manifest.compiles],
    "bench": [[r.name, r.error, r.repeats] for r in result.modes],
}}))
"""


@pytest.mark.slow
@pytest.mark.torch
def test_inspect_and_bench_a_torch_function(tmp_path: Path) -> None:
    """In a fresh process (XLA reads its dump flags once, when torch_xla's runtime
    starts): the captured graph is the one torch_xla itself builds for the function."""
    _needs("torch_xla")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PJRT_DEVICE": "CPU", "TMPDIR": str(tmp_path)}
    env.pop("XLA_FLAGS", None)
    script = _INSPECT.format(samples=str(SAMPLES))
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads(done.stdout.strip().splitlines()[-1])
    assert doc["name"].startswith("SyncTensorsGraph") and doc["framework"] == "torch_xla"
    # torch_xla's own CompileTime metric timed the one compile
    assert doc["compiles"] == [["torch_xla", f"0000.{doc['name']}", True]]
    # x, w, and the scalar 2.0: torch_xla passes scalars other than 0 and 1 as data
    assert sorted(doc["params"]) == [[], [8, 4], [16, 8]]
    assert doc["same_ops"] is True
    assert doc["kernels"] >= 2
    line = 1 + next(i for i, t in enumerate(script.splitlines()) if "torch.softmax(" in t)
    assert set(doc["ops"]) == {
        f"aten::{op}@<string>:{line}" for op in ("mm", "tanh", "mul.1/aten::mul", "softmax")
    }
    assert doc["ops"][f"aten::softmax@<string>:{line}"] == "fused"
    assert "aten::addmm@torch_mlp.py:39" in doc["mlp_ops"]
    assert [b[:2] for b in doc["bench"]] == [["eager", None], ["xla", None]]
    assert all(b[2] == 3 for b in doc["bench"])
