"""Pass stories -> terminal text and the `hloscope passes --json` document.

`passes_doc` is the JSON schema (`schema_version`, `modules`: key, name, `passes` and
`kernels`); the HTML page embeds each module's entry with the extras it shows
(`story_doc(..., extras=True)`). `story_text` is the terminal view: the pipeline as it
ran with the counts after each pass and their change, each kernel's first pass, the ops
that run alone, and where compile time goes. `history_text` is the short line
`hloscope ops --history` adds to an op. Nothing here computes what the story did not.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from hloscope.analysis.passes import (
    Counts,
    KernelEvent,
    KernelHistory,
    OpHistory,
    PassStep,
    PassStory,
)
from hloscope.analysis.provenance import ALONE, Placement
from hloscope.render.format import DASH, fmt_seconds, fmt_share, short_name
from hloscope.render.json import SCHEMA_VERSION

__all__ = [
    "history_text",
    "kernel_history_text",
    "op_history_doc",
    "op_history_text",
    "passes_doc",
    "story_doc",
    "story_text",
]

_COUNTS = ("instructions", "fusions", "kernels", "launches")
# Kernels listed one by one in the terminal before "… N more (--all)".
_KERNELS_SHOWN = 20


def passes_doc(stories: Iterable[PassStory]) -> dict[str, Any]:
    """The `hloscope passes --json` document.

    Returns:
        `{schema_version, modules: [{key, name, passes: [{index, pipeline, pass,
        instructions, fusions, kernels, launches, duration_s}], kernels: [{name,
        first_pass, history: [{pass, change}]}]}]}`.
    """
    return {"schema_version": SCHEMA_VERSION, "modules": [story_doc(s) for s in stories]}


def story_doc(story: PassStory, *, extras: bool = False) -> dict[str, Any]:
    """One module's entry of `passes_doc`; with `extras`, what the HTML page also shows:
    `start` (counts before the first pass), `notes`, `pass_re`, `seconds` (time in
    passes), `slowest` ([{pass, seconds, runs}]), per pass `note`, per kernel `kind`,
    `first_index` and each event's `index` and `from`, and `ops` ([{op, kernel,
    left_pass, left_index, left_kernel}])."""
    doc: dict[str, Any] = {
        "key": story.key,
        "name": story.name,
        "passes": [_step_doc(s, extras) for s in story.steps],
        "kernels": [_kernel_doc(k, extras) for k in story.kernels],
    }
    if extras:
        doc.update(
            start=_counts_doc(story.start) if story.start else None,
            notes=list(story.notes),
            pass_re=story.pass_re,
            seconds=story.seconds,
            slowest=[{"pass": p.name, "seconds": p.seconds, "runs": p.runs} for p in story.slowest],
            ops=[_op_doc(o) for o in story.ops],
        )
    return doc


def _counts_doc(c: Counts) -> dict[str, int]:
    return {key: getattr(c, key) for key in _COUNTS}


def _step_doc(s: PassStep, extras: bool) -> dict[str, Any]:
    doc: dict[str, Any] = {"index": s.index, "pipeline": s.pipeline, "pass": s.name}
    doc.update(_counts_doc(s.counts))
    doc["duration_s"] = s.seconds
    if extras:
        doc["note"] = s.note
    return doc


def _kernel_doc(k: KernelHistory, extras: bool) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": k.name,
        "first_pass": k.first_pass,
        "history": [_event_doc(e, extras) for e in k.history],
    }
    if extras:
        doc.update(kind=k.kind, first_index=k.first_index)
    return doc


def _event_doc(e: KernelEvent, extras: bool) -> dict[str, Any]:
    doc: dict[str, Any] = {"pass": e.pass_name, "change": e.change}
    if extras:
        doc.update(index=e.index, **{"from": list(e.kernels)})
    return doc


def _op_doc(o: OpHistory) -> dict[str, Any]:
    return {
        "op": o.op,
        "kernel": o.kernel,
        "left_pass": o.left_pass,
        "left_index": o.left_index,
        "left_kernel": o.left_kernel,
    }


# ---------------------------------------------------------------------------------------
# Terminal


def story_text(
    story: PassStory, *, show_all: bool = False, full_names: bool = False
) -> RenderableType:
    """One module's story for the terminal.

    Args:
        story: The module's pass story.
        show_all: List every kernel and every op that runs alone (else the first 20).
        full_names: Print names whole (output to a pipe), else cut them to fit.
    """
    width = None if full_names else 56
    module_id = story.key.split(".", 1)[0] if story.key != story.name else ""
    where = f"  [module {module_id}]" if module_id.isdigit() else ""
    parts: list[RenderableType] = [
        Text.assemble(
            ("── ", "dim"),
            (story.name if full_names else short_name(story.name, 64), "bold cyan"),
            (where, "dim"),
        )
    ]
    parts.append(_steps_table(story, width))
    for note in story.notes:
        parts.append(Text(f"note: {note}", style="yellow"))
    parts.append(_kernels_part(story, show_all, width))
    ops = _ops_part(story.ops, show_all, width)
    if ops is not None:
        parts.append(ops)
    if story.slowest:
        parts.append(_slowest_table(story))
    return Group(*parts)


def _steps_table(story: PassStory, width: int | None) -> Table:
    timed = any(s.seconds is not None for s in story.steps)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True, show_edge=False)
    table.add_column("#", justify="right", no_wrap=True, style="dim")
    table.add_column("pipeline / pass", no_wrap=True, overflow="ellipsis", max_width=width)
    for key in _COUNTS:
        table.add_column(key, justify="right", no_wrap=True)
    if timed:
        table.add_column("time", justify="right", no_wrap=True)
    table.add_column("", overflow="fold")
    previous = story.start
    if story.start is not None:
        row: list[Text | str] = ["", Text("(before optimization)", style="dim")]
        row += [str(getattr(story.start, key)) for key in _COUNTS]
        table.add_row(*row, *([""] if timed else []), "")
    for s in story.steps:
        label = Text.assemble((f"{s.pipeline} / " if s.pipeline else "", "dim"), (s.name, "bold"))
        cells: list[Text | str] = [str(s.index), label]
        for key in _COUNTS:
            now = getattr(s.counts, key)
            before = getattr(previous, key) if previous is not None else None
            cells.append(_with_change(now, before))
        if timed:
            cells.append(fmt_seconds(s.seconds) if s.seconds is not None else DASH)
        cells.append(Text(s.note, style="dim"))
        table.add_row(*cells)
        previous = s.counts
    return table


def _with_change(now: int, before: int | None) -> Text:
    if before is None or now == before:
        return Text(str(now))
    delta = now - before
    style = "green" if delta < 0 else "yellow"
    return Text.assemble(str(now), (f" ({'+' if delta > 0 else '−'}{abs(delta)})", style))


def _kernels_part(story: PassStory, show_all: bool, width: int | None) -> RenderableType:
    made = Counter(k.first_pass or "" for k in story.kernels)
    summary = ", ".join(
        f"{n} by {name}" if name else f"{n} from the start (an op no pass made into a kernel)"
        for name, n in made.most_common()
    )
    head = Text.assemble(
        (f"kernels after optimization ({len(story.kernels)}): ", "bold"), summary or "none"
    )
    shown = story.kernels if show_all else story.kernels[:_KERNELS_SHOWN]
    lines: list[RenderableType] = [head]
    for k in shown:
        name = k.name if width is None else short_name(k.name, 40)
        lines.append(
            Text.assemble(
                "  ", (name, "bold"), (f" [{k.kind}]", "dim"), "  ", kernel_history_text(k)
            )
        )
    if len(shown) < len(story.kernels):
        lines.append(
            Text(f"  … {len(story.kernels) - len(shown)} more (--all, or --json)", style="dim")
        )
    return Group(*lines)


def kernel_history_text(k: KernelHistory) -> Text:
    """`made by fusion (#19) from add.6, add.7, …; grew at fusion_merger (#23)`: a
    kernel's line in a few words."""
    if not k.history:
        return Text("an op no pass made into another kernel", style="dim")
    parts = []
    for e in k.history:
        made_of = ""
        if e.kernels and e.change != "renamed":
            names = ", ".join(e.kernels[:4]) + (
                f", +{len(e.kernels) - 4}" if len(e.kernels) > 4 else ""
            )
            made_of = f" from {names}"
        elif e.kernels:
            made_of = f" (was {e.kernels[0]})"
        parts.append(f"{e.change} by {e.pass_name} (#{e.index}){made_of}")
    return Text("; ".join(parts))


