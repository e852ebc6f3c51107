"""Asking TensorFlow to record what it auto-clusters, and keeping only what is read.

When the environment turns on XLA auto-clustering (`--tf_xla_auto_jit` in
`TF_XLA_FLAGS`), `hloscope dump` has TensorFlow's debug data dumper write each function
graph into the run's `tf_graphs/` folder (`TF_DUMP_GRAPH_PREFIX`,
`TF_DUMP_GRAPH_NAME_FILTER=*`, `TF_DUMP_GRAPH_GROUPS=main`). The dumper writes every
stage of graph optimization; once the script has run, only the stage
`hloscope.analysis.tf_graphs` reads is kept. A `TF_DUMP_GRAPH_PREFIX` of the user's own
is left alone.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path

from hloscope.capture.hints import auto_jit_level

__all__ = ["GRAPHS_SUBDIR", "GRAPH_STAGE", "graph_dump_env", "keep_read_stage"]

GRAPHS_SUBDIR = "tf_graphs"
GRAPH_STAGE = "after_post_rewrite_for_exec_passes"
"""The dumped stage kept and read: each function graph once its clusters are launch
ops (`hloscope.analysis.tf_graphs`)."""


def graph_dump_env(environ: Mapping[str, str], run_dir: Path) -> dict[str, str]:
    """The variables that make TensorFlow dump its function graphs into the run, when
    the environment turns on auto-clustering and names no dump folder of its own; {}
    otherwise."""
    if auto_jit_level(environ.get("TF_XLA_FLAGS")) is None or environ.get("TF_DUMP_GRAPH_PREFIX"):
        return {}
    return {
        "TF_DUMP_GRAPH_PREFIX": str(run_dir / GRAPHS_SUBDIR),
        "TF_DUMP_GRAPH_NAME_FILTER": "*",
        "TF_DUMP_GRAPH_GROUPS": "main",
    }


def keep_read_stage(folder: Path) -> None:
    """Remove every file TensorFlow dumped into `folder` but the graphs after
    auto-clustering (`*.main.after_post_rewrite_for_exec_passes.pbtxt`)."""
    if not folder.is_dir() or folder.is_symlink():
        return
    keep = f".main.{GRAPH_STAGE}.pbtxt"
    for path in folder.iterdir():
        if path.is_file() and not path.is_symlink() and not path.name.endswith(keep):
            with contextlib.suppress(OSError):
                path.unlink()
