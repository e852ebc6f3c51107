"""Result objects -> JSON documents with stable, documented schemas (see README.md).

Every document a command prints with `--json` is built here, so the schemas live in one
place. Builders return plain dicts; `dumps` serialises them.
"""

from __future__ import annotations

import json
from typing import Any

from hloscope.analysis.stats import ModuleStats

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
