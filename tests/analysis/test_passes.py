"""The pass story (`analysis.passes`) on real per-pass dumps captured on the CPU: the
counts after every pass against XLA's own parser, the last pass against `report`, the
hand-checked story of `relu(x @ w + b).sum()` and of `samples/dense_relu.py`, and XLA's
pass times against the raw log."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from hloscope.analysis import passes as P
from hloscope.analysis.fusion import KernelMemo, analyze_module, reanalyze
from hloscope.analysis.report import analyze_run
from hloscope.errors import UsageError
from hloscope.hlo.series import ModuleSeries
from hloscope.runs import load_run
from tests.analysis.test_fusion import _xla_kernel_count
from tests.conftest import DATA

JAX = DATA / "jax_passes"
TF = DATA / "tf_passes"


def _story(folder: Path) -> P.PassStory:
    [story] = P.pass_stories(load_run(folder))
    return story


def _xla_counts(path: Path) -> tuple[int, int, int]:
    """(instructions, fusions that launch, kernels), as XLA's parser reads the file and a
    walk over it counts them."""
    hlo = pytest.importorskip("jaxlib._hlo")
    text = path.read_text()
    module = hlo.hlo_module_from_text(text)
    instructions = sum(len(c.instructions()) for c in module.computations())
    kernels, fusions = _xla_kernel_count(text)
    return instructions, fusions, kernels


@pytest.mark.parametrize("folder", [JAX, TF])
def test_counts_after_every_pass_are_xlas(folder: Path) -> None:
    story = _story(folder)
    assert story.start is not None and len(story.steps) >= 6
    for step in story.steps:
        assert step.path is not None
        instructions, fusions, kernels = _xla_counts(step.path)
        c = step.counts
        assert (c.instructions, c.fusions, c.kernels) == (instructions, fusions, kernels), step
        assert c.launches == c.kernels  # no loops on these modules: one launch a kernel


@pytest.mark.parametrize("folder", [JAX, TF])
def test_the_last_pass_counts_are_reports(folder: Path) -> None:
    story = _story(folder)
    [m] = analyze_run(load_run(folder)).modules
    assert m.after is not None and m.before is not None and story.end is not None
    assert (story.end.instructions, story.end.fusions, story.end.kernels, story.end.launches) == (
        m.after.instructions,
        m.after.fusions,
        m.after.kernel_count,
        m.after.launches,
    )
    assert story.start is not None
    assert (story.start.instructions, story.start.kernels) == (m.before.instructions, m.before.ops)
    assert [k.name for k in story.kernels] == [k.name for k in m.after.kernels]


def test_jax_relu_story_as_checked_by_hand() -> None:
    """`relu(x @ w + b).sum()`: the call inliner takes 19 instructions to 17, algsimp to
    14, cse to 13; dot-library-rewriter wraps the dot into the one library fusion, and
    XLA's `fusion` pass merges add, max and the reduce into the loop fusion."""
    story = _story(JAX)
    assert story.start is not None and story.start.instructions == 19
    by_pass = {s.name: s for s in story.steps}
    assert by_pass["call-inliner"].counts.instructions == 17
    assert by_pass["algsimp"].counts.instructions == 14
    assert by_pass["cse"].counts.instructions == 13
    assert by_pass["dot-library-rewriter"].counts.fusions == 1
    assert by_pass["fusion"].counts.kernels == 2
    changed = [s.name for s in story.steps if not s.note]
    assert changed == ["call-inliner", "algsimp", "cse", "dot-library-rewriter", "fusion"]
    ynn, loop = story.kernels
    assert (ynn.name, ynn.first_pass) == ("ynn_fusion", "dot-library-rewriter")
    assert [(e.change, e.kernels) for e in ynn.history] == [(P.CREATED, ("dot_general.1",))]
    assert (loop.name, loop.first_pass) == ("maximum_reduce_fusion", "fusion")
    [event] = loop.history
    assert event.change == P.MERGED and set(event.kernels) == {
        "add.6",
        "add.7",
        "max.1",
        "reduce_sum.7",
    }
    [alone] = story.ops
    assert (alone.op, alone.kernel, alone.left_pass) == ("jit(f)/dot_general", "ynn_fusion", None)
    # the steps are those of the dumps, in XLA's order
    assert [s.index for s in story.steps] == sorted(s.index for s in story.steps)


