"""Result objects -> JSON documents with stable, documented schemas (see README.md).

Every document a command prints with `--json` is built here, so the schemas live in one
place. Builders return plain dicts; `dumps` serialises them. The report's documents are
also made as stand-ins (`report_fields`, `module_fields`: `render.json_stream`) that
`report --json` writes as they are made, the same text without the whole document.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Any

from hloscope.analysis.budget import Violation
from hloscope.analysis.fusion import ModuleAnalysis
from hloscope.analysis.provenance import Placement, SourceOp
from hloscope.analysis.report import ModuleReport
from hloscope.analysis.stats import ModuleStats
from hloscope.inspection import Inspection
from hloscope.render.compilations import compilations_doc, module_compile_doc, run_outcome_doc
from hloscope.render.cost_json import cost_doc, memory_doc, roofline_doc
from hloscope.render.coverage import coverage_doc
from hloscope.render.json_stream import Fields, Items, Records, built, indented
from hloscope.render.parallel import parallel_doc
from hloscope.render.timing_json import timings_doc
from hloscope.runs import Run
from hloscope.timing.results import ModuleTiming
from hloscope.timing.roofline import Peaks

if TYPE_CHECKING:  # a diff's documents: only `diff` makes one
    from hloscope.analysis.diff import KernelChange, KernelRef, ModuleDiff, RunDiff

SCHEMA_VERSION = 1


def dumps(doc: Any) -> str:
    """Serialise a document the way every hloscope command prints JSON: the text of
    `json.dumps(doc, indent=2, ensure_ascii=False)` (`json_stream.indented`)."""
    return indented(doc)


def parse_doc(stats: ModuleStats) -> dict[str, Any]:
    """The `hloscope parse --json` document.

    Schema: `name` (HloModule name), `path`, `instructions` (all computations),
    `is_scheduled`, `computations` (list of `{name, instructions, is_entry, is_fused}`),
    `fusions_by_kind`, `opcodes` (histogram), `not_understood`.
    """
    return {
        "schema_version": SCHEMA_VERSION,
        "name": stats.name,
        "path": stats.path,
        "instructions": stats.instructions,
        "is_scheduled": stats.is_scheduled,
        "computations": [
            {
                "name": c.name,
                "instructions": c.instructions,
                "is_entry": c.is_entry,
                "is_fused": c.is_fused,
            }
            for c in stats.computations
        ],
        "fusions_by_kind": stats.fusions_by_kind,
        "opcodes": stats.opcodes,
        "not_understood": stats.not_understood,
    }


def _analysis_doc(a: ModuleAnalysis | None, *, after: bool) -> dict[str, Any] | None:
    if a is None:
        return None
    if not after:
        return {"instructions": a.instructions, "ops": a.ops}
    return {
        "instructions": a.instructions,
        "kernels": a.kernel_count,
        "kernels_by_kind": a.kernels_by_kind,
        "fusions": a.fusions,
        "launches": a.launches,
        "launches_exact": a.launches_exact,
        "loops": [{"name": lp.name, "trip_count": lp.trip_count} for lp in a.loops],
        "branches": [
            {"conditional": b.conditional, "index": b.index, "computation": b.computation,
             "launches": b.launches}
            for b in a.branches
        ],
    }  # fmt: skip


def _op_doc(op: SourceOp) -> dict[str, Any]:
    return {
        "name": op.name,
        "type": op.type,
        "location": str(op.location) if op.location else None,
    }


# Ops listed in `shares_with`: every op of a fusion of N ops shares it with N-1 others,
# so full lists grow with N squared (a 3,000-op fusion made 320 MB of JSON from 0.6 MB
# of HLO); the kernel's own entry in `kernels` lists its ops once.
SHARES_LISTED = 20


def placement_doc(p: Placement) -> dict[str, Any]:
    """One entry of a module's `provenance` list (also `hloscope ops --json`):
    `shares_with` lists at most `SHARES_LISTED` ops, `shares_with_count` counts all."""
    return {
        "op": p.op.name,
        "type": p.op.type,
        "location": str(p.op.location) if p.op.location else None,
        "user_frame": p.op.user_frame,
        "status": p.status,
        "kernels": list(p.kernels),
        "shares_with": list(p.shares_with[:SHARES_LISTED]),
        "shares_with_count": len(p.shares_with),
        "bytes": p.bytes,
        "before_instructions": p.before,
        "after_instructions": p.after,
        "evidence": p.evidence,
        "inferred": [{"kernel": k, "how": how} for k, how in p.inferred],
        "merged_with": p.merged_with or None,
    }


def placement_text(p: Placement, newline: str | None = "\n") -> str:
    """`indented(placement_doc(p), newline)`, the same text made without the dict: the
    318k placements of `benchmarks/scale_bench.py`'s 107 MB module in 1.0 s instead of
    2.2 s. With `newline` None, compact: `json.dumps(placement_doc(p),
    ensure_ascii=False, separators=(",", ":"))` (what the HTML page embeds). A value of a
    type other than the fields say (a hand-made placement) goes through
    `placement_doc`."""
    heads = _HEADS.get(newline) or _HEADS.setdefault(newline, _placement_heads(newline))
    (op_, type_, location, user_frame, status, kernels, shares_with, shares_count, bytes_,
     before, after, evidence, inferred, merged_with, end, inner, item, sep) = heads  # fmt: skip
    op, quoted = p.op, encode_basestring  # a TypeError for anything but a str
    shares = p.shares_with[:SHARES_LISTED]
    try:
        return "".join((
            op_, quoted(op.name),
            type_, "null" if op.type is None else quoted(op.type),
            location, quoted(str(op.location)) if op.location else "null",
            user_frame, _BOOLEANS[op.user_frame] if type(op.user_frame) is bool else _no(),
            status, quoted(p.status),
            kernels, "[" + item + sep.join(map(quoted, p.kernels)) + inner + "]" if p.kernels else "[]",
            shares_with, "[" + item + sep.join(map(quoted, shares)) + inner + "]" if shares else "[]",
            shares_count, int.__repr__(len(p.shares_with)),
            bytes_, int.__repr__(p.bytes) if type(p.bytes) is int else _no(),
            before, int.__repr__(p.before) if type(p.before) is int else _no(),
            after, int.__repr__(p.after) if type(p.after) is int else _no(),
            evidence, quoted(p.evidence),
            inferred, _written(placement_doc(p)["inferred"], None if newline is None else inner) if p.inferred else "[]",
            merged_with, quoted(p.merged_with) if p.merged_with else "null",
            end,
        ))  # fmt: skip
    except TypeError:
        return _written(placement_doc(p), newline)


def _written(value: Any, newline: str | None) -> str:
    """`value` as `indented` writes it at `newline`, or compact where that is None (a
    ValueError then for a NaN or an infinity, as the page's JSON has none)."""
    if newline is None:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return indented(value, newline)


def placement_records(placements: Callable[[], Iterable[Placement]]) -> Records[Placement]:
    """The array of `placements()`, each written by `placement_text` (read as
    `placement_doc` everywhere else): what `report --json`'s provenance and `ops --json`
    hold."""
    return Records(placements, placement_doc, placement_text)


def _no() -> str:
    raise TypeError("not a field's type: written through placement_doc")


# `placement_doc`'s keys, in order, as it makes them: named in one place
_PLACEMENT_KEYS = tuple(placement_doc(Placement(SourceOp(""), "", (), (), 0, 0, 0)))
_BOOLEANS = {True: "true", False: "false"}
_HEADS: dict[str | None, tuple[str, ...]] = {}


def _placement_heads(newline: str | None) -> tuple[str, ...]:
    """What `placement_text` writes between the values at an indentation (None:
    compact): each key's opening, the object's end, and a list's indentation, first item
    and separator."""
    keys = [encode_basestring(k) for k in _PLACEMENT_KEYS]
    if newline is None:
        return (
            *(("{" if n == 0 else ",") + key + ":" for n, key in enumerate(keys)),
            "}",
            "",
            "",
            ",",
        )
    inner = newline + "  "
    return (
        *(("{" if n == 0 else ",") + inner + key + ": " for n, key in enumerate(keys)),
        newline + "}",
        inner,
        inner + "  ",
        "," + inner + "  ",
    )


def module_doc(
    m: ModuleReport, *, timing: dict[str, Any] | None = None, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One module of `hloscope report --json` (see `report_doc`); `extra` keys (cost,
    memory, roofline) are added as given."""
    doc: dict[str, Any] = built(module_fields(m, timing=timing, extra=extra))
    return doc


def module_fields(
    m: ModuleReport, *, timing: dict[str, Any] | None = None, extra: dict[str, Any] | None = None
) -> Fields:
    """`module_doc` with its kernels and provenance made as they are written."""
    placements = m.provenance.placements if m.provenance else ()
    doc = Fields(
        key=m.key,
        name=m.name,
        platform=m.platform,
        trivial=m.trivial,
        before=_analysis_doc(m.before, after=False),
        after=_analysis_doc(m.after, after=True),
        ops_per_kernel=round(m.ops_per_kernel, 3) if m.ops_per_kernel else None,
        source_ops=m.source_ops,
        alone=m.alone,
        kernels=Items(lambda: _kernel_docs(m)),
        provenance=placement_records(lambda: placements),
        kernels_by_line=dict(m.provenance.kernels_by_line) if m.provenance else {},
        parallel=parallel_doc(m),
        error=m.error or None,
    )
    if timing is not None:
        doc["timing"] = timing
    doc.update(extra or {})
    return doc


def _kernel_docs(m: ModuleReport) -> Iterator[dict[str, Any]]:
    """The `kernels` of a module's document, one at a time."""
    if m.after is not None:
        ops = m.provenance.kernel_ops if m.provenance else {}
        inferred = m.provenance.inferred if m.provenance else {}
        yield from (
            {
                "name": k.name,
                "kind": k.kind,
                "class": k.cls,
                "computation": k.computation,
                "launches": k.launches,
                "instructions": k.instruction_count,
                "shape": k.shape.text,
                "bytes_in": k.bytes_in,
                "bytes_out": k.bytes_out,
                "library": k.library,
                "source_ops": [o.name for o in ops.get(k.name, ())],
                "inferred_ops": (
                    {"ops": list(inferred[k.name].ops), "how": inferred[k.name].how}
                    if k.name in inferred
                    else None
                ),
            }
            for k in m.after.kernels
        )


def run_doc(run: Run) -> dict[str, Any]:
    """What the run's manifest says about how it was made (empty for bare dumps)."""
    man = run.manifest
    return {
        "path": str(run.path),
        "script": man.script,
        "command": list(man.command) or None,
        "started": man.started_at,
        "framework": man.framework,
        "versions": dict(man.versions) or None,
        "platform": run.platform,
        "device": man.device,
        "exit_code": man.exit_code,
        "wall_time_s": man.wall_time_s,
        **run_outcome_doc(man),
    }


def report_doc(inspection: Inspection, peaks: Peaks | None = None) -> dict[str, Any]:
    """The `hloscope report --json` document.

    Schema (version 1): `schema_version`; `run` (path, script, framework, versions,
    platform, device, exit_code, wall_time_s, status, error, compile_s); `xla_coverage`
    (TensorFlow: which of its ops ran in XLA and which outside,
    `hloscope.render.coverage.coverage_doc`; null where that does not apply); `modules`: one
    object per module, biggest first (a function's compilations together, in compile
    order), with `key`, `name` (HloModule name), `function`, `compilation`, `inputs`,
    `outputs`, `compile_s`, `platform`, `trivial`,
    `before` {`instructions`, `ops` (HLO ops)}, `after` {`instructions` (all, fused
    computations included), `kernels`, `kernels_by_kind`, `fusions` (the kernels that
    are fusions), `launches` (per execution), `launches_exact`, `loops`,
    `branches`}, `ops_per_kernel` (HLO ops before per kernel after), `source_ops` (the
    ops `hloscope ops` lists), `alone` (those sharing no kernel with another op),
    `kernels` (one object per kernel),
    `provenance` (one object per source op: `op`, `type`, `location` (the first frame
    in the user's code, else what the dump records), `user_frame`, `status`
    (fused/alone/folded/dead/free/merged/removed), `kernels` (those doing its work),
    `shares_with` (the first 20), `shares_with_count`, `bytes`, `evidence`, `inferred` (`[{kernel, how}]`, for an op no
    kernel does the work of), `merged_with`), `kernels_by_line`, `parallel` (devices and
    collectives, `hloscope.render.parallel.parallel_doc`; null for one device), and
    `timing` when the run was profiled
    (`executions`, `total_us`, `kernel_us`, `unattributed_us`, `launches_per_execution`,
    `static_launches`, `launch_mismatch`, `kernels`: `[{name, calls, total_us, mean_us,
    median_us, min_us, max_us, share}]`); `cost`, `memory` and `roofline` as
    `hloscope.render.roofline` documents them (README.md, "JSON"); `compilations`: every
    function compiled more than once (`render.compilations.compilations_doc`); for a
    PyTorch/XLA run, `torch_xla` (`hloscope.render.torch_xla.torch_xla_doc`).

    Args:
        inspection: The analysed (and, when profiled, timed) run.
        peaks: The device's roofs, for `roofline` (None leaves it null).
    """
    doc: dict[str, Any] = built(report_fields(inspection, peaks))
    return doc


def report_fields(inspection: Inspection, peaks: Peaks | None = None) -> Fields:
    """`report_doc` with each module made as it is written (`render.json_stream.chunks`):
    a run's whole document is never held."""

    def module(m: ModuleReport) -> Fields:
        return module_fields(
            m,
            timing=_timing_doc(inspection.timing(m.key)),
            extra=module_compile_doc(inspection.compilations, m.key)
            | roofline_keys(inspection, m.key, peaks),
        )

    doc = Fields(
        schema_version=SCHEMA_VERSION,
        run=run_doc(inspection.run),
        xla_coverage=coverage_doc(inspection.xla_coverage, inspection.modules),
        modules=Items(lambda: map(module, inspection.modules)),
        compilations=compilations_doc(inspection.compilations),
    )
    if inspection.torch_xla is not None:  # PyTorch/XLA runs only
        from hloscope.render.torch_xla import torch_xla_doc

        doc["torch_xla"] = torch_xla_doc(inspection.torch_xla)
    return doc


def roofline_keys(inspection: Inspection, key: str, peaks: Peaks | None) -> dict[str, Any]:
    """A module's `cost`, `memory` and `roofline` documents (see `report_doc`)."""
    return {
        "cost": cost_doc(inspection.cost(key)),
        "memory": memory_doc(
            inspection.memory.get(key), error=inspection.memory_errors.get(key, "")
        ),
        "roofline": roofline_doc(peaks, inspection.roofline(key, peaks)),
    }


def _timing_doc(timing: ModuleTiming | None) -> dict[str, Any] | None:
    return timings_doc(timing) if timing is not None else None


def _kernel_ref_doc(k: KernelRef) -> dict[str, Any]:
    return {
        "name": k.name,
        "kind": k.kind,
        "launches": k.launches,
        "bytes": k.bytes,
        "shape": k.shape,
        "ops": list(k.ops),
        "time_us": k.time_us,
    }


def _kernel_change_doc(k: KernelChange) -> dict[str, Any]:
    return {
        "change": k.change,
        "a": [_kernel_ref_doc(r) for r in k.a],
        "b": [_kernel_ref_doc(r) for r in k.b],
        "source_ops": list(k.source_ops),
        "ops_only_a": list(k.ops_only_a),
        "ops_only_b": list(k.ops_only_b),
        "bytes_a": k.bytes_a,
        "bytes_b": k.bytes_b,
        "time_a_us": k.time_a,
        "time_b_us": k.time_b,
        "time_delta_us": k.time_delta,
        "impact": k.impact,
    }


def module_diff_doc(d: ModuleDiff) -> dict[str, Any]:
    """One matched module of `hloscope diff --json` (see `diff_doc`)."""
    highlight_a: dict[str, str] = {}
    highlight_b: dict[str, str] = {}
    for k in d.kernels:
        if k.changed:
            highlight_a.update((r.name, k.change) for r in k.a)
            highlight_b.update((r.name, k.change) for r in k.b)
    return {
        "a": {"key": d.a.key, "name": d.a.name, "trivial": d.a.trivial},
        "b": {"key": d.b.key, "name": d.b.name, "trivial": d.b.trivial},
        "matched_by": d.matched_by,
        "trivial": d.trivial,
        "changed": d.changed,
        "profiled": d.profiled,
        "metrics": {
            m.name: {
                "a": m.a,
                "b": m.b,
                "delta": m.delta,
                "relative": round(m.relative, 6) if m.relative is not None else None,
                "worse_when": m.worse,
            }
            for m in d.metrics
        },
        "kernels_by_kind": {kind: {"a": a, "b": b, "delta": b - a} for kind, a, b in d.kinds},
        "kernel_changes": [_kernel_change_doc(k) for k in d.kernels if k.changed],
        "matched_kernels": [_kernel_change_doc(k) for k in d.kernels if not k.changed],
        "op_changes": [
            {
                "op": o.op,
                "type": o.type,
                "a": {"status": o.status_a, "kernels": list(o.kernels_a), "bytes": o.bytes_a},
                "b": {"status": o.status_b, "kernels": list(o.kernels_b), "bytes": o.bytes_b},
                "unfused": o.unfused,
                "fused": o.fused,
            }
            for o in d.ops
        ],
        "highlight": {"a": highlight_a, "b": highlight_b},
    }


def violation_doc(v: Violation) -> dict[str, Any]:
    """One budget violation or regression (`hloscope check`, `diff --fail-on-regression`)."""
    return {
        "module": v.module,
        "metric": v.metric,
        "value": v.value,
        "limit": v.limit,
        "tolerance": v.tolerance,
        "message": v.message,
    }


def diff_doc(
    diff: RunDiff,
    *,
    modules: tuple[ModuleDiff, ...] | None = None,
    regressions: tuple[Violation, ...] | None = None,
    tolerance: float | None = None,
) -> dict[str, Any]:
    """The `hloscope diff --json` document, also what the HTML report embeds.

    Schema (version 1): `schema_version`; `a`, `b` (each as `run` of `report_doc`);
    `changed`; `modules`: one object per matched module (all, or those passed), with
    `a`/`b` {`key`, `name`, `trivial`}, `matched_by` (name/structure), `trivial`,
    `changed`, `profiled`, `metrics` {name: {`a`, `b`, `delta`, `relative`,
    `worse_when`}} for `instructions_before`, `instructions`, `kernels`, `launches`,
    `ops_per_kernel`, `ops_alone`, `time_us`; `kernels_by_kind` {kind: {`a`, `b`,
    `delta`}}; `kernel_changes` (changed groups, biggest impact first: `change`
    (split/merged/regrouped/appeared/disappeared/kind changed/ops changed), `a` and `b`
    (kernels: `name`, `kind`, `launches`, `bytes`, `shape`, `ops`, `time_us`),
    `source_ops`, `ops_only_a`, `ops_only_b`, `bytes_a`, `bytes_b`, `time_a_us`,
    `time_b_us`, `time_delta_us`, `impact`); `matched_kernels` (unchanged groups, same
    fields); `op_changes` (`op`, `type`, `a`/`b` {`status`, `kernels`, `bytes`},
    `unfused`, `fused`); `highlight` {`a`, `b`: kernel name -> change} for diagrams.
    `only_a`, `only_b`: unmatched modules {`key`, `name`, `trivial`}; `tolerance` and
    `regressions` (`module`, `metric`, `value`, `limit`, `tolerance`, `message`) when
    regressions were judged.
    """
    shown = diff.modules if modules is None else modules
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "a": run_doc(diff.a.run),
        "b": run_doc(diff.b.run),
        "changed": diff.changed,
        "modules": [module_diff_doc(d) for d in shown],
        "only_a": [{"key": m.key, "name": m.name, "trivial": m.trivial} for m in diff.only_a],
        "only_b": [{"key": m.key, "name": m.name, "trivial": m.trivial} for m in diff.only_b],
    }
    if regressions is not None:
        doc["tolerance"] = tolerance
        doc["regressions"] = [violation_doc(v) for v in regressions]
    return doc
