"""`hloscope diff` and `hloscope check`: output, JSON, HTML, and the exit codes CI relies
on (0 ok, 1 regression or budget exceeded, 2 usage), through CliRunner and the installed
entry point."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hloscope.cli import app
from tests.analysis.test_diff import BEFORE, FUSED_ALL, after
from tests.conftest import DATA

runner = CliRunner()

SPLIT = [("kLoop", ["add", "mul"]), ("kLoop", ["tanh", "exp"])]


def _run(folder: Path, kernels: list[tuple[str, list[str]]], *, prefix: str = "k") -> Path:
    """A bare dump folder with one module, `jit_f`, before and after optimization."""
    folder.mkdir()
    (folder / "module_0001.jit_f.before_optimizations.txt").write_text(BEFORE)
    (folder / "module_0001.jit_f.cpu_after_optimizations.txt").write_text(
        after(kernels, prefix=prefix)
    )
    return folder


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    """Run A with one fused elementwise kernel; run B with it split in two."""
    return _run(tmp_path / "a", FUSED_ALL), _run(tmp_path / "b", SPLIT, prefix="fusion.")


def test_diff_names_the_kernels_that_split(runs: tuple[Path, Path]) -> None:
    result = runner.invoke(app, ["diff", *map(str, runs)])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "split" in out and "k0 [kLoop] → 2 kernels [kLoop ×2]" in out
    assert "B: fusion.0, fusion.1" in out
    assert "jit(f)/{add, mul, tanh, exp}" in out
    assert "fused → alone" not in out  # each op still shares a kernel with another
    assert result.stderr == ""


def test_diff_json_schema(runs: tuple[Path, Path]) -> None:
    result = runner.invoke(app, ["diff", *map(str, runs), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema_version"] == 1 and doc["changed"] is True
    [m] = doc["modules"]
    assert m["a"]["key"] == m["b"]["key"] == "0001.jit_f" and m["matched_by"] == "name"
    assert m["metrics"]["kernels"] == {
        "a": 2,
        "b": 3,
        "delta": 1,
        "relative": 0.5,
        "worse_when": "higher",
    }
    assert m["kernels_by_kind"]["kLoop"] == {"a": 1, "b": 2, "delta": 1}
    [change] = m["kernel_changes"]
    assert change["change"] == "split"
    assert [k["name"] for k in change["a"]] == ["k0"]
    assert [k["name"] for k in change["b"]] == ["fusion.0", "fusion.1"]
    assert m["highlight"] == {"a": {"k0": "split"}, "b": {"fusion.0": "split", "fusion.1": "split"}}
    assert [k["a"][0]["name"] for k in m["matched_kernels"]] == ["dot"]
    assert "regressions" not in doc


def test_fail_on_regression_exits_1_with_one_line(runs: tuple[Path, Path]) -> None:
    result = runner.invoke(app, ["diff", *map(str, runs), "--fail-on-regression"])
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert line.startswith("hloscope: regression: 0001.jit_f: kernels 2 (A) -> 3 (B)")
    assert "and 2 more: launches in 0001.jit_f, ops_per_kernel in 0001.jit_f" in line
    # +50% kernels and launches, -33% ops per kernel: within a 60% tolerance
    ok = runner.invoke(app, ["diff", *map(str, runs), "--fail-on-regression", "--tolerance", "60%"])
    assert ok.exit_code == 0, ok.output
    # fewer kernels is not a regression
    a, b = runs
    assert runner.invoke(app, ["diff", str(b), str(a), "--fail-on-regression"]).exit_code == 0


def test_fail_on_regression_with_json_reports_them_in_the_document(
    runs: tuple[Path, Path],
) -> None:
    result = runner.invoke(
        app, ["diff", *map(str, runs), "--json", "--fail-on-regression", "--tolerance", "5"]
    )
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["tolerance"] == 0.05
    assert {r["metric"] for r in doc["regressions"]} == {"kernels", "launches", "ops_per_kernel"}


def test_diff_of_a_run_with_itself_reports_no_change() -> None:
    run = str(DATA / "jax_mlp")
    result = runner.invoke(app, ["diff", run, run, "--fail-on-regression"])
    assert result.exit_code == 0, result.output
    assert "no change: same modules, kernels and op placements" in result.stdout
    assert "jit_mlp  [0030.jit_mlp]  no change" in result.stdout


def test_diff_of_a_run_with_itself_reads_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same folder twice (here once through a link) is read once; the same run in
    another folder is read again, and the two print the same."""
    import hloscope.inspection

    read: list[Path] = []
    inspect = hloscope.inspection.inspect_run

    def counted(run: Path, *args: object, **kw: object) -> object:
        read.append(run)
        return inspect(run, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(hloscope.inspection, "inspect_run", counted)
    run = DATA / "jax_mlp"
    (tmp_path / "link").symlink_to(run)
    copy = shutil.copytree(run, tmp_path / "copy")
    printed = []
    for other in (run, tmp_path / "link", copy):
        read.clear()
        result = runner.invoke(app, ["diff", str(run), str(other), "--json", "--no-cache"])
        assert result.exit_code == 0, result.output
        assert len(read) == (2 if other == copy else 1)
        doc = json.loads(result.stdout)
        doc.pop("b")  # where B was read from
        printed.append(doc)
    assert printed[0] == printed[1] == printed[2]
    assert printed[0]["modules"]


def test_diff_html_is_self_contained_and_escaped(tmp_path: Path) -> None:
    a = _run(tmp_path / "a", FUSED_ALL)
    b = _run(tmp_path / "b", SPLIT)
    for run in (a, b):  # JAX names lambdas `<lambda>`: it must reach the page escaped
        path = run / "module_0001.jit_f.cpu_after_optimizations.txt"
        path.write_text(path.read_text().replace("jit(f)/tanh", "jit(f)/<lambda>/tanh"))
    page = tmp_path / "diff.html"
    result = runner.invoke(app, ["diff", str(a), str(b), "--html", str(page)])
    assert result.exit_code == 0, result.output
    assert f"wrote {page}" in result.stderr
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")
    assert "&lt;lambda&gt;" in html and "<lambda>" not in html
    assert '<tr class="split">' in html and "<code>k0</code>" in html
    assert "<script" not in html and "http" not in html


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--tolerance", "lots"], "--tolerance 'lots'"),
        (["--module", "nosuch"], "no module of both runs matches 'nosuch'"),
    ],
)
def test_diff_usage_errors_exit_2(runs: tuple[Path, Path], extra: list[str], message: str) -> None:
    result = runner.invoke(app, ["diff", *map(str, runs), *extra])
    assert result.exit_code == 2
    assert message in result.stderr and len(result.stderr.splitlines()) == 1


