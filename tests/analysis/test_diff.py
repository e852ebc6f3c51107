"""Run diffs: every kind of kernel change on hand-written module pairs, module matching,
timings, the CI guards, and real dumps (a run against itself, a real fusion pass off)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hloscope.analysis import diff as D
from hloscope.analysis import match as M
from hloscope.analysis.fusion import analyze_module
from hloscope.analysis.provenance import ALONE, FUSED, trace
from hloscope.analysis.report import ModuleReport, analyze_run
from hloscope.errors import UsageError
from hloscope.hlo.parser import parse_module
from hloscope.inspection import inspect_run
from hloscope.runs import load_run
from tests.conftest import DATA, dump_file

# ---------------------------------------------------------------------------------------
# Hand-written modules: `relu(x @ w + b)`-like chains, `dot -> add(b) -> mul -> tanh ->
# exp`, with the elementwise part grouped into kernels as each test says.

_STEP = {
    "add": ("add({x}, {b})", "add"),
    "mul": ("multiply({x}, {x})", "mul"),
    "tanh": ("tanh({x})", "tanh"),
    "exp": ("exponential({x})", "exp"),
}
_T = "f32[64,64]{1,0}"

BEFORE = f"""HloModule jit_f

ENTRY %main (x: f32[64,64], w: f32[64,64], b: f32[64]) -> f32[64,64] {{
  %x = {_T} parameter(0)
  %w = {_T} parameter(1)
  %b = f32[64]{{0}} parameter(2)
  %dot = {_T} dot(%x, %w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}, metadata={{op_name="jit(f)/dot_general"}}
  %bb = {_T} broadcast(%b), dimensions={{1}}, metadata={{op_name="jit(f)/add"}}
  %add = {_T} add(%dot, %bb), metadata={{op_name="jit(f)/add"}}
  %mul = {_T} multiply(%add, %add), metadata={{op_name="jit(f)/mul"}}
  %tanh = {_T} tanh(%mul), metadata={{op_name="jit(f)/tanh"}}
  ROOT %exp = {_T} exponential(%tanh), metadata={{op_name="jit(f)/exp"}}
}}
"""


def after(kernels: list[tuple[str, list[str]]], *, fn: str = "f", prefix: str = "k") -> str:
    """An after-optimization module: the dot alone, then one kernel per `(kind, ops)`.

    `kind` is a fusion kind (`kLoop`, `kInput`) or `unfused` (one op on its own).
    """
    comps: list[str] = []
    entry = [
        f"  %x = {_T} parameter(0)",
        f"  %w = {_T} parameter(1)",
        "  %b = f32[64]{0} parameter(2)",
        f"  %dot = {_T} dot(%x, %w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}, "
        f'metadata={{op_name="jit({fn})/dot_general"}}',
    ]
    prev = "%dot"
    for i, (kind, ops) in enumerate(kernels):
        name = f"%{prefix}{i}"
        if kind == "unfused":
            (op,) = ops
            text, meta = _STEP[op]
            entry.append(
                f"  {name} = {_T} {text.format(x=prev, b='%b')}, "
                f'metadata={{op_name="jit({fn})/{meta}"}}'
            )
        else:
            body = [f"  %p0.{i} = {_T} parameter(0)"]
            params = f"p0.{i}: f32[64,64]"
            cur = f"%p0.{i}"
            if "add" in ops:
                body.append(f"  %p1.{i} = f32[64]{{0}} parameter(1)")
                body.append(
                    f"  %bb.{i} = {_T} broadcast(%p1.{i}), dimensions={{1}}, "
                    f'metadata={{op_name="jit({fn})/add"}}'
                )
                params += f", p1.{i}: f32[64]"
            for j, op in enumerate(ops):
                text, meta = _STEP[op]
                out = f"%{op}.{i}.{j}"
                root = "ROOT " if j == len(ops) - 1 else ""
                body.append(
                    f"  {root}{out} = {_T} {text.format(x=cur, b=f'%bb.{i}')}, "
                    f'metadata={{op_name="jit({fn})/{meta}"}}'
                )
                cur = out
            comps.append(f"%fused_{i} ({params}) -> f32[64,64] {{\n" + "\n".join(body) + "\n}\n")
            operands = prev + (", %b" if "add" in ops else "")
            entry.append(f"  {name} = {_T} fusion({operands}), kind={kind}, calls=%fused_{i}")
        prev = name
    entry[-1] = entry[-1].replace(f"  {prev} =", f"  ROOT {prev} =")
    return (
        f"HloModule jit_{fn}, is_scheduled=true\n\n"
        + "\n".join(comps)
        + "\nENTRY %main (x: f32[64,64], w: f32[64,64], b: f32[64]) -> f32[64,64] {\n"
        + "\n".join(entry)
        + "\n}\n"
    )


def report(
    after_text: str, *, key: str = "0001.jit_f", before: str | None = BEFORE
) -> ModuleReport:
    fn = key.split(".", 1)[1].removeprefix("jit_").split(".")[0]
    before = before.replace("jit(f)", f"jit({fn})") if before is not None else None
    am = parse_module(after_text)
    bm = parse_module(before) if before is not None else None
    analysis = analyze_module(am)
    return ModuleReport(
        key=key,
        name=key.split(".", 1)[1],
        module_id=key.split(".", 1)[0],
        platform="cpu",
        trivial=False,
        before=analyze_module(bm) if bm is not None else None,
        after=analysis,
        provenance=trace(am, analysis, bm),
    )


FUSED_ALL = [("kLoop", ["add", "mul", "tanh", "exp"])]


def _diff(a: list[tuple[str, list[str]]], b: list[tuple[str, list[str]]], **kw) -> D.ModuleDiff:
    return D.diff_modules(report(after(a)), report(after(b, prefix="renamed")), **kw)


def _only_change(d: D.ModuleDiff) -> D.KernelChange:
    changed = d.changed_kernels
    assert len(changed) == 1, changed
    return changed[0]


# ---------------------------------------------------------------------------------------
# Each kind of kernel change


def test_same_kernels_under_new_names_are_no_change() -> None:
    d = _diff(FUSED_ALL, FUSED_ALL)
    assert not d.changed and not d.changed_kernels and not d.ops
    assert [k.change for k in d.kernels] == [D.SAME, D.SAME]
    assert {(k.a[0].name, k.b[0].name) for k in d.kernels} == {
        ("dot", "dot"),
        ("k0", "renamed0"),
    }


def test_split_one_kernel_into_several() -> None:
    d = _diff(FUSED_ALL, [("kLoop", ["add", "mul"]), ("kLoop", ["tanh", "exp"])])
    k = _only_change(d)
    assert k.change == D.SPLIT
    assert [r.name for r in k.a] == ["k0"]
    assert [r.name for r in k.b] == ["renamed0", "renamed1"]
    assert set(k.source_ops) == {"jit(f)/add", "jit(f)/mul", "jit(f)/tanh", "jit(f)/exp"}
    assert k.bytes_b > k.bytes_a  # the intermediate goes through memory now
    assert d.metric(D.KERNELS).delta == 1
    assert d.kinds == (("unfused:dot", 1, 1), ("kLoop", 1, 2))


def test_merge_several_kernels_into_one() -> None:
    d = _diff([("kLoop", ["add", "mul"]), ("kLoop", ["tanh", "exp"])], FUSED_ALL)
    k = _only_change(d)
    assert k.change == D.MERGED
    assert len(k.a) == 2 and len(k.b) == 1
    assert d.metric(D.KERNELS).delta == -1
    assert d.metric(D.OPS_PER_KERNEL).delta is not None and d.metric(D.OPS_PER_KERNEL).delta > 0


def test_regroup_several_into_several() -> None:
    d = _diff(
        [("kLoop", ["add", "mul"]), ("kLoop", ["tanh", "exp"])],
        [("kLoop", ["add"]), ("kLoop", ["mul", "tanh"]), ("kLoop", ["exp"])],
    )
    k = _only_change(d)
    assert k.change == D.REGROUPED and (len(k.a), len(k.b)) == (2, 3)


def test_kernel_appears_and_disappears() -> None:
    without_exp = BEFORE.replace("%tanh = ", "ROOT %tanh = ").replace(
        '  ROOT %exp = f32[64,64]{1,0} exponential(%tanh), metadata={op_name="jit(f)/exp"}\n', ""
    )
    a = report(after([("kLoop", ["add", "mul", "tanh"])]), before=without_exp)
    b = report(after([("kLoop", ["add", "mul", "tanh"]), ("unfused", ["exp"])]))
    d = D.diff_modules(a, b)
    k = _only_change(d)
    assert k.change == D.APPEARED and not k.a and [r.name for r in k.b] == ["k1"]
    assert k.b[0].kind == "unfused:exponential"
    assert k.source_ops == ("jit(f)/exp",)
    [op] = d.ops
    assert (op.op, op.status_a, op.status_b) == ("jit(f)/exp", None, ALONE)

    back = D.diff_modules(b, a)
    k = _only_change(back)
    assert k.change == D.DISAPPEARED and [r.name for r in k.a] == ["k1"] and not k.b
    assert k.impact == k.bytes_a > 0


def test_kind_change() -> None:
    d = _diff(FUSED_ALL, [("kInput", ["add", "mul", "tanh", "exp"])])
    k = _only_change(d)
    assert k.change == D.KIND_CHANGED
    assert (k.a[0].kind, k.b[0].kind) == ("kLoop", "kInput")
    assert not d.ops  # every op still shares its kernel
    assert dict((kind, (x, y)) for kind, x, y in d.kinds)["kInput"] == (0, 1)


def test_op_that_stops_fusing_runs_alone() -> None:
    d = _diff(FUSED_ALL, [("kLoop", ["add", "mul", "tanh"]), ("unfused", ["exp"])])
    k = _only_change(d)
    assert k.change == D.SPLIT
    assert [r.kind for r in k.b] == ["kLoop", "unfused:exponential"]
    [op] = d.ops
    assert (op.op, op.status_a, op.status_b, op.kernels_b) == (
        "jit(f)/exp",
        FUSED,
        ALONE,
        ("renamed1",),
    )
    assert op.unfused and not op.fused
    assert d.metric(D.ALONE_OPS).delta == 1
    # and the reverse: it fuses again
    back = _diff([("kLoop", ["add", "mul", "tanh"]), ("unfused", ["exp"])], FUSED_ALL)
    [op] = back.ops
    assert op.fused and (op.status_a, op.status_b) == (ALONE, FUSED)


def test_ops_changed_when_one_op_leaves_a_kernel() -> None:
    d = _diff(FUSED_ALL, [("kLoop", ["add", "mul", "tanh"])])
    k = _only_change(d)
    assert k.change == D.OPS_CHANGED
    assert k.ops_only_a == ("jit(f)/exp",) and k.ops_only_b == ()


def test_changes_are_ordered_by_bytes_without_timings() -> None:
    d = _diff(
        FUSED_ALL,
        [("kLoop", ["add"]), ("kLoop", ["mul"]), ("kLoop", ["tanh"]), ("kLoop", ["exp"])],
    )
    impacts = [k.impact for k in d.kernels]
    assert impacts[0] == max(impacts) and d.kernels[0].changed


def test_kernels_without_source_ops_pair_by_what_they_compute() -> None:
    no_meta = after(FUSED_ALL).replace(', metadata={op_name="jit(f)/dot_general"}', "")
    d = D.diff_modules(report(no_meta), report(no_meta.replace("%dot", "%dot.9")))
    assert not d.changed_kernels
    assert [k.a[0].name for k in d.kernels if not k.source_ops] == ["dot"]


def test_outer_jit_name_is_ignored_when_matching_ops() -> None:
    a = report(after(FUSED_ALL, fn="f"))
    b = report(after(FUSED_ALL, fn="g"), key="0002.jit_g")
    d = D.diff_modules(a, b)
    assert not d.changed_kernels and not d.ops


# ---------------------------------------------------------------------------------------
# Timings


@pytest.mark.parametrize(
    "name",
    [
        "jit(f)/add",
        "pjit(g)/while/body/mul",
        "jit(f)",
        "jit()/a",
        "jit(/a",
        "jit(a)b)/c",
        "jit(a/b)/c",
        "xjit(f)/a",
        "jit(f)//",
        "jit(f)\n)/x",
        "",
        "/",
        "pjit(",
    ],
)
def test_op_name_key_drops_the_outer_jit_as_its_pattern_does(name: str) -> None:
    """`op_name_key` is written without a regular expression; this one is its oracle."""
    assert M.op_name_key(name) == re.sub(r"^p?jit\([^/]*\)/", "", name)


@pytest.mark.parametrize("name", ["jax_mlp", "jax_transformer_block"])
def test_a_module_diffed_with_itself_is_diffed_as_with_its_copy(name: str) -> None:
    """A module diffed with the same report (`hloscope diff RUN RUN` reads it once) is
    matched once for both sides: the result is that of two equal reports."""
    a, b = (analyze_run(load_run(DATA / name)) for _ in range(2))
    assert a.modules[0] is not b.modules[0]
    for x, y in zip(a.modules, b.modules, strict=True):
        assert D.diff_modules(x, x) == D.diff_modules(x, y)
    assert D.diff_runs(a, a) == D.diff_runs(a, b)


def test_timings_order_changes_and_give_time_deltas() -> None:
    a = {"dot": 100.0, "k0": 10.0}
    b = {"dot": 130.0, "renamed0": 4.0, "renamed1": 3.0, "renamed2": 3.0, "renamed3": 2.0}
    d = _diff(
        FUSED_ALL,
        [("kLoop", ["add"]), ("kLoop", ["mul"]), ("kLoop", ["tanh"]), ("kLoop", ["exp"])],
        time_a=a,
        time_b=b,
    )
    assert d.profiled
    split = _only_change(d)
    assert (split.time_a, split.time_b, split.time_delta) == (10.0, 12.0, 2.0)
    dot = next(k for k in d.kernels if not k.changed)
    assert dot.time_delta == 30.0 and dot.impact == 30.0
    t = d.metric(D.TIME_US)
    assert (t.a, t.b) == (110.0, 142.0)
    # one side without a profile: no times at all
    half = _diff(FUSED_ALL, FUSED_ALL, time_a=a)
    assert not half.profiled and half.metric(D.TIME_US).a is None
    assert all(r.time_us is None for k in half.kernels for r in (*k.a, *k.b))


@pytest.mark.parametrize(
    ("key", "name", "expected"),
    [
        ("0030.jit_mlp", "jit_mlp", "by key"),
        ("0003.jit_f", "jit_f", "program 3"),  # before the bare name, which is program 1's
        ("0007.jit_f", "jit_f", "program 1"),  # no such program: the bare name
        ("0009.jit_g.1", "jit_g.1", "normalised"),  # another compile of jit_g
        ("0009.jit_h", "jit_h", None),
    ],
)
def test_kernel_times_for_joins_a_module_to_its_profile(
    key: str, name: str, expected: str | None
) -> None:
    times = {
        "0030.jit_mlp": {"by key": 1.0},
        "jit_mlp": {"by name": 1.0},
        "jit_f(1)": {"program 1": 1.0},
        "jit_f(3)": {"program 3": 1.0},
        "jit_f": {"program 1": 1.0},  # a name shared by two programs: not to be trusted
        "jit_g": {"normalised": 1.0},
    }
    found = M.kernel_times_for(times, key, name)
    assert (None if found is None else next(iter(found))) == expected
    assert M.kernel_times_for(None, key, name) is None
    assert M.kernel_times_for({}, key, name) is None


def test_two_profiled_compiles_of_one_name_are_ambiguous() -> None:
    times = {"jit_f.1": {"a": 1.0}, "jit_f.2": {"b": 1.0}}
    assert M.kernel_times_for(times, "0001.jit_f", "jit_f") is None


# ---------------------------------------------------------------------------------------
# Modules


@pytest.mark.parametrize(
    ("name", "normal"),
    [
        ("jit_mlp", "jit_mlp"),
        ("jit_mlp.1", "jit_mlp"),
        (
            "a_inference_dense_relu_12__XlaMustCompile_true_config_proto_13561319589895757934"
            "_executor_type_11160318154034397263_.1",
            "a_inference_dense_relu",
        ),
        ("a_inference_f_7__XlaMustCompile_false_config_proto_1_executor_type_2_", "a_inference_f"),
        ("cluster_3", "cluster_3"),
    ],
)
def test_normalise_module_name(name: str, normal: str) -> None:
    assert M.normalise_module_name(name) == normal


def test_modules_match_by_name_then_by_structure() -> None:
    f = report(after(FUSED_ALL))
    g = report(after(FUSED_ALL, fn="g"), key="0009.jit_g")
    other = report(
        after([("kLoop", ["add"])]).replace("HloModule jit_f", "HloModule jit_h"),
        key="0003.jit_h",
        before=None,
    )
    f2 = report(after(FUSED_ALL), key="0011.jit_f.1")
    pairs, only_a, only_b = M.match_modules([f, other], [g, f2])
    assert [(x.key, y.key, how) for x, y, how in pairs] == [("0001.jit_f", "0011.jit_f.1", "name")]
    assert [m.key for m in only_a] == ["0003.jit_h"] and [m.key for m in only_b] == ["0009.jit_g"]

    pairs, only_a, only_b = M.match_modules([f], [g])
    assert [(x.key, y.key, how) for x, y, how in pairs] == [
        ("0001.jit_f", "0009.jit_g", "structure")
    ]
    assert not only_a and not only_b
    # renamed and compiled worse: still the same program, so still a pair
    worse = report(
        after([("kLoop", ["add"]), ("unfused", ["mul"]), ("kLoop", ["tanh", "exp"])], fn="g"),
        key="0009.jit_g",
    )
    [(_, _, how)], _, _ = M.match_modules([f], [worse])
    assert how == "structure"
    assert _only_change(D.diff_modules(f, worse)).change == D.SPLIT


def _pair_diff() -> D.RunDiff:
    f = report(after(FUSED_ALL))
    h = report(after([("kLoop", ["add", "mul"]), ("kLoop", ["tanh", "exp"])]), key="0030.jit_f")
    g = report(after(FUSED_ALL, fn="g"), key="0007.jit_g")
    runs = analyze_run(load_run(DATA / "tf_dense_relu"))
    return D.RunDiff(runs, runs, (D.diff_modules(f, g), D.diff_modules(h, h)))


@pytest.mark.parametrize(
    ("patterns", "labels"),
    [
        (["0001.jit_f"], ["0001.jit_f -> 0007.jit_g"]),  # A's key
        (["jit_g"], ["0001.jit_f -> 0007.jit_g"]),  # B's name
        (["7"], ["0001.jit_f -> 0007.jit_g"]),  # B's module number
        (["30"], ["0030.jit_f"]),  # a number, and part of a key
        (["jit_f"], ["0001.jit_f -> 0007.jit_g", "0030.jit_f"]),  # in both keys
        (["0030", "jit_f"], ["0030.jit_f", "0001.jit_f -> 0007.jit_g"]),  # each once
        ([], []),
    ],
)
def test_select_diffs_picks_modules_by_pattern(patterns: list[str], labels: list[str]) -> None:
    assert [d.label for d in D.select_diffs(_pair_diff(), patterns)] == labels


def test_select_diffs_names_what_matched_when_nothing_does() -> None:
    with pytest.raises(UsageError) as e:
        D.select_diffs(_pair_diff(), ["jit_f", "nope"])
    assert str(e.value) == (
        "no module of both runs matches 'nope'; matched: 0001.jit_f -> 0007.jit_g, 0030.jit_f"
    )


# ---------------------------------------------------------------------------------------
# CI guards


def test_regressions_respect_tolerance_and_direction() -> None:
    worse = _diff(FUSED_ALL, [("kLoop", ["add", "mul"]), ("kLoop", ["tanh", "exp"])])
    found = D.regressions([worse], 0.05)
    assert {v.metric for v in found} == {"kernels", "launches", "ops_per_kernel"}
    kernels = next(v for v in found if v.metric == "kernels")
    assert (kernels.limit, kernels.value) == (2, 3)
    assert kernels.message == "0001.jit_f: kernels 2 (A) -> 3 (B) (+50.0%, tolerance 5%)"
    assert D.regressions([worse], 0.6) == ()  # +50% is within 60%
    better = _diff([("kLoop", ["add", "mul"]), ("kLoop", ["tanh", "exp"])], FUSED_ALL)
    assert D.regressions([better]) == ()
    slower = _diff(FUSED_ALL, FUSED_ALL, time_a={"k0": 10.0}, time_b={"renamed0": 11.0})
    assert [v.metric for v in D.regressions([slower], 0.05)] == ["time_us"]
    assert D.regressions([slower], 0.2) == ()


@pytest.mark.parametrize(
    ("text", "value"), [("5%", 0.05), ("5", 0.05), (" 0.5 % ", 0.005), ("0", 0.0)]
)
def test_parse_tolerance(text: str, value: float) -> None:
    assert D.parse_tolerance(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["-1%", "five", "", "nan"])
def test_parse_tolerance_rejects_nonsense(text: str) -> None:
    with pytest.raises(UsageError, match="percentage"):
        D.parse_tolerance(text)


# ---------------------------------------------------------------------------------------
# Real dumps


@pytest.mark.parametrize("folder", ["jax_mlp", "tf_dense_relu"])
def test_a_run_against_itself_reports_no_change(folder: str) -> None:
    r = analyze_run(load_run(DATA / folder))
    d = D.diff_runs(r, r)
    assert not d.changed and not d.only_a and not d.only_b
    assert len(d.modules) == len(r.modules)
    assert all(not m.changed_kernels and not m.ops for m in d.modules)
    assert D.regressions(d.modules) == ()


def test_runs_are_diffed_with_the_collector_paused_and_left_as_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A big diff's millions of objects hold no cycle: the collector walked them for 2 of
    # a 260 MB pair's 4.6 s (issue 27)
    import gc

    seen: list[bool] = []
    diff_modules = D.diff_modules

    def recorded(*args: object, **kwargs: object) -> D.ModuleDiff:
        seen.append(gc.isenabled())
        return diff_modules(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(D, "diff_modules", recorded)
    r = analyze_run(load_run(DATA / "jax_mlp"))
    was = gc.isenabled()
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            seen.clear()
            assert D.diff_runs(r, r).modules
            assert seen and not any(seen)
            assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_same_program_dumped_by_two_tools_matches_by_name() -> None:
    # tf_dense_relu_profile was dumped by another process: same module, new hash suffix
    d = D.diff_runs(
        analyze_run(load_run(DATA / "tf_dense_relu")),
        analyze_run(load_run(DATA / "tf_dense_relu_profile")),
    )
    [m] = d.modules
    assert m.matched_by == "name" and not m.changed


def test_profiled_run_against_itself() -> None:
    inspection = inspect_run(DATA / "jax_mlp_profile")
    times = inspection.all_kernel_times()
    r = inspection.report
    d = D.diff_runs(r, r, timings_a=times, timings_b=times)
    [mlp] = d.main
    assert mlp.profiled and mlp.metric(D.TIME_US).a == mlp.metric(D.TIME_US).b > 0
    assert D.regressions(d.main) == ()


def xla_entry_fusions(path: Path) -> list[str]:
    """Names of the fusion instructions of a module's entry computation, as XLA's own
    parser reads the file (on XLA:CPU after optimization every kernel is one)."""
    hlo = pytest.importorskip("jaxlib._hlo")
    module = hlo.hlo_module_from_text(path.read_text())
    entry = re.search(r"^ENTRY %?([\w.\-]+)", module.to_string(), re.M)
    assert entry is not None
    [comp] = [c for c in module.computations() if c.name == entry[1]]
    return [i.name for i in comp.instructions() if str(i.opcode).endswith("kFusion")]


def xla_instructions(path: Path) -> int:
    """Instructions of all computations, as XLA's own parser reads the file."""
    hlo = pytest.importorskip("jaxlib._hlo")
    module = hlo.hlo_module_from_text(path.read_text())
    return sum(len(c.instructions()) for c in module.computations())


