"""Fusion budgets (`hloscope check`): each limit on hand-written modules, the modules a
check picks, and a real dump whose kernel counts XLA's own parser confirms."""

from __future__ import annotations

from pathlib import Path

import pytest

from hloscope.analysis import budget as B
from hloscope.analysis.report import analyze_run
from hloscope.errors import UsageError
from hloscope.runs import load_run
from tests.analysis.test_diff import after, report, xla_entry_fusions
from tests.conftest import DATA, dump_file


def test_check_run_reports_each_exceeded_budget() -> None:
    split = report(after([("kLoop", ["add"]), ("kLoop", ["mul"]), ("kLoop", ["tanh", "exp"])]))
    assert split.after is not None and split.after.kernel_count == 4
    assert B.check_run([split], B.Budget(max_kernels=4, max_launches=4)) == ()
    found = B.check_run([split], B.Budget(max_kernels=3, min_ops_per_kernel=2.0))
    assert [(v.metric, v.value, v.limit) for v in found] == [
        ("kernels", 4, 3),
        ("ops_per_kernel", 1.5, 2.0),
    ]
    assert found[0].message == "0001.jit_f: kernels 4 > budget 3"
    assert found[1].message == "0001.jit_f: HLO ops per kernel 1.50 < budget 2"
    launches = B.check_run([split], B.Budget(max_launches=3))
    assert [v.message for v in launches] == ["0001.jit_f: launches per execution 4 > budget 3"]


def test_budget_empty_only_without_limits() -> None:
    assert B.Budget().empty
    assert not B.Budget(max_launches=0).empty
    assert not B.Budget(min_ops_per_kernel=0.0).empty


def test_a_module_without_after_dump_has_nothing_to_check() -> None:
    m = report(after([("kLoop", ["add"])]))
    bare = type(m)(m.key, m.name, m.module_id, m.platform, m.trivial, m.before, None, None)
    assert B.check_run([bare], B.Budget(max_kernels=0)) == ()


def test_check_real_dump_with_fusion_pass_off() -> None:
    report_ = analyze_run(load_run(DATA / "jax_mlp_no_fusion_pass"))
    checked = B.select_checked(report_)
    [mlp] = checked
    assert mlp.after is not None
    kernels = len(
        xla_entry_fusions(dump_file("jax_mlp_no_fusion_pass", "*after_optimizations.txt"))
    )
    assert mlp.after.kernel_count == kernels == 52
    assert B.check_run(checked, B.Budget(max_kernels=kernels)) == ()
    [v] = B.check_run(checked, B.Budget(max_kernels=kernels - 1))
    assert v.message == f"0030.jit_mlp: kernels {kernels} > budget {kernels - 1}"


def test_select_checked_main_modules_or_all_selected() -> None:
    full = analyze_run(load_run(DATA / "jax_mlp"))
    assert [m.key for m in B.select_checked(full)] == [m.key for m in full.main]
    picked = analyze_run(load_run(DATA / "jax_mlp"), ["jit_sqrt"])
    [m] = B.select_checked(picked, selected=True)
    assert m.trivial and m.name == "jit_sqrt"


def test_select_checked_without_after_dump_is_a_usage_error(tmp_path: Path) -> None:
    src = dump_file("jax_mlp", "module_0030.jit_mlp.before_optimizations.txt")
    (tmp_path / src.name).write_text(src.read_text())
    with pytest.raises(UsageError, match="no non-trivial module has an after-optimization"):
        B.select_checked(analyze_run(load_run(tmp_path)))
