"""Reading files hloscope did not write: regular files only, never past a size limit,
never through a link out of the folder they were found in.

Run folders come from colleagues, CI and bug reports. A name that is a FIFO would block
a reader forever, a link to `/dev/zero` would fill memory; `read_regular` refuses both
before reading a byte. A link `dump/x.txt -> ~/.ssh/id_rsa` would put another file's
text into a report; `inside` tells the loaders which entries to leave alone.
"""

from __future__ import annotations

import lzma
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "MAX_EXPANSION",
    "TooManyEntries",
    "Walk",
    "decompress_xz",
    "expansion_limit",
    "inside",
    "open_regular",
    "path_order",
    "read_regular",
    "walk",
]

MAX_EXPANSION = 64
"""How many times its own size a compressed file may decompress to. Real dumps and
traces compress 5-20 times (the MaxText archive's HLO protos 5-17 times, JAX's
trace.json.gz about 10); a bomb of zeros compresses thousands of times."""
MIN_EXPANDED = 64 << 20
"""What any compressed file may decompress to, however small it is."""


def read_regular(path: str | Path, limit: int) -> bytes:
    """The bytes of a regular file of at most `limit` bytes.

    The file is opened without blocking (a FIFO does not wait for a writer) and checked
    to be a regular file before anything is read.

    Raises:
        OSError: It is missing, not a regular file, bigger than `limit`, or unreadable;
            the message says which.
    """
    with open_regular(path, limit) as (f, expected):
        # `read(n)` allocates n bytes up front: ask for the size the file has, and read
        # on in steps only if it grew since (never a buffer of `limit` bytes).
        parts = [f.read(expected + 1)]
        size = len(parts[0])
        while size > expected and size <= limit and parts[-1]:
            parts.append(f.read(min(_STEP, limit + 1 - size)))
            size += len(parts[-1])
    if size > limit:
        raise OSError(f"{path} is more than the {limit:,} bytes allowed")
    return parts[0] if len(parts) == 1 else b"".join(parts)


_STEP = 1 << 20


@contextmanager
def open_regular(path: str | Path, limit: int) -> Iterator[tuple[BinaryIO, int]]:
    """A regular file of at most `limit` bytes, open for reading, and its size now.

    Opened without blocking (a FIFO does not wait for a writer) and checked to be a
    regular file before anything is read. The file may still grow while it is read: a
    reader that reads on counts what it gets against `limit` itself.

    Raises:
        OSError: It is missing, not a regular file, bigger than `limit`, or unreadable;
            the message says which.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path} is not a regular file")
        if info.st_size > limit:
            raise OSError(f"{path} is {info.st_size:,} bytes, more than the {limit:,} allowed")
        yield f, info.st_size


def inside(path: str | Path, root: str | Path) -> bool:
    """Whether `path`, with every symlink resolved, is `root` or lies under it.

    A path that cannot be resolved (a loop of links) is not inside.
    """
    try:
        real = Path(os.path.realpath(path, strict=False))
        base = Path(os.path.realpath(root, strict=False))
    except (OSError, ValueError, RuntimeError):
        return False
    return real == base or base in real.parents


def expansion_limit(compressed: int, cap: int) -> int:
    """The most bytes a compressed input of `compressed` bytes is decompressed to: at most
    `MAX_EXPANSION` times its size (`MIN_EXPANDED` for small ones), never past `cap`.
    This keeps a reader's memory a stated multiple of the file it was given."""
    return min(cap, max(MIN_EXPANDED, MAX_EXPANSION * compressed))


