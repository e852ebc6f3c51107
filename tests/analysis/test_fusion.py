"""Kernel and launch counting: every walk rule on hand-written HLO, real dumps, the corpus."""

from __future__ import annotations

import json
import re

import pytest

from hloscope.analysis import kernels as K
from hloscope.analysis.fusion import analyze_module, entered, walk
from hloscope.errors import HloscopeError
from hloscope.hlo.model import Computation, HloModule
from hloscope.hlo.parser import parse_file, parse_module
from hloscope.hlo.text import split_modules
from tests.conftest import CORPUS, DATA, dump_file

HEADER = """HloModule m, is_scheduled=true

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%fused_exp (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  ROOT %e = f32[8]{0} exponential(%p)
}
"""


def _analyze(body: str, extra: str = ""):
    return analyze_module(parse_module(HEADER + extra + body))


WHILE = """
%cond (c: (s32[], f32[8])) -> pred[] {
  %c = (s32[], f32[8]{0}) parameter(0)
  %i = s32[] get-tuple-element(%c), index=0
  %n = s32[] constant(5)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%body (t: (s32[], f32[8])) -> (s32[], f32[8]) {
  %t = (s32[], f32[8]{0}) parameter(0)
  %i.1 = s32[] get-tuple-element(%t), index=0
  %v = f32[8]{0} get-tuple-element(%t), index=1
  %one = s32[] constant(1)
  %next = s32[] add(%i.1, %one)
  %f = f32[8]{0} fusion(%v), kind=kLoop, calls=%fused_exp
  %cp = f32[8]{0} copy(%f)
  ROOT %r = (s32[], f32[8]{0}) tuple(%next, %cp)
}
"""


@pytest.mark.parametrize(
    ("config", "trips", "exact"),
    [(', backend_config={"known_trip_count":{"n":"5"}}', 5, True), ("", None, False)],
)
def test_while_runs_body_n_times_and_never_the_known_condition(
    config: str, trips: int | None, exact: bool
) -> None:
    """XLA's WhileThunk runs the body N times and skips the condition when the trip count
    is known; without one it evaluates the condition, and one trip is assumed."""
    a = _analyze(
        """
ENTRY %main (x: (s32[], f32[8])) -> (s32[], f32[8]) {
  %x = (s32[], f32[8]{0}) parameter(0)
  %w = (s32[], f32[8]{0}) while(%x), condition=%cond, body=%body"""
        + config
        + """
  ROOT %out = (s32[], f32[8]{0}) copy(%w)
}
""",
        WHILE,
    )
    names = [k.name for k in a.kernels]
    assert a.loops[0].trip_count == trips
    assert a.launches_exact is exact
    by = {k.name: k.launches for k in a.kernels}
    if trips is None:
        # kernels: compare (cond), add, fusion, copy (body), copy (entry)
        assert names == ["lt", "next", "f", "cp", "out"]
        assert by["f"] is None and a.launches == 5  # one trip each, flagged inexact
    else:
        assert names == ["next", "f", "cp", "out"]  # the condition never launches
        assert by["f"] == trips and by["out"] == 1
        assert a.launches == 3 * trips + 1


def test_conditional_branches_are_reported_and_costliest_counted() -> None:
    a = _analyze(
        """
%yes (y: f32[8]) -> f32[8] {
  %y = f32[8]{0} parameter(0)
  %y1 = f32[8]{0} negate(%y)
  ROOT %y2 = f32[8]{0} fusion(%y1), kind=kLoop, calls=%fused_exp
}

%no (z: f32[8]) -> f32[8] {
  %z = f32[8]{0} parameter(0)
  ROOT %z1 = f32[8]{0} copy(%z)
}

ENTRY %main (p0: pred[], x: f32[8]) -> f32[8] {
  %p0 = pred[] parameter(0)
  %x = f32[8]{0} parameter(1)
  ROOT %c = f32[8]{0} conditional(%p0, %x, %x), true_computation=%yes, false_computation=%no
}
"""
    )
    assert [(b.index, b.computation, b.launches) for b in a.branches] == [
        (0, "yes", 2),
        (1, "no", 1),
    ]
    assert a.launches == 2 and not a.launches_exact
    assert {k.name: k.branch for k in a.kernels} == {"y1": "c:0", "y2": "c:0", "z1": "c:1"}