def test_nothing_to_judge_is_a_usage_error() -> None:
    tf = next((DATA / "tf_dense_relu").glob("*cpu_after_optimizations.txt"))
    mlp = next((DATA / "jax_mlp").glob("*jit_mlp.cpu_after_optimizations.txt"))
    shown = runner.invoke(app, ["diff", str(tf), str(mlp)])
    assert shown.exit_code == 0 and "only in A: a_inference_dense_relu_12.1" in shown.stdout
    judged = runner.invoke(app, ["diff", str(tf), str(mlp), "--fail-on-regression"])
    assert judged.exit_code == 2 and "nothing to judge" in judged.stderr


def test_diff_module_option_selects_and_judges_that_module() -> None:
    run = str(DATA / "jax_mlp")
    result = runner.invoke(app, ["diff", run, run, "-M", "0008", "--json"])
    assert result.exit_code == 0, result.output
    assert [m["a"]["key"] for m in json.loads(result.stdout)["modules"]] == ["0008.jit__normal"]


# ---------------------------------------------------------------------------------------
# check


def test_check_within_budget_prints_a_line_per_module(runs: tuple[Path, Path]) -> None:
    result = runner.invoke(
        app, ["check", str(runs[1]), "--max-kernels", "3", "--min-ops-per-kernel", "2"]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "ok 0001.jit_f  kernels 3 ≤ 3, HLO ops per kernel 2.00 ≥ 2"


@pytest.mark.parametrize(
    ("budget", "line"),
    [
        (["--max-kernels", "2"], "hloscope: budget exceeded: 0001.jit_f: kernels 3 > budget 2"),
        (
            ["--max-launches", "1"],
            "hloscope: budget exceeded: 0001.jit_f: launches per execution 3 > budget 1",
        ),
        (
            ["--min-ops-per-kernel", "2.5"],
            "hloscope: budget exceeded: 0001.jit_f: HLO ops per kernel 2 < budget 2.50",
        ),
    ],
)
def test_check_budget_exceeded_exits_1(
    runs: tuple[Path, Path], budget: list[str], line: str
) -> None:
    result = runner.invoke(app, ["check", str(runs[1]), *budget])
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [line]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give at least one budget"),
        (["--max-kernels", "5", "--module", "nosuch"], "no module matches 'nosuch'"),
    ],
)
def test_check_usage_errors_exit_2(runs: tuple[Path, Path], args: list[str], message: str) -> None:
    result = runner.invoke(app, ["check", str(runs[0]), *args])
    assert result.exit_code == 2
    assert message in result.stderr


def test_check_skips_trivial_modules_unless_asked() -> None:
    run = str(DATA / "jax_mlp")
    # jit_mlp has 11 kernels; the helpers are not held to the budget
    assert runner.invoke(app, ["check", run, "--max-kernels", "11"]).exit_code == 0
    helper = runner.invoke(app, ["check", run, "--max-kernels", "0", "--module", "0008"])
    assert helper.exit_code == 1 and "0008.jit__normal: kernels" in helper.stderr


def test_installed_entry_point_exit_codes_and_no_framework_imports() -> None:
    exe = shutil.which("hloscope", path=str(Path(sys.executable).parent))
    assert exe, "the hloscope console script is not installed in this environment"
    run = str(DATA / "jax_mlp")
    done = subprocess.run([exe, "check", run, "--max-kernels", "5"], capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr == "hloscope: budget exceeded: 0030.jit_mlp: kernels 11 > budget 5\n"
    done = subprocess.run(
        [exe, "diff", run, run, "--fail-on-regression"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    # checked as the process ends (a command that kept big objects ends in `main`)
    probe = (
        "import atexit, sys\n"
        "from hloscope.cli import main\n"
        "heavy = {'tensorflow', 'jax', 'jaxlib', 'keras'}\n"
        "atexit.register(lambda: print('HEAVY', sorted(heavy & set(sys.modules))))\n"
        f"sys.argv = ['hloscope', 'diff', {run!r}, {run!r}, '--json']\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert "HEAVY []" in done.stdout, done.stdout[-500:] + done.stderr[-500:]
