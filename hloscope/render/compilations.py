"""A run's compilations and its outcome -> terminal text and JSON.

`report` leads each function compiled more than once with one line (how often, which
input dimensions varied, how long compiling took), its compilations with their shapes,
those that fuse differently, what the framework said and one line of advice; then the
run's compile time against its wall time (the JIT cold start). A run that failed says
so, with its exit code and error, before anything else. The JSON pieces are the
`compilations`, `run` and per-module fields of `report --json` (README.md, "JSON").
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from hloscope.analysis.compilations import (
    Compilation,
    Compilations,
    Varying,
    varying_groups,
    varying_where,
)
from hloscope.frameworks import Framework
from hloscope.manifest import RunManifest
from hloscope.render.format import counted, ellipsis, fmt_seconds, fmt_share, short_name

__all__ = [
    "cold_start_line",
    "compilations_doc",
    "compilations_page_doc",
    "compilations_summary",
    "compilations_view",
    "module_compile_doc",
    "run_outcome",
    "run_outcome_doc",
    "run_status_line",
]

# What a run's status means, for its one line.
_FAILED = {"failed", "interrupted", "running", "no-modules", "module-not-found"}
_VARIANTS_LISTED = 8
_REASONS_LISTED = 3


# ---------------------------------------------------------------------------------------
# JSON


def module_compile_doc(comps: Compilations, key: str) -> dict[str, Any]:
    """A module's `function`, `compilation` (its index among the function's
    compilations, compile order), `inputs`, `outputs` and `compile_s` (null where not
    measured)."""
    found = comps.of(key)
    if found is None:
        return {"function": None, "compilation": None, "inputs": [], "outputs": [],
                "compile_s": None}  # fmt: skip
    function, v = found
    return {
        "function": function.function,
        "compilation": v.index,
        "inputs": list(v.inputs),
        "outputs": list(v.outputs),
        "compile_s": _round(v.compile_s),
    }


def _varying_doc(v: Varying) -> dict[str, Any]:
    return {"arg": v.arg, "dim": v.dim, "values": list(v.values)}


def compilations_doc(comps: Compilations) -> list[dict[str, Any]]:
    """`report --json`'s `compilations`: every function compiled more than once, as
    `{function, count, modules (keys in compile order), varying: [{arg, dim, values}],
    kernels (one count per compilation, null where not analysed), compile_s}`."""
    return [
        {
            "function": c.function,
            "count": c.count,
            "modules": [v.key for v in c.variants],
            "varying": [_varying_doc(v) for v in c.varying],
            "kernels": [v.kernels for v in c.variants],
            "compile_s": _round(c.compile_s),
        }
        for c in comps.recompiled
    ]


def compilations_page_doc(comps: Compilations, indices: Mapping[str, int]) -> list[dict[str, Any]]:
    """What the HTML overview shows of each function compiled more than once: the
    `compilations` fields, each compilation's shapes, kernels, compile time and place in
    the page (`index`, null when not on it), those that fuse differently, what the
    framework said, and the advice."""
    out = []
    for c in comps.recompiled:
        out.append(
            {
                "function": c.function,
                "count": c.count,
                "trivial": c.trivial,
                "compile_s": _round(c.compile_s),
                "headline": headline(c).plain,
                "varying": [_varying_doc(v) for v in c.varying],
                "variants": [
                    {
                        "key": v.key,
                        "compilation": v.index,
                        "index": indices.get(v.key),
                        "inputs": list(v.inputs),
                        "outputs": list(v.outputs),
                        "kernels": v.kernels,
                        "compile_s": _round(v.compile_s),
                    }
                    for v in c.variants
                ],
                "differs": [line.plain.strip() for line in _differs_lines(c)],
                "said": [line.plain.strip() for line in _said_lines(c, comps.notes)],
                "advice": c.advice,
            }
        )
    return out


def run_outcome_doc(manifest: RunManifest) -> dict[str, Any]:
    """The run's `status`, its `error` (one line, null when it went well) and
    `compile_s` (all compiles together, null when not recorded)."""
    return {
        "status": manifest.status,
        "error": manifest.error,
        "compile_s": _round(manifest.compile_s),
    }


def _round(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 6)


# ---------------------------------------------------------------------------------------
# Terminal


def run_outcome(manifest: RunManifest) -> str | None:
    """`the run failed (exit code 1): <error>`: what went wrong, in one line, for a run
    that did not go well; None for one that did (or a bare dump, which says nothing)."""
    status = manifest.status
    if status not in _FAILED:
        return None
    what = {
        "failed": "the run failed",
        "interrupted": "the run was interrupted",
        "running": "the run did not finish (hloscope stopped before the script ended)",
        "no-modules": "the script ran but compiled nothing with XLA",
        "module-not-found": "the module to run was not found",
    }[str(status)]
    if manifest.exit_code not in (None, 0):
        what += f" (exit code {manifest.exit_code})"
    error = manifest.error
    if error and status != "no-modules":
        what += f": {ellipsis(error, 400)}"
    return what


def run_status_line(manifest: RunManifest, modules: int) -> Text | None:
    """`✗ the run failed (exit code 1): <error>; 0 modules dumped`, for a run that did
    not go well (see `run_outcome`); None for one that did."""
    outcome = run_outcome(manifest)
    if outcome is None:
        return None
    line = Text.assemble(("✗ ", "bold red"), (outcome, "red"))
    dumped = f"{modules} module{'' if modules == 1 else 's'} dumped"
    line.append(f"; {dumped}" + ("; what was dumped follows" if modules else ""), style="dim")
    return line


def _values(v: Varying) -> str:
    """`8, 16, 24`; the values of compilations set apart (None) are left out, and the
    compilations the others are of named: `48, 32, 64 (#1–#3)`."""
    known = [(i, x) for i, x in enumerate(v.values) if x is not None]
    shown = ", ".join(str(x) for _, x in known[:12]) + (", …" if len(known) > 12 else "")
    if len(known) < len(v.values):
        shown += f" ({_indices([i for i, _ in known])})"
    return shown


def _indices(indices: Sequence[int]) -> str:
    """`#1–#3`, `#1, #3`: compilations by index."""
    if len(indices) > 2 and indices == list(range(indices[0], indices[-1] + 1)):
        return f"#{indices[0]}–#{indices[-1]}"
    return ", ".join(f"#{i}" for i in indices)


def _set_apart(c: Compilation) -> str:
    """`#0 takes 15 inputs, the others 27`: the compilations whose inputs were not
    compared (see `Compilation.set_apart`)."""
    apart = c.set_apart
    if not apart:
        return ""
    counts = ", ".join(str(len(v.inputs)) for v in apart)
    others = {len(v.inputs) for v in c.variants if v not in apart}
    verb = "takes" if len(apart) == 1 else "take"
    rest = f", the others {others.pop()}" if len(others) == 1 else ""
    return f"{_indices([v.index for v in apart])} {verb} {counts} inputs{rest}"


def headline(c: Compilation) -> Text:
    """`jit_attend compiled 6× · arg 0 dim 0: 8, 16, 24, 32, 40, 48 · 1.9 s compiling`
    (inputs whose dimension varies alike are named together: `args 0, 1, 2 dim 0`)."""
    line = Text.assemble((short_name(c.function, 64), "bold cyan"), f" compiled {c.count}×")
    groups = varying_groups(c.varying)
    for args, v in groups[:3]:
        line.append(f" · {varying_where(args, v)}: {_values(v)}")
    if len(groups) > 3:
        line.append(f" · {len(groups) - 3} more dimensions vary")
    apart = _set_apart(c)
    if apart:
        line.append(f" · {apart}")
    elif not c.varying and c.variants[0].inputs:
        line.append(" · same input shapes each time")
    if c.compile_s is not None:
        line.append(f" · {fmt_seconds(c.compile_s)} compiling", style="bold")
    return line


def _variant_lines(c: Compilation) -> list[Text]:
    out = []
    for v in c.variants[:_VARIANTS_LISTED]:
        shapes = f"{', '.join(v.inputs) or '?'} → {', '.join(v.outputs) or '?'}"
        kernels = counted(v.kernels, "kernel") if v.kernels is not None else ""
        took = fmt_seconds(v.compile_s) if v.compile_s is not None else ""
        out.append(
            Text.assemble(
                ("  ", ""),
                (f"#{v.index}", "bold"),
                f" {ellipsis(shapes, 100)}",
                (f"  {kernels}" if kernels else "", ""),
                (f"  {took}" if took else "", "dim"),
                (f"  [{short_name(v.key, 32)}]", "dim"),
            )
        )
    if c.count > _VARIANTS_LISTED:
        out.append(Text(f"  … {c.count - _VARIANTS_LISTED} more", style="dim"))
    return out


def _differs_lines(c: Compilation) -> list[Text]:
    out = []
    for d in c.fuses_differently:
        which = ", ".join(f"#{i}" for i in d.indices)
        kinds = ", ".join(f"{k} {n:+d}" for k, n in d.kinds.items())
        verb = "fuses" if len(d.indices) == 1 else "fuse"
        out.append(
            Text.assemble(
                ("  ", ""),
                (f"{which} {verb} differently", "yellow"),
                f": {d.kernels} kernels instead of {d.usual}" + (f" ({kinds})" if kinds else ""),
            )
        )
    return out


# torch_xla's causes (2.9) for a graph compiled where a step ends, as it should.
_TORCH_XLA_PLAIN = frozenset(
    {"user torch_xla.sync", "torch_xla.sync in parallel loader at step end", "torch_xla.compile"}
)
_JAX_AT = re.compile(r"^at (\S+), now (.+) and before (.+)$")


def _said_lines(c: Compilation, notes: Sequence[str]) -> list[Text]:
    """What the framework itself said: JAX's cache-miss explanations (the inputs it
    named, and its first example), TensorFlow's retracing warning."""
    said: list[str] = []
    if c.framework == Framework.JAX and c.reasons:
        named = [m[1] for m in map(_JAX_AT.match, c.reasons) if m is not None]
        names = ", ".join(dict.fromkeys(named))
        static = c.static_changes
        if static:
            said += [f"JAX: static {where} took {', '.join(vs)}" for where, vs in static]
        elif names:
            said.append(f"JAX: the input types changed at {names} (e.g. {c.reasons[0]})")
        else:
            said += [f"JAX: {ellipsis(r, 200)}" for r in c.reasons[:_REASONS_LISTED]]
    elif c.framework == Framework.TENSORFLOW:
        name = c.function.split("inference_", 1)[-1]
        said = [n for n in notes if f" calls to {name} " in n]
    elif c.framework == Framework.TORCH_XLA:  # its cause, unless the plain sync of a step
        causes = dict.fromkeys(v.reason for v in c.variants if v.reason)
        said = [f"torch_xla's cause: {x}" for x in causes if x not in _TORCH_XLA_PLAIN]
    return [Text(f"  {s}", style="dim") for s in said]