def test_async_pairs_count_once_under_the_wrapped_name() -> None:
    a = _analyze(
        """
%wrapped (w: f32[8]) -> f32[8] {
  %w = f32[8]{0} parameter(0)
  ROOT %cc = f32[8]{0} custom-call(%w), custom_call_target="__cublas$gemm"
}

ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8]{0} parameter(0)
  %ars = f32[8]{0} all-reduce-start(%x), replica_groups={}, to_apply=%add
  %ard = f32[8]{0} all-reduce-done(%ars)
  %st = ((f32[8]{0}), f32[8]{0}, s32[]) async-start(%ard), calls=%wrapped
  %up = ((f32[8]{0}), f32[8]{0}, s32[]) async-update(%st)
  %dn = f32[8]{0} async-done(%up)
  %cs = (f32[8]{0}, f32[8]{0}, u32[]) copy-start(%dn)
  ROOT %cd = f32[8]{0} copy-done(%cs)
}
"""
    )
    # the async-start is the kernel; the runtime reports it under the wrapped call's name
    assert [(k.name, k.kind, k.hlo_ops) for k in a.kernels] == [
        ("ars", "all-reduce", ("ars",)),
        ("st", "custom-call:__cublas$gemm", ("cc",)),
        ("cs", "unfused:copy-start", ("cs",)),
    ]
    assert a.kernels[1].library and [i.name for i in a.kernels[1].ops] == ["cc"]
    assert a.launches == 3


def test_nested_and_multi_output_fusions_are_one_kernel_each() -> None:
    a = _analyze(
        """
%inner (q: f32[8]) -> f32[8] {
  %q = f32[8]{0} parameter(0)
  ROOT %n = f32[8]{0} negate(%q)
}

%outer (r: f32[8]) -> (f32[8], f32[8]) {
  %r = f32[8]{0} parameter(0)
  %in = f32[8]{0} fusion(%r), kind=kLoop, calls=%inner
  %t = f32[8]{0} tanh(%in)
  ROOT %tu = (f32[8]{0}, f32[8]{0}) tuple(%in, %t)
}

ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8]{0} parameter(0)
  %mo = (f32[8]{0}, f32[8]{0}) fusion(%x), kind=kInput, calls=%outer
  %g0 = f32[8]{0} get-tuple-element(%mo), index=0
  %g1 = f32[8]{0} get-tuple-element(%mo), index=1
  ROOT %sum = f32[8]{0} add(%g0, %g1)
}
"""
    )
    kernels = {k.name: k for k in a.kernels}
    assert list(kernels) == ["mo", "sum"]
    assert kernels["mo"].kind == "kInput"
    assert [i.name for i in kernels["mo"].ops] == ["n", "t"]  # nested fusion expanded
    assert kernels["mo"].bytes_out == 64
    assert a.fusions == 1  # the nested one is inside a fused computation
    assert kernels["sum"].bytes_in == 64  # two f32[8] through get-tuple-element
    assert a.kernels_by_kind == {"kInput": 1, "unfused:add": 1}


def test_custom_calls_library_fusions_and_compile_time_markers() -> None:
    a = _analyze(
        """
ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8]{0} parameter(0)
  %sh = f32[8]{0} custom-call(%x), custom_call_target="Sharding", sharding={replicated}
  %lib = f32[8]{0} fusion(%sh), kind=kCustom, calls=%fused_exp, backend_config={"fusion_backend_config":{"kind":"__cudnn$fusion"}}
  %tri = f32[8]{0} fusion(%lib), kind=kCustom, calls=%fused_exp, backend_config={"fusion_backend_config":{"kind":"__triton_gemm"}}
  ROOT %one = f32[8]{0} custom-call(%tri), custom_call_target="__onednn$matmul"
}
"""
    )
    assert [(k.name, k.kind, k.library) for k in a.kernels] == [
        ("lib", "__cudnn$fusion", True),
        ("tri", "__triton_gemm", False),
        ("one", "custom-call:__onednn$matmul", True),
    ]


def test_call_is_inlined_and_free_instructions_are_not_kernels() -> None:
    a = _analyze(
        """
%callee (c: f32[8]) -> f32[8] {
  %c = f32[8]{0} parameter(0)
  %bc = f32[8]{0} bitcast(%c)
  ROOT %ex = f32[8]{0} exponential(%bc)
}

ENTRY %main (x: f32[8]) -> (f32[8], token[]) {
  %x = f32[8]{0} parameter(0)
  %k = f32[] constant(1)
  %call = f32[8]{0} call(%x), to_apply=%callee
  %tok = token[] after-all()
  %ob = f32[8]{0} opt-barrier(%call)
  ROOT %t = (f32[8]{0}, token[]) tuple(%ob, %tok)
}
"""
    )
    assert [k.name for k in a.kernels] == ["ex"]
    assert a.ops == 1 and a.launches == 1