def decompress_xz(data: bytes, limit: int) -> bytes:
    """xz data decompressed to at most `limit` bytes (`lzma.decompress` has no bound, and
    a file of kilobytes can expand to gigabytes).

    Concatenated streams are read as `lzma.decompress` reads them, trailing data that is
    not a stream ignored.

    Raises:
        lzma.LZMAError: It is not xz data, or it is truncated.
        ValueError: It decompresses to more than `limit` bytes.
    """
    parts: list[bytes] = []
    size = 0
    while True:
        decompressor = lzma.LZMADecompressor()
        try:
            part = decompressor.decompress(data, max_length=limit + 1 - size)
        except lzma.LZMAError:
            if parts:
                break  # as lzma.decompress: what follows the streams is not one
            raise
        size += len(part)
        parts.append(part)
        if size > limit or (not decompressor.eof and not decompressor.needs_input):
            raise ValueError(f"decompresses to more than the {limit:,} bytes allowed")
        if not decompressor.eof:
            raise lzma.LZMAError("compressed data ended before the end-of-stream marker")
        data = decompressor.unused_data
        if not data:
            break
    return b"".join(parts)


MAX_DEPTH = 32
"""Folder levels `walk` goes below where it starts: a profiler log dir is six deep; a
tree nested hundreds deep is a trap (recursive walks end in RecursionError there)."""
MAX_ENTRIES = 200_000
"""Entries `walk` lists before it gives up (a folder given by mistake: `/`, a home)."""


class TooManyEntries(OSError):
    """A folder holds more entries than a search should list."""


@dataclass
class Walk:
    """What `walk` found below a folder.

    Attributes:
        files: Regular files, sorted (links inside the folder followed).
        folders: Folders, sorted, the starting one left out.
        links_out: Links that lead out of the folder, not followed.
        special: FIFOs, devices and sockets, left alone.
        too_deep: Folders left unsearched below `MAX_DEPTH`.
    """

    files: list[Path] = field(default_factory=list)
    folders: list[Path] = field(default_factory=list)
    links_out: list[Path] = field(default_factory=list)
    special: list[Path] = field(default_factory=list)
    too_deep: int = 0


def path_order(path: Path) -> tuple[str, ...]:
    """The key that sorts paths in the order `Path`s compare (on POSIX: by their parts),
    at C speed: sorting a dump folder's 3,762 paths took 113k `Path.__lt__` calls."""
    return path.parts


def walk(
    root: str | Path,
    *,
    max_depth: int = MAX_DEPTH,
    max_entries: int = MAX_ENTRIES,
    select: Callable[[str], bool] | None = None,
) -> Walk:
    """Every regular file and folder below `root`, without recursion.

    Links are followed only where they stay inside `root`, each folder is entered once
    (a link back up is no loop), nothing below `max_depth` levels is listed, and FIFOs,
    devices and sockets are left out: nothing outside the folder is read or stat'ed.

    Args:
        root: The folder.
        max_depth: How many levels of folders below it are searched.
        max_entries: How many entries it may hold, at most.
        select: The files listed, by name (all by default): a search for a few kinds
            of file in a folder of thousands makes no `Path` of the others.

    Raises:
        TooManyEntries: More than `max_entries` entries.
    """
    base = Path(root)
    found = Walk()
    try:
        st = base.stat()
    except OSError:
        return found
    seen = {(st.st_dev, st.st_ino)}
    stack = [(base, 0)]
    count = 0
    while stack:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            continue
        count += len(entries)
        if count > max_entries:
            raise TooManyEntries(f"{base} holds more than {max_entries:,} files and folders")
        for entry in entries:
            if entry.is_file(follow_symlinks=False):  # the listing's type: no stat
                if select is None or select(entry.name):
                    found.files.append(Path(entry.path))
                continue
            path = Path(entry.path)
            if entry.is_symlink() and not inside(path, base):
                found.links_out.append(path)
                continue
            try:
                info = entry.stat()  # follows a link inside the folder
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                if depth >= max_depth:
                    found.too_deep += 1
                elif (info.st_dev, info.st_ino) not in seen:
                    seen.add((info.st_dev, info.st_ino))
                    found.folders.append(path)
                    stack.append((path, depth + 1))
            elif stat.S_ISREG(info.st_mode):
                if select is None or select(entry.name):
                    found.files.append(path)
            else:
                found.special.append(path)
    found.files.sort(key=path_order)
    found.folders.sort(key=path_order)
    found.links_out.sort(key=path_order)
    return found
