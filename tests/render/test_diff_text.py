"""The `hloscope diff` / `hloscope check` terminal views (`diff_view`, `check_line`) on a
fixed-width rich `Console`, on real dumps: what each part shows, and when."""

from __future__ import annotations

import re
from pathlib import Path

from hloscope.analysis.budget import Budget
from hloscope.analysis.diff import diff_runs, select_diffs
from hloscope.analysis.report import analyze_run
from hloscope.render.diff_text import check_line, diff_view
from hloscope.runs import load_run
from tests.conftest import DATA
from tests.render.test_diff_golden import REGRESSION, render, run_diff


def _row(text: str, label: str) -> list[str]:
    """The cells of the table row that starts with `label`."""
    [line] = [x for x in text.splitlines() if x.strip().startswith(label)]
    return re.split(r"\s{2,}", line.strip())


def test_regression_shows_counts_a_vs_b() -> None:
    text = render(diff_view(run_diff(*REGRESSION)))
    assert _row(text, "kernels") == ["kernels", "11", "52", "+41 (+372.7%)"]
    assert _row(text, "launches per execution") == [
        "launches per execution",
        "11",
        "52",
        "+41 (+372.7%)",
    ]
    assert _row(text, "instructions before opt.")[1:] == ["92", "92", "="]
    assert _row(text, "kLoop") == ["kLoop", "7", "48", "+41"]
    assert _row(text, "__ynn_fusion") == ["__ynn_fusion", "4", "4", "="]
    assert "kernel time" not in text  # not profiled
    # 7: B's `wrapped_broadcast.9` only broadcasts a constant carrying `output/div`'s
    # metadata, which is no evidence of the div: it appears on its own
    assert "kernel changes by bytes moved: 7 changed, 4 matched unchanged" in text
    assert text.count("\nsplit ") == 3 and "fused → alone (18): " in text
    assert all(len(line) <= 100 for line in text.splitlines())


def test_modules_only_in_one_run_are_named_once_each() -> None:
    d = run_diff(*REGRESSION)
    [line] = [x for x in render(diff_view(d)).splitlines() if x.startswith("only in A: ")]
    shown = line.removeprefix("only in A: ").split(", ")
    more = int(shown.pop().removeprefix("… +"))
    counts = [int(n.rsplit(" ×", 1)[1]) if " ×" in n else 1 for n in shown]
    assert len(shown) == 4 and sum(counts) + more == len(d.only_a)
    assert shown[0] == f"jit__normal ×{sum(1 for m in d.only_a if m.name == 'jit__normal')}"
    names = [n.split(" ×")[0] for n in shown]
    assert len(set(names)) == len(names)


def test_selected_modules_hide_the_run_summary() -> None:
    d = run_diff(*REGRESSION)
    text = render(diff_view(d, modules=select_diffs(d, ["30"])))
    assert "only in A" not in text and "── jit_mlp  [0030.jit_mlp]" in text
    assert render(diff_view(d, modules=())).splitlines()[-1] == "no module to compare"


def test_a_run_against_itself() -> None:
    report = analyze_run(load_run(DATA / "jax_mlp"))
    d = diff_runs(report, report)
    text = render(diff_view(d))
    trivial = len(report.trivial)
    assert f"{trivial} trivial helper modules matched (0 changed); --all shows them" in text
    assert "no change: same modules, kernels and op placements" in text
    assert "── jit_mlp  [0030.jit_mlp]  no change" in text and "only in" not in text
    every = render(diff_view(d, show_all=True))
    assert every.count("  no change") == len(report.modules) and "trivial helper" not in every


def test_profiled_diff_shows_kernel_time() -> None:
    d = run_diff(*REGRESSION)
    [mlp] = d.modules
    assert mlp.a.after is not None and mlp.b.after is not None
    a = {k.name: 2.0 for k in mlp.a.after.kernels}
    b = {k.name: 1.0 for k in mlp.b.after.kernels}
    timed = diff_runs(d.a, d.b, timings_a={"jit_mlp": a}, timings_b={"jit_mlp": b})
    text = render(diff_view(timed))
    label = "kernel time per execution (µs)"
    assert _row(text, label) == [label, "22.0", "52.0", "+30.0 (+136.4%)"]
    assert "kernel changes by time: 7 changed" in text
    assert "2.0 → 11.0 µs (+9.0)" in text  # a GELU layer: one kernel of 2 µs -> 11 of 1 µs


def test_check_line(tmp_path: Path) -> None:
    report = analyze_run(load_run(DATA / "jax_mlp_no_fusion_pass"))
    [m] = report.modules
    line = render(check_line(m, Budget(max_kernels=60, max_launches=52, min_ops_per_kernel=1)))
    assert line == (
        "ok 0030.jit_mlp  kernels 52 ≤ 60, launches per execution 52 ≤ 52, "
        "HLO ops per kernel 1.35 ≥ 1\n"
    )
    assert m.before is not None and round(m.before.ops / 52, 2) == 1.35
    src = next(DATA.glob("jax_mlp_no_fusion_pass/*after_opt*"))
    (tmp_path / src.name).write_text(src.read_text())  # without its before file
    after_only = analyze_run(load_run(tmp_path))
    [bare] = after_only.modules
    text = render(check_line(bare, Budget(min_ops_per_kernel=1)))
    assert text == "ok 0030.jit_mlp  HLO ops per kernel unknown (no before/after pair)\n"