def test_classification_table_is_consistent() -> None:
    assert not (K.FREE_OPCODES & K.CONTROL_OPCODES)
    assert not (K.FREE_OPCODES & K.COLLECTIVE_OPCODES)
    assert set(K.KERNEL_CLASSES) == {K.FUSION, K.CUSTOM_CALL, K.COLLECTIVE, K.UNFUSED}


# ---------------------------------------------------------------------------------------
# Real dumps: counts worked out by reading the dumped HLO (see each HOW.md).


def test_dense_relu_three_ops_become_a_dot_and_a_loop_fusion() -> None:
    before = analyze_module(parse_file(dump_file("tf_dense_relu", "*before_optimizations.txt")))
    after = analyze_module(parse_file(dump_file("tf_dense_relu", "*cpu_after_optimizations.txt")))
    # before: 2 argument reshapes, dot, transpose, bias reshape, broadcast, add,
    # relu's broadcast, maximum, the return reshape
    assert before.ops == 10
    assert [(k.name, k.kind) for k in after.kernels] == [
        ("MatMul.2", "unfused:dot"),
        ("broadcast_maximum_fusion", "kLoop"),
    ]
    assert after.launches == 2 and after.fusions == 1
    fused = {i.opcode for i in after.kernels[1].ops}
    assert fused == {"broadcast", "add", "constant", "maximum"}


def test_jax_mlp_counts() -> None:
    after = analyze_module(parse_file(dump_file("jax_mlp", "*jit_mlp.cpu_after_optimizations.txt")))
    # 4 dots as YNNPACK library fusions, bias+GELU x3 and softmax x4 as loop fusions
    assert after.kernels_by_kind == {"kLoop": 7, "__ynn_fusion": 4}
    assert after.launches == 11 and after.launches_exact


def test_resnet50_counts() -> None:
    after = analyze_module(parse_file(dump_file("tf_resnet50", "*cpu_after_optimizations.txt")))
    by = after.kernels_by_kind
    assert by["kLoop"] == 110 and by["kOutput"] == 1 and by["__ynn_fusion"] == 1
    assert by["unfused:convolution"] == 23 and by["unfused:dot"] == 30
    assert after.fusions == 112
    assert after.launches == after.kernel_count  # no loops: each kernel runs once


# ---------------------------------------------------------------------------------------
# The corpus: kernel counts equal an independent walk over XLA's own parse (jaxlib).

_CALLS = re.compile(
    r"\b(calls|to_apply|condition|body|branch_computations|true_computation|"
    r"false_computation)=(\{[^}]*\}|%?[\w.\-]+)"
)
_FREE = {"kParameter", "kConstant", "kTuple", "kGetTupleElement", "kBitcast", "kAfterAll",
         "kOptimizationBarrier", "kAddDependency", "kDomain", "kPartitionId", "kReplicaId",
         "kAllGatherDone", "kAllReduceDone", "kCollectivePermuteDone", "kCopyDone",
         "kSendDone", "kRecvDone", "kAsyncUpdate", "kAsyncDone"}  # fmt: skip
_MARKERS = ("Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape")


def _xla_kernel_count(text: str) -> tuple[int, int]:
    """Distinct kernels, and how many of them are fusions, walked over jaxlib's parse
    with XLA's printed instructions."""
    hlo = pytest.importorskip("jaxlib._hlo")
    module = hlo.hlo_module_from_text(text)
    comps = {c.name: c for c in module.computations()}
    entry_name = re.search(r"^ENTRY %?([\w.\-]+)", module.to_string(), re.M)
    assert entry_name, "XLA printed no ENTRY"
    entry = comps[entry_name.group(1)]
    seen: set[tuple[str, str]] = set()
    fusions: set[tuple[str, str]] = set()

    def visit(comp, depth: int = 0) -> None:
        for inst in comp.instructions():
            op = inst.opcode.name
            printed = inst.to_string()
            if op in ("kCall", "kWhile", "kConditional", "kAsyncStart"):
                for role, value in _CALLS.findall(printed):
                    if role == "condition" and "known_trip_count" in printed:
                        continue  # the runtime never runs it
                    for name in re.findall(r"[\w.\-]+", value):
                        if name in comps:
                            visit(comps[name], depth + 1)
                continue
            if op in _FREE or (op == "kCustomCall" and any(f'"{m}"' in printed for m in _MARKERS)):
                continue
            seen.add((comp.name, inst.name))
            if op == "kFusion":
                fusions.add((comp.name, inst.name))

    visit(entry)
    return len(seen), len(fusions)