def _ops_part(ops: Sequence[OpHistory], show_all: bool, width: int | None) -> RenderableType | None:
    if not ops:
        return None
    shown = ops if show_all else ops[:_KERNELS_SHOWN]
    never = sum(1 for o in ops if o.left_pass is None)
    lines: list[RenderableType] = [
        Text.assemble(
            (f"ops that run alone ({len(ops)}): ", "bold"),
            f"{never} never shared a kernel, {len(ops) - never} left one",
        )
    ]
    for o in shown:
        name = o.op if width is None else short_name(o.op, width)
        lines.append(Text.assemble("  ", (name, "bold"), f" → {o.kernel}: ", history_text(o)))
    if len(shown) < len(ops):
        lines.append(Text(f"  … {len(ops) - len(shown)} more (--all)", style="dim"))
    return Group(*lines)


def op_history_text(p: Placement, story: PassStory) -> str:
    """What `hloscope ops --history` adds to an op's line: how the kernels it is in came
    to be, and, for an op that runs alone, where it left a fusion; "" for an op in no
    kernel."""
    parts = []
    for name in p.kernels:
        k = story.kernel(name)
        if k is not None:
            parts.append(f"{name}: {kernel_history_text(k).plain}")
    if p.status == ALONE:
        found = next((o for o in story.ops if o.op == p.op.name), None)
        if found is not None:
            parts.append(history_text(found))
    return "; ".join(parts)


