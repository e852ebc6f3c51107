"""XLA's own fusion decisions, where the dump has them: the GPU priority-fusion log.

XLA's GPU priority-fusion pass can write its decisions next to the HLO dump as
`module_NNNN.<name>.priority_fusion_dump.txt`: a `FusionProcessDumpProto` in protobuf
text format, one `fusion_steps { ... }` per decision (`fusion`, `update_priority`,
`producer_ineligible` with a `reason`). This module reads that text format generically
(the field names are in the file, so a step kind added upstream is kept, not dropped)
and answers "why did XLA not fuse this producer?" with XLA's own words. It never
guesses: without the file there are no reasons.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hloscope.errors import HloParseError

_TOKEN = re.compile(
    r"\s*(?:(?P<close>\})|(?P<key>[A-Za-z_][\w.]*)\s*(?P<sep>:\s*|\{|:\s*\{)"
    r'|(?P<comment>#[^\n]*)|(?P<str>"(?:[^"\\]|\\.)*")|(?P<atom>[^\s{}"]+))'
)

SUFFIX = ".priority_fusion_dump.txt"


@dataclass(frozen=True)
class FusionDecisions:
    """What the priority-fusion log says about producers.

    Attributes:
        ineligible: Producer instruction name -> the reasons XLA gave for not fusing it.
        fused: (producer, consumer, fusion name) for every fusion step, in order.
        step_kinds: How many steps of each kind the log holds.

    Example:
        >>> dump = hloscope.load_run("tests/data/gpu_fusion_log").main()
        >>> decisions = dump.load_fusion_decisions()
        >>> len(decisions.fused) > 0, len(decisions.ineligible) > 0
        (True, True)
    """

    ineligible: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    fused: tuple[tuple[str, str, str], ...] = ()
    step_kinds: Mapping[str, int] = field(default_factory=dict)

    def reasons(self, names: list[str] | tuple[str, ...]) -> list[str]:
        """XLA's reasons for any of these instruction names, without repeats."""
        out: list[str] = []
        for name in names:
            for reason in self.ineligible.get(name, ()):
                if reason not in out:
                    out.append(reason)
        return out


def parse_textproto(text: str, path: str | None = None) -> dict[str, list[Any]]:
    """Parse protobuf text format into nested dicts of lists (every field repeated).

    Raises:
        HloParseError: The text is not protobuf text format.
    """
    root: dict[str, list[Any]] = {}
    stack = [root]
    pos, n = 0, len(text)
    pending: str | None = None
    while pos < n:
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip() == "":
                break
            line = text.count("\n", 0, pos) + 1
            raise HloParseError(
                "not protobuf text format", path=path, line=line, text=text[pos : pos + 40]
            )
        pos = m.end()
        if m.group("comment"):
            continue
        if m.group("close"):
            if len(stack) == 1:
                raise HloParseError("unbalanced '}'", path=path, line=text.count("\n", 0, pos) + 1)
            stack.pop()
        elif m.group("key"):
            key, sep = m.group("key"), m.group("sep")
            if "{" in sep:
                child: dict[str, list[Any]] = {}
                stack[-1].setdefault(key, []).append(child)
                stack.append(child)
            else:
                pending = key
        else:
            if pending is None:
                line = text.count("\n", 0, pos) + 1
                raise HloParseError(
                    "value without a field name", path=path, line=line, text=m.group(0).strip()
                )
            raw = m.group("str")
            value: Any = _unquote(raw) if raw is not None else _atom(m.group("atom"))
            stack[-1].setdefault(pending, []).append(value)
            pending = None
    if len(stack) != 1:
        raise HloParseError("unclosed '{' at end of file", path=path)
    return root


def read_decisions(path: Path) -> FusionDecisions:
    """Read a `*.priority_fusion_dump.txt` file."""
    doc = parse_textproto(path.read_text(encoding="utf-8", errors="replace"), str(path))
    ineligible: dict[str, list[str]] = {}
    fused: list[tuple[str, str, str]] = []
    kinds: dict[str, int] = {}
    for step in doc.get("fusion_steps", []):
        for kind, entries in step.items():
            kinds[kind] = kinds.get(kind, 0) + len(entries)
            for entry in entries:
                if kind == "producer_ineligible":
                    name = _first(entry, "producer_name")
                    reason = _first(entry, "reason") or "ineligible (no reason given)"
                    ineligible.setdefault(name, [])
                    if reason not in ineligible[name]:
                        ineligible[name].append(reason)
                elif kind == "fusion":
                    fused.append(
                        (
                            _first(entry, "producer_name"),
                            _first(entry, "consumer_name"),
                            _first(entry, "fusion_name"),
                        )
                    )
    return FusionDecisions({k: tuple(v) for k, v in ineligible.items()}, tuple(fused), kinds)


def find_log(after_file: Path | None) -> Path | None:
    """The priority-fusion log beside an after-optimization dump file, if XLA wrote one.

    `module_0008.jit_f.sm_90_gpu_after_optimizations.txt` has its log in
    `module_0008.jit_f.priority_fusion_dump.txt`.
    """
    if after_file is None:
        return None
    prefix = after_file.name.rsplit(".", 2)[0]
    candidate = after_file.parent / (prefix + SUFFIX)
    return candidate if candidate.is_file() else None


def _first(entry: Any, key: str) -> str:
    if isinstance(entry, dict):
        values = entry.get(key) or [""]
        return str(values[0])
    return ""


def _unquote(raw: str) -> str:
    body = raw[1:-1]
    if "\\" not in body:
        return body
    return body.encode("latin-1", "backslashreplace").decode("unicode_escape")


def _atom(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text