REGRESSION = ("jax_mlp", "jax_mlp_no_fusion_pass")


def test_stored_fusion_pass_off_dump_is_a_regression() -> None:
    a, b = (analyze_run(load_run(DATA / f)) for f in REGRESSION)
    d = D.diff_runs(a, b)
    [mlp] = d.modules  # B holds only the model; A's helper modules have no counterpart
    assert mlp.matched_by == "name" and mlp.label == "0030.jit_mlp"
    assert len(d.only_a) == len(a.modules) - 1 and not d.only_b
    after_a, after_b = (dump_file(f, "module_0030.*after_optimizations.txt") for f in REGRESSION)
    fusions_a, fusions_b = xla_entry_fusions(after_a), xla_entry_fusions(after_b)
    assert (mlp.metric(D.KERNELS).a, mlp.metric(D.KERNELS).b) == (len(fusions_a), len(fusions_b))
    assert (len(fusions_a), len(fusions_b)) == (11, 52)
    instructions = mlp.metric(D.INSTRUCTIONS)
    assert (instructions.a, instructions.b) == (
        xla_instructions(after_a),
        xla_instructions(after_b),
    )
    # every kernel of either side is in exactly one group
    assert sorted(r.name for k in mlp.kernels for r in k.a) == sorted(fusions_a)
    assert sorted(r.name for k in mlp.kernels for r in k.b) == sorted(fusions_b)
    splits = [k for k in mlp.changed_kernels if k.change == D.SPLIT]
    assert [(len(k.a), len(k.b)) for k in splits] == [(1, 11)] * 3
    for layer, k in zip(("layer0", "layer1", "layer2"), splits, strict=True):
        assert {o.rsplit("/", 1)[0] for o in k.source_ops} == {f"jit(mlp)/{layer}"}
    dots = [k for k in mlp.kernels if any(o.endswith("dot_general") for o in k.source_ops)]
    assert len(dots) == 4 and all(k.change == D.SAME for k in dots)
    assert {v.metric for v in D.regressions(d.main, 0.05)} == {
        "kernels",
        "launches",
        "ops_per_kernel",
    }


