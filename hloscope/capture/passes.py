"""`hloscope dump --passes`: what makes XLA dump and time every pass, and what it wrote.

XLA dumps the module after every pass that changed it with `--xla_dump_hlo_pass_re=.*`
(`merge_xla_flags` adds it), and logs each pass's time at verbosity 1 of
`hlo_pass_pipeline.cc`; `pass_environ` sets the logging variables that turn that on
(`TF_CPP_VMODULE`, `TF_CPP_MIN_LOG_LEVEL`: TensorFlow's and jaxlib's XLA read both), keeping
the user's other modules. The log lands in the run's `stderr.log`, where
`hloscope.pass_log` reads it. `pass_dump_size` says what the dumps took on disk, for the
warning on big models.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BIG_PASS_DUMPS", "PassDumpSize", "pass_dump_size", "pass_environ"]

BIG_PASS_DUMPS = 256 * 1024 * 1024
"""Per-pass dumps bigger than this get a warning (a 96-layer JAX model writes ~125 MB)."""

_VMODULE = "hlo_pass_pipeline=1"
# `module_<id>.<name>.<step>.<pipeline or pass>. ... .txt`: a per-pass dump's name.
_PASS_DUMP = re.compile(r"(?:\d{10,}\.)?module_\d+\..*\.\d{4,}\.[^/]+\.txt")


def pass_environ(environ: Mapping[str, str]) -> tuple[dict[str, str], tuple[str, ...]]:
    """The logging variables that make XLA log every pass's time.

    Args:
        environ: The environment the child would start from.

    Returns:
        `(variables to set, notes)`: `TF_CPP_VMODULE` with `hlo_pass_pipeline=1` added to
        the user's modules, and `TF_CPP_MIN_LOG_LEVEL=0` (VLOG lines are INFO lines); a
        note for each user setting replaced.
    """
    out: dict[str, str] = {}
    notes: list[str] = []
    modules = [m for m in environ.get("TF_CPP_VMODULE", "").split(",") if m.strip()]
    kept = [m for m in modules if m.split("=", 1)[0].strip() != "hlo_pass_pipeline"]
    if len(kept) != len(modules):
        notes.append("TF_CPP_VMODULE: hlo_pass_pipeline set to 1 (its pass timings)")
    out["TF_CPP_VMODULE"] = ",".join([*kept, _VMODULE])
    level = environ.get("TF_CPP_MIN_LOG_LEVEL")
    if level not in (None, "", "0"):
        notes.append(
            f"TF_CPP_MIN_LOG_LEVEL={level} replaced by 0: XLA logs pass timings as INFO lines "
            "(kept in stderr.log, not shown)"
        )
    out["TF_CPP_MIN_LOG_LEVEL"] = "0"
    return out, tuple(notes)


@dataclass(frozen=True)
class PassDumpSize:
    """What the per-pass dumps of a run take.

    Attributes:
        files: How many per-pass dump files.
        bytes: Their size in all.
    """

    files: int
    bytes: int

    @property
    def big(self) -> bool:
        """Over `BIG_PASS_DUMPS`: worth a warning."""
        return self.bytes > BIG_PASS_DUMPS


def pass_dump_size(dump_dir: Path) -> PassDumpSize:
    """Count the per-pass dump files in a dump folder and their bytes."""
    files = size = 0
    try:
        with os.scandir(dump_dir) as entries:
            for e in entries:
                if _PASS_DUMP.fullmatch(e.name) and e.is_file(follow_symlinks=False):
                    files += 1
                    size += e.stat(follow_symlinks=False).st_size
    except OSError:
        pass
    return PassDumpSize(files, size)
