"""Mutations of real HLO modules and the parser's contract, shared by the fuzz test
(tests/hlo/test_fuzz.py) and the longer run (benchmarks/fuzz_bench.py, through
tests/fuzz/readers.py, beside the other readers).

The contract: any text gives a model or an `HloParseError` that names a line and a
column, never another exception, and within a time bound; a model then goes through
the fusion analysis, provenance and the networkx view without an exception.
"""

from __future__ import annotations

import random
import re
import signal
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from hloscope.errors import HloParseError
from hloscope.hlo.parser import parse_module
from hloscope.hlo.text import split_modules

_TOKEN = re.compile(r"[A-Za-z_][\w.\-]*|[0-9]+|\s+|.", re.S)

# Bytes and snippets that each bug class of issue 14 was found with.
_HOSTILE = [
    '"', "\\", "{", "}", "(", ")", "[", "]", ",", "=", "%", "/*", "*/", "//", "\n", "²",
    "٣", "\\xZZ", "\\N{DASH}", "\\ud800", "\\777", "9" * 400, "1" + "0" * 310,
    "// -----", "// ----------", "/*index=5*/", "ROOT ", "ENTRY ", "{" * 60, "[" * 60,
    "a" * 5000, " " * 5000, '\\"' * 500, "/*a" * 500, "T(" * 500,
]  # fmt: skip


class Timeout(Exception):
    """Raised in the test process when one input runs past its time bound."""


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise `Timeout` in the main thread when the block runs longer than `seconds`.

    `re` checks for signals while it matches, so this also stops a runaway regex.
    """

    def expired(signum: int, frame: object) -> None:
        raise Timeout(f"over {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def seed_modules(folders: list[Path], max_chars: int) -> list[str]:
    """Module texts from `*.hlo` and `*.txt` files under the folders, each chunk of a
    `// -----` file on its own, no longer than `max_chars`, sorted for repeatability."""
    seeds: list[str] = []
    for folder in folders:
        if not folder.is_dir():
            continue
        files = sorted(p for ext in ("*.hlo", "*.txt") for p in folder.rglob(ext))
        for path in files:
            try:
                text = path.read_text()
            except (OSError, UnicodeDecodeError):
                continue
            seeds.extend(c for _, c in split_modules(text) if len(c) <= max_chars)
    return seeds


def mutate(text: str, rng: random.Random) -> str:
    """One to three random byte-wise or token-wise edits of `text`."""
    for _ in range(rng.randint(1, 3)):
        text = rng.choice(_MUTATORS)(text, rng)
    return text


def _byte_edit(text: str, rng: random.Random) -> str:
    """Flip, insert or delete raw bytes; invalid UTF-8 is read back as a caller of the
    library might (`surrogateescape`), so lone surrogates reach the parser too."""
    data = bytearray(text.encode("utf-8", "surrogateescape"))
    if not data:
        return text
    at = rng.randrange(len(data))
    kind = rng.random()
    if kind < 0.4:
        data[at] = rng.randrange(256)
    elif kind < 0.7:
        data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
    else:
        del data[at : at + rng.randint(1, 64)]
    return data.decode("utf-8", "surrogateescape")


def _insert_hostile(text: str, rng: random.Random) -> str:
    at = rng.randrange(len(text) + 1)
    return text[:at] + rng.choice(_HOSTILE) + text[at:]


def _token_edit(text: str, rng: random.Random) -> str:
    """Delete, duplicate or swap tokens, or put one token of the module in place of
    another (a computation name for another makes missing callees and cycles)."""
    tokens = _TOKEN.findall(text)
    if len(tokens) < 2:
        return text
    i, j = rng.randrange(len(tokens)), rng.randrange(len(tokens))
    kind = rng.random()
    if kind < 0.25:
        del tokens[i]
    elif kind < 0.5:
        tokens.insert(i, tokens[j])
    elif kind < 0.75:
        tokens[i], tokens[j] = tokens[j], tokens[i]
    else:
        words = [t for t in tokens if t[:1].isalpha()]
        if words:
            old, new = rng.choice(words), rng.choice(words)
            tokens = [new if t == old and rng.random() < 0.5 else t for t in tokens]
    return "".join(tokens)


def _line_edit(text: str, rng: random.Random) -> str:
    """Copy, drop or move whole lines (duplicate names, truncation, use before def)."""
    lines = text.split("\n")
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    kind = rng.random()
    if kind < 0.4:
        lines.insert(i, lines[j])
    elif kind < 0.7:
        del lines[i]
    else:
        lines.insert(i, lines.pop(j))
    return "\n".join(lines)


def _number_edit(text: str, rng: random.Random) -> str:
    """Put a hostile number in place of one number of the text."""
    spots = [m.span() for m in re.finditer(r"[0-9]+", text)]
    if not spots:
        return text
    a, b = rng.choice(spots)
    number = rng.choice(["²", "٣", "-1", "9" * 400, "9" * 5000, "1" + "0" * 310, "0x1F", "1_0"])
    return text[:a] + number + text[b:]


_MUTATORS: list[Callable[[str, random.Random], str]] = [
    _byte_edit,
    _insert_hostile,
    _insert_hostile,
    _token_edit,
    _token_edit,
    _line_edit,
    _number_edit,
]


@dataclass
class Outcome:
    """What one input did: `parsed`, `rejected` (an HloParseError), or a violation."""

    kind: str
    seconds: float
    detail: str = ""


def check_contract(text: str, hard_limit: float) -> Outcome:
    """Run `text` through the parser and, when it parses, the analyses that read the
    model. Violations: another exception, an error without line and column, a run
    past `hard_limit` seconds."""
    from hloscope.analysis.fusion import analyze_module
    from hloscope.analysis.provenance import trace
    from hloscope.hlo.graph import call_graph, to_networkx

    t0 = time.perf_counter()
    try:
        with deadline(hard_limit):
            try:
                module = parse_module(text, path="fuzz.hlo")
            except HloParseError as e:
                if e.line < 1 or e.column < 1:
                    return Outcome("violation", time.perf_counter() - t0, f"no line/column: {e}")
                str(e).encode("utf-8")  # printable
                return Outcome("rejected", time.perf_counter() - t0)
            analysis = analyze_module(module)
            trace(module, analysis, before=module)
            to_networkx(module)
            call_graph(module)
    except Timeout:
        return Outcome("violation", time.perf_counter() - t0, f"over {hard_limit} s")
    except Exception:  # the contract under test: nothing else may escape
        return Outcome("violation", time.perf_counter() - t0, traceback.format_exc(limit=6))
    return Outcome("parsed", time.perf_counter() - t0)