def _dump_pair(tmp: Path) -> tuple[Path, Path]:
    """jax_mlp dumped twice, the second time with XLA:CPU's fusion pass disabled."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    runs = (tmp / "fused", tmp / "unfused")
    procs = []
    for out, flags in zip(runs, ("", "--xla_disable_hlo_passes=fusion"), strict=True):
        env = {**os.environ, "XLA_FLAGS": flags, "JAX_PLATFORMS": "cpu"}
        cmd = [sys.executable, "-m", "hloscope", "dump", "samples/jax_mlp.py", "-o", str(out)]
        cmd += ["--", "--depth", "1", "--calls", "1"]
        procs.append(
            subprocess.Popen(
                cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
            )
        )
    for p in procs:
        out_text, _ = p.communicate(timeout=240)
        assert p.returncode == 0, out_text.decode(errors="replace")[-2000:]
    return runs


@pytest.fixture(scope="module")
def fusion_pass_off(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    pytest.importorskip("jax")
    return _dump_pair(tmp_path_factory.mktemp("flags"))


@pytest.mark.jax
@pytest.mark.slow
def test_disabling_the_cpu_fusion_pass_splits_the_gelu_kernel(
    fusion_pass_off: tuple[Path, Path],
) -> None:
    a, b = (analyze_run(load_run(p)) for p in fusion_pass_off)
    d = D.diff_runs(a, b)
    [mlp] = [m for m in d.main if m.a.name == "jit_mlp"]
    assert mlp.metric(D.KERNELS).delta and mlp.metric(D.KERNELS).delta > 0
    splits = [k for k in mlp.changed_kernels if k.change == D.SPLIT]
    layer0 = [k for k in splits if any("layer0/tanh" in o for o in k.source_ops)]
    assert len(layer0) == 1 and len(layer0[0].a) == 1 and len(layer0[0].b) > 4
    assert any(k.ops == ("tanh",) for k in layer0[0].b)  # tanh is a kernel of its own
    unfused = {o.op for o in mlp.ops if o.unfused}
    assert "jit(mlp)/layer0/tanh" in unfused
    # the dots (library calls, not made by the fusion pass) did not change
    dots = [k for k in mlp.kernels if any(o.endswith("dot_general") for o in k.source_ops)]
    assert dots and all(k.change == D.SAME for k in dots)
    assert {v.metric for v in D.regressions(d.main, 0.05)} >= {"kernels", "launches"}


def _two_layers(split_first: bool) -> str:
    """Two layers whose ops share JAX names (`jit(f)/add`, `jit(f)/mul`) but not lines."""

    def md(op: str, line: int) -> str:
        return f'metadata={{op_name="jit(f)/{op}" source_file="/m/model.py" source_line={line}}}'

    def fused(name: str, ops: list[tuple[str, int]]) -> str:
        body, cur = [f"  %{name}.p = {_T} parameter(0)"], f"%{name}.p"
        for j, (op, line) in enumerate(ops):
            root = "ROOT " if j == len(ops) - 1 else ""
            text = f"add({cur}, {cur})" if op == "add" else f"multiply({cur}, {cur})"
            body.append(f"  {root}%{name}.{j} = {_T} {text}, {md(op, line)}")
            cur = f"%{name}.{j}"
        return f"%{name} ({name}.p: f32[64,64]) -> f32[64,64] {{\n" + "\n".join(body) + "\n}\n"

    layer1 = [[("add", 10)], [("mul", 11)]] if split_first else [[("add", 10), ("mul", 11)]]
    kernels = [*layer1, [("add", 20), ("mul", 21)]]
    comps = [fused(f"c{i}", ops) for i, ops in enumerate(kernels)]
    entry, prev = [f"  %x = {_T} parameter(0)"], "%x"
    for i in range(len(kernels)):
        root = "ROOT " if i == len(kernels) - 1 else ""
        entry.append(f"  {root}%f{i} = {_T} fusion({prev}), kind=kLoop, calls=%c{i}")
        prev = f"%f{i}"
    return (
        "HloModule jit_f, is_scheduled=true\n\n"
        + "\n".join(comps)
        + "\nENTRY %main (x: f32[64,64]) -> f32[64,64] {\n"
        + "\n".join(entry)
        + "\n}\n"
    )


def test_ops_of_one_name_on_different_lines_stay_apart() -> None:
    a = report(_two_layers(split_first=False), before=None)
    b = report(_two_layers(split_first=True), before=None)
    d = D.diff_modules(a, b)
    k = _only_change(d)
    assert k.change == D.SPLIT
    assert [r.name for r in k.a] == ["f0"] and [r.name for r in k.b] == ["f0", "f1"]
    [same] = [x for x in d.kernels if not x.changed]
    assert (same.a[0].name, same.b[0].name) == ("f1", "f2")  # layer 2, renamed
