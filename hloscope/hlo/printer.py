"""HLO text printed from the parsed model, as XLA prints it.

The parsed module keeps every instruction's name, shape, opcode, operands and attributes
verbatim, so its text can be printed again without the file it came from: the HTML
page shows each kernel's HLO this way, for text dumps and binary `HloProto`s alike.
What is printed is what XLA's parser reads back as the same module (a test checks it
with XLA's own parser); `metadata={...}` is left out unless asked for, since pages show
source ops and lines on their own.
"""

from __future__ import annotations

from hloscope.hlo.lexical import Attributes
from hloscope.hlo.model import Computation, HloModule, Instruction

__all__ = ["computation_text", "instruction_text", "module_text"]

# Opcodes whose parentheses hold a literal (a constant, a parameter number), not operands.
_LITERAL_OPCODES = frozenset(
    {"constant", "parameter", "iota", "rng-get-and-update-state", "partition-id", "replica-id"}
)


def instruction_text(inst: Instruction, *, metadata: bool = False) -> str:
    """One instruction as XLA prints it: `[ROOT ]%name = shape opcode(operands), attrs`.

    Args:
        inst: The instruction.
        metadata: Keep its `metadata={...}`.

    Example:
        >>> module = parse_module("HloModule m\\nENTRY e {\\n  ROOT p = f32[2]{0} parameter(0)\\n}")
        >>> instruction_text(module.entry.root)
        'ROOT %p = f32[2]{0} parameter(0)'
    """
    if inst.opcode in _LITERAL_OPCODES or (inst.literal and not inst.operands):
        inner = inst.literal
    else:
        inner = ", ".join(f"%{o}" for o in inst.operands)
    given = inst.attributes  # read, not kept: a page prints every fused instruction
    pairs = given.pairs() if isinstance(given, Attributes) else given.items()
    attrs = "".join(f", {k}={v}" for k, v in pairs if metadata or k != "metadata")
    root = "ROOT " if inst.is_root else ""
    return f"{root}%{inst.name} = {inst.shape.text} {inst.opcode}({inner}){attrs}"


def computation_text(comp: Computation, *, metadata: bool = False, indent: str = "  ") -> str:
    """One computation as XLA prints it: its signature, its instructions, its brace.

    Args:
        comp: The computation.
        metadata: Keep each instruction's `metadata={...}`.
        indent: Put before each instruction.
    """
    params = ", ".join(f"{p.name}: {p.shape.text}" for p in comp.parameters)
    head = f"{'ENTRY ' if comp.is_entry else ''}%{comp.name} ({params}) -> "
    body = "\n".join(indent + instruction_text(i, metadata=metadata) for i in comp.instructions)
    root = comp.root.shape.text if comp.instructions else "()"
    return f"{head}{root} {{\n{body}\n}}"


def module_text(module: HloModule, *, metadata: bool = False) -> str:
    """A whole module as XLA prints it (header attributes kept, no `StackFrames` table,
    so metadata is off by default: its frame ids would point at nothing)."""
    attrs = "".join(f", {k}={v}" for k, v in module.attributes.items())
    comps = "\n\n".join(computation_text(c, metadata=metadata) for c in module.computations)
    return f"HloModule {module.name}{attrs}\n\n{comps}\n"
