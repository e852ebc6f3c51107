"""HLO text as it comes in, before it is parsed: dump files read as text (regular files
only, size-capped, UTF-8, binary refused) and split as XLA splits them, into modules at
FileCheck's `// -----` markers and into lines at newlines only.
"""

from __future__ import annotations

import re
from pathlib import Path

from hloscope.errors import HloParseError
from hloscope.files import read_regular

__all__ = [
    "MAX_DUMP_BYTES",
    "SPLIT_MARKER",
    "read_dump",
    "read_text",
    "split_lines",
    "split_modules",
]

SPLIT_MARKER = "// -----"


def split_modules(text: str) -> list[tuple[int, str]]:
    """Split text holding several modules (FileCheck's `// -----` separators).

    Only a line that is exactly the marker (blanks around it aside) separates modules:
    banners such as `// ------------` are comments. MLIR's `--split-input-file`
    (mlir/lib/Support/ToolUtilities.cpp) warns of such a line as a "near miss with file
    split marker" and does not split there either.

    Returns:
        `(first_line, chunk_text)` pairs, one per chunk that contains `HloModule`.
    """
    chunks: list[tuple[int, str]] = []
    start, line = 0, 1  # where the current chunk starts: offset and line number
    for m in _SPLIT_LINE.finditer(text):
        chunks.append((line, text[start : m.start()]))
        line += text.count("\n", start, m.end()) + 1
        start = m.end() + 1
    # Slices, not a list of lines: a file without markers comes back as itself, uncopied.
    chunks.append((line, text[start:] if start else text))
    return [(s, c) for s, c in chunks if "HloModule" in c]


# A line that is the split marker alone, blanks around it aside (`$` stops at a newline).
_SPLIT_LINE = re.compile(rf"^[^\S\n]*{re.escape(SPLIT_MARKER)}[^\S\n]*$", re.M)


def split_lines(text: str, keepends: bool = False) -> list[str]:
    """Split on newlines only, as XLA does.

    `str.splitlines` also splits on U+2028, form feeds and other separators, which may
    appear inside quoted metadata (file paths, op names).
    """
    lines = text.replace("\r\n", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()  # a final newline ends the last line; it does not start another
    return [line + "\n" for line in lines] if keepends else lines


MAX_DUMP_BYTES = 8 * 1024**3
"""Biggest dump file read (XLA's largest real modules are a few hundred MB)."""


def read_dump(path: str | Path, what: str) -> bytes:
    """A dump file's bytes: a regular file only (a FIFO does not block), size-capped.

    Args:
        path: The file.
        what: What it should be, for the message (`an HLO text file`).

    Raises:
        HloParseError: Missing, a folder, not a regular file, too big or unreadable.
    """
    try:
        return read_regular(path, MAX_DUMP_BYTES)
    except FileNotFoundError:
        raise HloParseError("no such file", path=str(path)) from None
    except IsADirectoryError:
        raise HloParseError(f"is a directory, not {what}", path=str(path)) from None
    except OSError as e:
        raise HloParseError(f"cannot read: {e.strerror or e}", path=str(path)) from None


def read_text(path: str | Path) -> str:
    data = read_dump(path, "an HLO text file")
    nul = data.find(b"\0", 0, 65536)
    if nul >= 0:
        line, column = data.count(b"\n", 0, nul) + 1, nul - data.rfind(b"\n", 0, nul)
        raise HloParseError(
            "binary data, not HLO text (a .pb dump?)", path=str(path), line=line, column=column
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        line_start = data.rfind(b"\n", 0, e.start) + 1
        column = len(data[line_start : e.start].decode("utf-8", "replace")) + 1
        raise HloParseError("not UTF-8 text", path=str(path), line=line, column=column) from None
