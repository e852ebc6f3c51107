"""XLA_FLAGS for a dump: the user's flags kept, the dump flags hloscope needs added.

`merge_xla_flags` is a pure function: it returns the merged value and one line per user
flag that had to give way, so the command can say so once before the script starts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MergedFlags", "merge_xla_flags", "split_flags"]

# XLA splits XLA_FLAGS on whitespace; a value may be quoted to hold spaces.
_TOKEN = re.compile(r"""(?:[^\s"']+|"[^"]*"|'[^']*')+""")
_TRUE = ("", "true", "1")


@dataclass(frozen=True)
class MergedFlags:
    """The XLA_FLAGS value for the child, and what changed in the user's flags.

    Attributes:
        value: The merged XLA_FLAGS.
        user: The user's XLA_FLAGS as found (None when unset).
        conflicts: One line per user flag replaced by a different value.
    """

    value: str
    user: str | None
    conflicts: tuple[str, ...]


def split_flags(text: str) -> list[str]:
    """Split an XLA_FLAGS value into flags the way XLA does (whitespace, quotes kept)."""
    return _TOKEN.findall(text)


def merge_xla_flags(
    user: str | None, dump_dir: Path, module_re: str | None, pass_re: str | None = None
) -> MergedFlags:
    """Merge the user's XLA_FLAGS with the flags that make XLA dump HLO text.

    Args:
        user: The XLA_FLAGS of the environment, or None.
        dump_dir: Where XLA must dump (`--xla_dump_to`).
        module_re: Dump only modules whose name matches (`--xla_dump_hlo_module_re`);
            None keeps the user's own filter, if any.
        pass_re: Also dump the module after each pass whose name matches
            (`--xla_dump_hlo_pass_re`; `.*`: every pass that changed it); None keeps
            the user's own, if any.

    Returns:
        The merged value: the user's flags in their order, minus those hloscope must
        set, then hloscope's flags.
    """
    ours = {"xla_dump_to": str(dump_dir), "xla_dump_hlo_as_text": "true"}
    if module_re is not None:
        ours["xla_dump_hlo_module_re"] = module_re
    if pass_re is not None:
        ours["xla_dump_hlo_pass_re"] = pass_re
    kept: list[str] = []
    conflicts: list[str] = []
    for token in split_flags(user or ""):
        name, has_value, value = token.lstrip("-").partition("=")
        if not token.startswith("-") or name not in ours:
            kept.append(token)
            continue
        value = _unquote(value) if has_value else ""
        if name == "xla_dump_hlo_as_text":
            if value.lower() not in _TRUE:
                conflicts.append(f"{token} (hloscope needs HLO text dumps)")
        elif value != ours[name]:
            conflicts.append(f"{token} (hloscope sets --{name}={_quote(ours[name])})")
    added = [
        f"--xla_dump_to={_quote(ours['xla_dump_to'])}",
        "--xla_dump_hlo_as_text",
    ]
    if module_re is not None:
        added.append(f"--xla_dump_hlo_module_re={_quote(module_re)}")
    if pass_re is not None:
        added.append(f"--xla_dump_hlo_pass_re={_quote(pass_re)}")
    return MergedFlags(" ".join([*kept, *added]), user, tuple(conflicts))


def _quote(value: str) -> str:
    return f'"{value}"' if re.search(r"\s", value) else value


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value
