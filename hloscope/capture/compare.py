"""Fusion on vs off: the environment for a second run of a script with XLA's fusion
passes disabled (`hloscope dump --compare-unfused`).

The second run differs from the first only by `--xla_disable_hlo_passes=` naming the
fusion passes of XLA's CPU and GPU pipelines (a name a pipeline lacks disables nothing,
so one list serves both). Names must match the passes exactly
(`xla/debug_options_flags.cc`); check them with a per-pass dump
(`--xla_dump_hlo_pass_re=.*`, the `after_<pass>` part of the file names).
"""

from __future__ import annotations

from collections.abc import Mapping

from hloscope.capture.flags import split_flags

__all__ = ["FUSION_PASSES", "unfused_environ"]

FUSION_PASSES: Mapping[str, tuple[str, ...]] = {
    # xla/service/cpu/cpu_compiler.cc: CpuInstructionFusion ("fusion") makes the kLoop
    # fusions; DotLibraryRewriter ("dot-library-rewriter") fuses elementwise ops into the
    # YNNPACK/oneDNN dot calls (`__ynn_fusion`), so without it dots run on XLA's own emitter.
    "cpu": ("fusion", "dot-library-rewriter"),
    # xla/service/gpu/gpu_compiler.cc: priority fusion (older XLA: instruction fusion and
    # the fusion merger) and the passes that merge fusions, as their name() spells them
    # (PriorityFusion "priority-fusion", FusionMerger "fusion_merger", MultiOutputFusion
    # "multi_output_fusion", HorizontalLoopFusion "horizontal_loop_fusion", ...).
    "gpu": (
        "priority-fusion",
        "fusion",
        "fusion_merger",
        "multi_output_fusion",
        "horizontal_loop_fusion",
        "horizontal_input_fusion",
    ),
}

_FLAG = "--xla_disable_hlo_passes"


def unfused_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` with XLA's fusion passes added to `--xla_disable_hlo_passes`.

    Passes the user already disabled stay disabled.
    """
    passes = list(dict.fromkeys(p for names in FUSION_PASSES.values() for p in names))
    kept = []
    for token in split_flags(environ.get("XLA_FLAGS", "")):
        name, _, value = token.partition("=")
        if name.lstrip("-") == _FLAG.lstrip("-"):
            passes = [*value.strip("\"'").split(","), *passes]
            continue
        kept.append(token)
    passes = [p for p in dict.fromkeys(passes) if p]
    return {**environ, "XLA_FLAGS": " ".join([*kept, f"{_FLAG}={','.join(passes)}"])}
