"""Result objects -> JSON documents with stable, documented schemas (see README.md).

Every document a command prints with `--json` is built here, so the schemas live in one
place. Builders return plain dicts; `dumps` serialises them.
"""

from __future__ import annotations

import json
from typing import Any

from hloscope.analysis.fusion import ModuleAnalysis
from hloscope.analysis.provenance import Placement, SourceOp
from hloscope.analysis.report import ModuleReport, RunReport
from hloscope.analysis.stats import ModuleStats
from hloscope.runs import Run

SCHEMA_VERSION = 1


def dumps(doc: Any) -> str:
    """Serialise a document the way every hloscope command prints JSON."""
    return json.dumps(doc, indent=2, ensure_ascii=False)


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


def placement_doc(p: Placement) -> dict[str, Any]:
    """One entry of a module's `provenance` list (also `hloscope ops --json`)."""
    return {
        "op": p.op.name,
        "type": p.op.type,
        "location": str(p.op.location) if p.op.location else None,
        "status": p.status,
        "kernels": list(p.kernels),
        "shares_with": list(p.shares_with),
        "bytes": p.bytes,
        "before_instructions": p.before,
        "after_instructions": p.after,
        "evidence": p.evidence,
    }


def module_doc(m: ModuleReport, *, timing: dict[str, Any] | None = None) -> dict[str, Any]:
    """One module of `hloscope report --json` (see `report_doc`)."""
    kernels = []
    if m.after is not None:
        ops = m.provenance.kernel_ops if m.provenance else {}
        kernels = [
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
            }
            for k in m.after.kernels
        ]
    doc: dict[str, Any] = {
        "key": m.key,
        "name": m.name,
        "platform": m.platform,
        "trivial": m.trivial,
        "before": _analysis_doc(m.before, after=False),
        "after": _analysis_doc(m.after, after=True),
        "ops_per_kernel": round(m.ops_per_kernel, 3) if m.ops_per_kernel else None,
        "alone": m.alone,
        "kernels": kernels,
        "provenance": [placement_doc(p) for p in m.provenance.placements] if m.provenance else [],
        "kernels_by_line": dict(m.provenance.kernels_by_line) if m.provenance else {},
        "error": m.error or None,
    }
    if timing is not None:
        doc["timing"] = timing
    return doc


def run_doc(run: Run) -> dict[str, Any]:
    """What the run's manifest says about how it was made (empty for bare dumps)."""
    man = run.manifest
    return {
        "path": str(run.path),
        "script": man.get("script"),
        "framework": man.get("framework"),
        "versions": man.get("versions"),
        "platform": run.platform,
        "device": man.get("device"),
        "exit_code": man.get("exit_code"),
        "wall_time_s": man.get("wall_time_s"),
    }


def report_doc(
    report: RunReport, *, timings: dict[str, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The `hloscope report --json` document.

    Schema (version 1): `schema_version`; `run` (path, script, framework, versions,
    platform, device, exit_code, wall_time_s); `modules`: one object per module, biggest
    first, with `key`, `name` (HloModule name), `platform`, `trivial`,
    `before` {`instructions`, `ops`}, `after` {`instructions` (all, fused computations
    included), `kernels`, `kernels_by_kind`, `fusions` (fusion instructions outside
    fused computations), `launches` (per execution), `launches_exact`, `loops`,
    `branches`}, `ops_per_kernel`, `alone`, `kernels` (one object per kernel),
    `provenance` (one object per source op: `op`, `type`, `location`, `status`
    (fused/alone/folded/dead/free/removed), `kernels`, `shares_with`, `bytes`,
    `evidence`), `kernels_by_line`, and `timing` when the run was profiled.
    """
    timings = timings or {}
    return {
        "schema_version": SCHEMA_VERSION,
        "run": run_doc(report.run),
        "modules": [module_doc(m, timing=timings.get(m.name)) for m in report.modules],
    }