def compilations_view(comps: Compilations, *, show_all: bool = False) -> RenderableType | None:
    """Each function compiled more than once (helpers too with `show_all`), then the
    run's compile time against its wall time; None when there is nothing to say."""
    parts: list[RenderableType] = []
    for c in comps.recompiled:
        if c.trivial and not show_all:
            continue
        parts += [headline(c), *_variant_lines(c), *_differs_lines(c)]
        parts += _said_lines(c, comps.notes)
        parts.append(Text.assemble(("  advice: ", "bold"), c.advice))
    cold = cold_start_line(comps)
    if cold is not None:
        parts.append(cold)
    return Group(*parts) if parts else None


def compilations_summary(comps: Compilations, *, show_all: bool = False) -> RenderableType | None:
    """One line per function compiled more than once, then the compile time against
    the wall time (what `hloscope dump` ends with; `report` says more)."""
    lines: list[RenderableType] = [
        headline(c) for c in comps.recompiled if show_all or not c.trivial
    ]
    cold = cold_start_line(comps)
    if cold is not None:
        lines.append(cold)
    return Group(*lines) if lines else None


def cold_start_line(comps: Compilations) -> Text | None:
    """`compiling took 1.9 s of the run's 5.4 s (35%): the JIT cold start, ...`; None
    when the run recorded no compile times."""
    if comps.compile_s is None:
        return None
    count = sum(f.count for f in comps.functions)
    wall = (
        f" of the run's {fmt_seconds(comps.wall_s)} wall time ({fmt_share(comps.compile_s, comps.wall_s)})"
        if comps.wall_s
        else ""
    )
    return Text.assemble(
        ("compiling took ", ""),
        (fmt_seconds(comps.compile_s), "bold"),
        f"{wall}; {counted(count, 'module')} compiled\n(the JIT cold start: paid before "
        "each function's first call at each new input shape)",
    )