def _corpus_modules() -> list[tuple[str, str]]:
    path = CORPUS / "MANIFEST.json"
    if not path.exists():
        return []
    out = []
    for entry in json.loads(path.read_text()):
        text = (CORPUS / entry["file"]).read_text()
        if entry["xla_parses"]:
            out.append((entry["file"], text))
        elif entry.get("split_input_file_chunks"):
            out += [(f"{entry['file']}@{line}", chunk) for line, chunk in split_modules(text)]
    return out


@pytest.mark.jax
@pytest.mark.skipif(not (CORPUS / "MANIFEST.json").exists(), reason="../shared/corpus absent")
@pytest.mark.parametrize(("name", "text"), _corpus_modules(), ids=lambda v: str(v)[:60])
def test_corpus_kernel_counts_match_walk_over_xla_parse(name: str, text: str) -> None:
    ours = analyze_module(parse_module(text))
    # fusions that launch: none in a loop condition the runtime skips
    assert (ours.kernel_count, ours.fusions) == _xla_kernel_count(text)


def _data_dumps() -> list[str]:
    """Every after-optimization text dump under tests/data."""
    return sorted(
        str(p.relative_to(DATA)) for p in DATA.rglob("*after_optimizations.txt") if p.is_file()
    )


@pytest.mark.jax
@pytest.mark.parametrize("name", _data_dumps())
def test_real_dumps_kernels_and_fusions_match_walk_over_xla_parse(name: str) -> None:
    """Fusions count only those that launch: JAX's `jit__normal` holds a fusion in a
    loop's condition, which the runtime never evaluates (known trip count)."""
    from hloscope.analysis.fusion import is_small_call

    module = parse_file(DATA / name)
    if any(is_small_call(i) for _, i in module.instructions()):
        pytest.skip("a CPU small call runs as one kernel; the plain walk enters it")
    ours = analyze_module(module)
    # partition-id and replica-id launch on the CPU (kernels.RUNTIMES); the walk skips them
    ids = sum(k.opcode in ("partition-id", "replica-id") for k in ours.kernels)
    assert (ours.kernel_count - ids, ours.fusions) == _xla_kernel_count((DATA / name).read_text())


@pytest.mark.parametrize("n", ["\u00b2", "9" * 5000, "-1", ""])
def test_trip_count_reads_only_plain_64_bit_counts(n: str) -> None:
    from hloscope.analysis.fusion import trip_count

    text = (
        "HloModule m\n\nc {\n  p = s32[] parameter(0)\n  ROOT t = pred[] constant(true)\n}\n\n"
        "b {\n  ROOT p = s32[] parameter(0)\n}\n\nENTRY e {\n  x = s32[] parameter(0)\n"
        f'  ROOT w = s32[] while(x), condition=c, body=b, backend_config={{"known_trip_count":{{"n":"{n}"}}}}\n'
        "}\n"
    )
    module = parse_module(text)
    assert trip_count(module.entry.root) is None


def test_collapse_orders_names_with_huge_numbers() -> None:
    from hloscope.analysis.collapse import _DIGITS

    assert _DIGITS.findall("layer_" + "7" * 5000)  # found in int()-sized pieces
    assert all(len(d) <= 18 for d in _DIGITS.findall("x" + "7" * 5000))


def _entered_by_walk(module: HloModule) -> tuple[list[tuple[str, str]], bool]:
    """From `walk` itself: each computation at its first instruction met, with that
    instruction's scope; and whether the walk met every instruction of each, in text
    order."""
    first: dict[str, str] = {}
    met: dict[str, list[str]] = {}
    for ex in walk(module):
        first.setdefault(ex.computation.name, ex.scope)
        met.setdefault(ex.computation.name, []).append(ex.instruction.name)
    whole = all(
        names == [i.name for i in module.computation_map[c].instructions]
        for c, names in met.items()
    )
    return list(first.items()), whole


def _texts_with_calls() -> list[tuple[str, str]]:
    """Modules that call computations (loops, branches, calls), from the test data and
    the corpus."""
    paths = sorted(p for p in DATA.rglob("*optimizations*.txt") if p.is_file())
    found = [(str(p.relative_to(DATA)), p.read_text()) for p in paths]
    found += _corpus_modules()
    keys = ("while(", "conditional(", " call(", "to_apply=")
    return [(name, text) for name, text in found if any(k in text for k in keys)]


def test_entered_is_the_order_walk_enters_computations() -> None:
    """`entered` reads only the calling instructions; `walk` reads them all."""
    checked = 0
    for name, text in _texts_with_calls():
        try:
            module = parse_module(text)
        except HloscopeError:
            continue  # the corpus's modules XLA rejects
        by_walk, whole = _entered_by_walk(module)
        assert whole, name
        assert [(c.name, scope) for c, scope in entered(module)] == by_walk, name
        checked += 1
    assert checked >= 20


