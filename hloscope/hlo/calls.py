"""The call structure of a module: which computation calls which.

The parser uses it to read each instruction's called computations from its attributes
and to reject call cycles (XLA's own parser rejects them, and every walk of the analyses
relies on there being none).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from hloscope.hlo.lexical import CALLED_NAME
from hloscope.hlo.model import CalledComputation, Instruction
from hloscope.hlo.opcodes import CALLED_COMPUTATION_ATTRIBUTES

__all__ = ["called_computations", "called_in", "calls_of", "find_cycle"]


def called_computations(attributes: Mapping[str, str]) -> tuple[CalledComputation, ...]:
    """The computations an instruction's attributes name (`calls=`, `to_apply=`, `body=`,
    `branch_computations={...}`, ...), each with its role."""
    return tuple(
        call
        for role, value in attributes.items()
        if role in CALLED_COMPUTATION_ATTRIBUTES
        for call in called_in(role, value)
    )


def called_in(role: str, value: str) -> tuple[CalledComputation, ...]:
    """The computations one attribute `role=value` names (`calls=%f`,
    `branch_computations={%a, %b}`)."""
    make = CalledComputation._make
    return tuple([make(role, callee) for callee in CALLED_NAME.findall(value)])


def find_cycle(
    call_sites: Mapping[str, list[Instruction]],
) -> tuple[list[str], Instruction] | None:
    """A call cycle as `([a, b, ..., a], the call in the last caller)`, or None.

    `call_sites` maps each computation that calls others to its calling instructions. An
    iterative depth-first search visits each computation and call once, so the check is
    linear in the module size, and no recursion depth depends on the input.
    """
    done: set[str] = set()
    for root in call_sites:
        if root in done:
            continue
        on_path: dict[str, int] = {root: 0}
        path = [root]
        edges = [calls_of(call_sites.get(root, ()))]
        while edges:
            step = next(edges[-1], None)
            if step is None:
                finished = path.pop()
                del on_path[finished]
                done.add(finished)
                edges.pop()
                continue
            callee, inst = step
            if callee in on_path:
                return [*path[on_path[callee] :], callee], inst
            if callee in done:
                continue
            on_path[callee] = len(path)
            path.append(callee)
            edges.append(calls_of(call_sites.get(callee, ())))
    return None


def calls_of(callers: Iterable[Instruction]) -> Iterator[tuple[str, Instruction]]:
    """`(callee, calling instruction)` for every call the instructions make."""
    return ((c.name, inst) for inst in callers for c in inst.called)
