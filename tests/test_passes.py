"""The per-pass dumps of a run folder (`hloscope.passes`) and XLA's pass timers in its log
(`hloscope.pass_log`), on real CPU captures and on file names as XLA's GPU pipelines
write them."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from hloscope.pass_log import read_pass_log, run_log
from hloscope.passes import dumped_pass_re, pass_dumps, sanitize
from hloscope.runs import load_run
from tests.conftest import DATA

JAX = DATA / "jax_passes"
TF = DATA / "tf_passes"


def test_pass_dumps_are_found_per_module_in_step_order() -> None:
    run = load_run(JAX)
    [(key, dumps)] = pass_dumps(run).items()
    assert key == "0000.jit_f"
    files = sorted(p.name for p in (JAX / "dump").iterdir() if re.search(r"\.\d{4}\.", p.name))
    assert [d.path.name for d in dumps] == files  # every one, none else
    assert [d.step for d in dumps] == list(range(len(dumps)))
    inliner = next(d for d in dumps if d.after == "call-inliner")
    assert (inliner.pipeline, inliner.before) == (
        "HLO_passes_through_layout_assignment",
        "batch-dot-simplification",
    )
    during = [d for d in dumps if d.during is not None]
    assert [d.after for d in during] == ["copy-insertion"] * 3
    assert during[0].during == "after_adding_copies_to_resolve_interference"
    assert dumps[0].at_pipeline_start and dumps[0].pipeline == "async-collective"


def test_module_names_with_dots_and_long_tensorflow_names() -> None:
    run = load_run(TF)
    [(key, dumps)] = pass_dumps(run).items()
    assert key.startswith("0000.a_inference_dense_relu_12__XlaMustCompile")
    assert dumps[0].pipeline == "sharding-removal" and dumps[0].step == 0
    assert {d.after for d in dumps} >= {"algsimp", "fusion", "layout-assignment"}


def test_the_regex_comes_from_xlas_debug_options() -> None:
    run = load_run(JAX)
    assert dumped_pass_re(run, run.modules[0]) == ".*"


def test_gpu_pipelines_and_repeated_runs_order_by_step(tmp_path: Path) -> None:
    """File names as XLA's GPU compiler writes them (xla/service/gpu/fusion_pipeline.cc:
    pipeline `fusion` with `priority-fusion` and `multi_output_fusion`; the horizontal
    and Triton GEMM passes), a pipeline run twice, and steps past 9999, in any listing
    order."""
    text = (JAX / "dump" / "module_0000.jit_f.before_optimizations.txt").read_text()
    name = "module_0042.jit_train_step"
    steps = [
        (12000, "fusion", "priority-fusion", "cse"),
        (9, "simplification", "algsimp", "simplify-sorts"),
        (10, "simplification", "pipeline-start", "algsimp"),
        (11, "simplification", "algsimp", "simplify-sorts"),
        (40, "post-fusion_optimization", "multi_output_fusion", "cse"),
        (41, "horizontal-fusion", "horizontal_loop_fusion", "dce"),
        (7, "gemm-rewriting", "triton-gemm-rewriter", "pipeline-end"),
    ]
    for step, pipeline, after, before in steps:
        (tmp_path / f"{name}.{step:04d}.{pipeline}.after_{after}.before_{before}.txt").write_text(
            text
        )
    (tmp_path / f"{name}.before_optimizations.txt").write_text(text)
    (tmp_path / f"{name}.sm_9.0_gpu_after_optimizations.txt").write_text(text)
    (tmp_path / f"{name}.sm_9.0_gpu_after_optimizations-buffer-assignment.txt").write_text("")
    run = load_run(tmp_path)
    assert run.modules[0].platform == "sm_90"
    [dumps] = pass_dumps(run).values()
    assert [d.step for d in dumps] == sorted(s for s, *_ in steps)
    assert [d.after for d in dumps][:4] == [
        "triton-gemm-rewriter",
        "algsimp",
        "pipeline-start",
        "algsimp",
    ]
    assert dumps[-1].after == "priority-fusion" and dumps[-1].pipeline == "fusion"


def test_sanitize_is_xlas() -> None:
    assert (
        sanitize("HLO passes through layout assignment") == "HLO_passes_through_layout_assignment"
    )
    assert sanitize("a/b\\c[d]") == "a_b_c_d_"


def _timer_lines(path: Path) -> list[tuple[str, float]]:
    """The `HLO pass: NAME time: N us` lines of a log, read by a regex of the test's own."""
    out = []
    for line in path.read_text().splitlines():
        m = re.search(r"hlo_pass_pipeline\.cc:\d+\] HLO pass: (.+?) time: ([\d.]+) (us|ms) ", line)
        if m:
            out.append((m[1], float(m[2]) / (1e6 if m[3] == "us" else 1e3)))
    return out


def test_every_timer_line_is_read_in_order() -> None:
    for folder in (JAX, TF):
        path = run_log(load_run(folder))
        assert path is not None
        [compilation] = read_pass_log(path)
        assert [(p.name, p.seconds) for p in compilation.passes] == _timer_lines(path)


def test_pipelines_nest_and_their_time_holds_their_passes() -> None:
    path = run_log(load_run(JAX))
    assert path is not None
    [c] = read_pass_log(path)
    assert c.module == "jit_f"
    simplification = [p for p in c.passes if p.name == "simplification"]
    assert simplification and all(p.nested and p.depth == 0 for p in simplification)
    inner = [p for p in c.passes if p.pipeline == "simplification"]
    assert inner and all(p.depth == 1 and not p.nested for p in inner)
    assert "HLO passes through layout assignment" in c.pipelines
    # time in passes: the top-level passes, not their nested ones again
    assert c.seconds == sum(p.seconds for p in c.passes if p.depth == 0)
    assert c.seconds < sum(p.seconds for p in c.passes)


def test_interleaved_threads_and_repeated_compilations(tmp_path: Path) -> None:
    """Two threads logging at once, and one module compiled twice on a thread: each
    compilation keeps its own passes."""
    lines = [
        line
        for line in (JAX / "stderr.log").read_text().splitlines()
        if "hlo_pass_pipeline.cc" in line
    ]
    other = [line.replace(" jit_f:", " jit_g:").replace("   ", "   9", 1) for line in lines]
    mixed = [x for pair in zip(lines, other, strict=True) for x in pair] + lines
    log = tmp_path / "stderr.log"
    log.write_text("\n".join(mixed) + "\n")
    found = read_pass_log(log)
    assert [c.module for c in found] == ["jit_f", "jit_g", "jit_f"]
    assert len({len(c.passes) for c in found}) == 1
    assert found[0].passes == found[2].passes


def test_a_run_without_a_log_has_no_timings(tmp_path: Path) -> None:
    shutil.copytree(JAX / "dump", tmp_path / "dump")
    run = load_run(tmp_path / "dump")
    assert run_log(run) is None