@pytest.mark.parametrize("sample", ["tf_resnet50", "jax_transformer_block", "torch_mlp"])
def test_kernels_of_one_op_are_made_when_first_read(sample: str) -> None:
    """Before optimization each op is a kernel of its own: the analysis counts them
    without making them (only a diagram reads them), then makes the kernels, in order,
    that the walk with a `KernelMemo` makes one by one; it pickles as the plain tuple."""
    import pickle

    from hloscope.analysis import fusion
    from hloscope.runs import load_run

    lazy = 0
    for dump in load_run(DATA / sample).modules:
        module = dump.load_before()
        if module is None:
            continue
        found = analyze_module(module)
        eager = analyze_module(module, memo=fusion.KernelMemo())
        assert type(eager.kernels) is tuple
        assert isinstance(found.kernels, fusion._Kernels) == any(
            k.cls == K.UNFUSED and len(k.ops) == 1 and not k.fused_computation
            for k in eager.kernels
        ), dump.key
        if isinstance(found.kernels, fusion._Kernels):
            assert found.kernels._made is None  # counted, not made
            lazy += 1
        assert (found.launches, found.fusions, found.ops) == (
            eager.launches,
            eager.fusions,
            eager.ops,
        )
        assert list(found.kernels_by_kind.items()) == list(eager.kernels_by_kind.items())
        assert len(found.kernels) == len(eager.kernels)
        assert found == eager and tuple(found.kernels) == eager.kernels
        assert pickle.loads(pickle.dumps(found)).kernels == eager.kernels
    assert lazy


def test_the_users_of_one_op_kernels_are_counted_when_they_are_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before optimization every op is a kernel of its own: the analysis counts no
    users for them (0.5 s of a 536k-op module's), the kernels count them when made."""
    from hloscope.analysis import fusion

    counted: list[str] = []
    real = fusion._computation_users

    def counting(comp: Computation) -> dict[tuple[str, str], int]:
        counted.append(comp.name)
        return real(comp)

    monkeypatch.setattr(fusion, "_computation_users", counting)
    module = parse_module(
        "HloModule m\n\nENTRY e {\n  p = f32[8] parameter(0)\n  a = f32[8] add(p, p)\n"
        "  b = f32[8] multiply(a, a)\n  c = f32[8] subtract(a, b)\n  ROOT d = f32[8] negate(c)\n}\n"
    )
    found = analyze_module(module)
    assert found.kernel_count == 4 and not counted
    users = {k.name: k.users for k in found.kernels}
    assert counted == ["e"] and users == {"a": 2, "b": 1, "c": 1, "d": 0}
    assert tuple(found.kernels) == analyze_module(module, memo=fusion.KernelMemo()).kernels


@pytest.mark.parametrize("sample", ["tf_resnet50", "jax_transformer_block", "torch_mlp"])
def test_users_are_counted_only_where_kernels_run(
    sample: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each kernel's `users` needs only the computation it runs in: an optimized
    module's fused computations (most of its instructions) are never counted, each
    other one once, and every kernel is the one a count of every computation gives (a
    `KernelMemo`'s). The users of an op that is a kernel of its own (every op before
    optimization) are counted only when its kernel is made: no report reads them."""
    from hloscope.analysis import fusion
    from hloscope.runs import load_run

    counted: list[str] = []
    real = fusion._computation_users

    def counting(comp: object) -> dict[tuple[str, str], int]:
        counted.append(comp.name)  # type: ignore[attr-defined]
        return real(comp)  # type: ignore[arg-type]

    monkeypatch.setattr(fusion, "_computation_users", counting)
    fused_seen = 0
    for dump in load_run(DATA / sample).modules:
        for module in (dump.load_before(), dump.load_after()):
            if module is None:
                continue
            counted.clear()
            found = analyze_module(module)
            early = set(counted)
            ran = {k.computation for k in found.kernels}  # the one-op kernels made now
            assert len(counted) == len(set(counted)), dump.key
            assert set(counted) == ran, dump.key
            # what the analysis counted itself: none for a kernel of one op
            whole = {k.computation for k in found.kernels if k.cls != K.UNFUSED or k.ops[0].called}
            assert early == whole, dump.key
            fused = {k.fused_computation for k in found.kernels if k.fused_computation}
            assert not fused & set(counted)
            fused_seen += len(fused)
            assert found == analyze_module(module, memo=fusion.KernelMemo()), dump.key
    assert fused_seen