def op_history_doc(p: Placement, story: PassStory) -> dict[str, Any]:
    """The `history` of an op in `hloscope ops --json --history`: its kernels' entries
    as in `passes --json` (with `kind`, `first_index`, each event's `index` and `from`),
    and for an op that runs alone `left_pass`, `left_index`, `left_kernel` (null: it
    never shared a kernel)."""
    kernels = [story.kernel(name) for name in p.kernels]
    doc: dict[str, Any] = {"kernels": [_kernel_doc(k, True) for k in kernels if k is not None]}
    if p.status == ALONE:
        found = next((o for o in story.ops if o.op == p.op.name), None)
        if found is not None:
            doc.update(
                left_pass=found.left_pass,
                left_index=found.left_index,
                left_kernel=found.left_kernel,
            )
    return doc


def history_text(o: OpHistory) -> str:
    """Where an op that runs alone left a fusion, or that it never shared a kernel."""
    if o.left_pass is None:
        return "never fused (it never shared a kernel with another op)"
    return f"left {o.left_kernel} at {o.left_pass} (#{o.left_index})"


def _slowest_table(story: PassStory) -> RenderableType:
    total = story.seconds
    table = Table(
        title=f"where compile time goes: {fmt_seconds(total)} in passes (XLA's pass timers)",
        title_justify="left",
        title_style="bold",
        box=None,
        pad_edge=False,
    )
    table.add_column("pass")
    table.add_column("time", justify="right")
    table.add_column("share", justify="right")
    table.add_column("runs", justify="right")
    for p in story.slowest:
        table.add_row(p.name, fmt_seconds(p.seconds), fmt_share(p.seconds, total), str(p.runs))
    return table