def test_tensorflow_dense_relu_story() -> None:
    """`samples/dense_relu.py`: algsimp folds MatMul's transpose and the reshapes (16
    instructions to 9); `fusion` merges the bias add and the ReLU; the MatMul's dot
    never shares a kernel."""
    story = _story(TF)
    by_pass = {s.name: s for s in story.steps}
    assert story.start is not None and story.start.instructions == 16
    assert by_pass["algsimp"].counts.instructions == 9
    matmul, loop = story.kernels
    assert (matmul.name, matmul.first_pass, matmul.history) == ("MatMul.2", None, ())
    assert (loop.name, loop.first_pass) == ("broadcast_maximum_fusion", "fusion")
    assert loop.history[0].change == P.MERGED
    [alone] = story.ops
    assert (alone.op, alone.left_pass) == ("MatMul", None)
    # the optimized module differs from the last dump (scheduled outside any pass)
    assert story.steps[-1].note.startswith("the optimized module")


def _log_times(folder: Path) -> list[tuple[str, float]]:
    out = []
    for line in (folder / "stderr.log").read_text().splitlines():
        m = re.search(r"hlo_pass_pipeline\.cc:\d+\] HLO pass: (.+?) time: ([\d.]+) (us|ms) ", line)
        if m:
            out.append((m[1], float(m[2]) / (1e6 if m[3] == "us" else 1e3)))
    return out


@pytest.mark.parametrize("folder", [JAX, TF])
def test_each_pass_time_is_its_timer_line(folder: Path) -> None:
    story = _story(folder)
    logged = _log_times(folder)
    timed = [s for s in story.steps if s.seconds is not None]
    assert timed, "the log has XLA's pass timers"
    for s in timed:
        assert (s.name, s.seconds) in logged
    assert story.seconds is not None and story.slowest
    # summed by name over the runs of the passes that run no pipeline of their own
    top = story.slowest[0]
    assert top.seconds == pytest.approx(sum(t for n, t in logged if n == top.name))
    assert [p.seconds for p in story.slowest] == sorted(
        (p.seconds for p in story.slowest), reverse=True
    )


def test_without_a_log_there_are_no_times_and_a_note(tmp_path: Path) -> None:
    shutil.copytree(JAX / "dump", tmp_path / "dump")
    story = _story(tmp_path / "dump")
    assert all(s.seconds is None for s in story.steps) and story.seconds is None
    assert any("no pass timings" in n for n in story.notes)
    # the story itself does not depend on the log
    assert [s.counts for s in story.steps] == [s.counts for s in _story(JAX).steps]


def test_a_run_without_pass_dumps_says_how_to_make_them() -> None:
    with pytest.raises(UsageError, match="hloscope dump --passes"):
        P.pass_stories(load_run(DATA / "jax_mlp"))


@pytest.mark.parametrize("folder", [JAX, TF])
def test_reanalyze_equals_a_whole_analysis(folder: Path) -> None:
    """Every dump analysed from the one before equals `analyze_module` of it."""
    dump = folder / "dump"
    paths = [
        *dump.glob("*.before_optimizations.txt"),
        *sorted(p for p in dump.glob("*.txt") if re.search(r"\.\d{4}\.", p.name)),
        *dump.glob("*_after_optimizations.txt"),
    ]
    series, memo = ModuleSeries(), KernelMemo()
    last = None
    reused = 0
    for path in paths:
        module = series.parse(path.read_text())
        whole = analyze_module(module, "cpu")
        if last is not None:
            again = reanalyze(last[0], last[1], module, "cpu", memo)
            if again is not None:
                reused += 1
                assert again == whole, path.name
        assert analyze_module(module, "cpu", memo=memo) == whole
        last = (module, whole)
    assert reused > 3


def test_a_partial_dump_says_what_it_cannot_attribute() -> None:
    """`--xla_dump_hlo_pass_re=fusion`: the first dump holds every change made before
    `fusion` by passes that were not dumped; only `fusion` itself is one pass's change."""
    story = _story(DATA / "jax_passes_fusion_re")
    assert story.pass_re == "fusion"
    assert any("only passes matching 'fusion'" in n for n in story.notes)
    first, fusion = story.steps[:2]
    assert first.name == "(passes up to reshape-decomposer)" and first.seconds is None
    assert fusion.name == "fusion" and fusion.seconds is not None
    # the same counts as the full dump after the same passes
    full = {s.name: s.counts for s in _story(JAX).steps}
    assert fusion.counts == full["fusion"]
    assert first.counts == full["dot-library-rewriter"]
    assert [k.first_pass for k in story.kernels] == ["(passes up to reshape-decomposer)", "fusion"]
