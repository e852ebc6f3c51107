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
from pathlib import Path

__all__ = ["inside", "read_regular"]


def read_regular(path: str | Path, limit: int) -> bytes:
    """The bytes of a regular file of at most `limit` bytes.

    The file is opened without blocking (a FIFO does not wait for a writer) and checked
    to be a regular file before anything is read.

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
        # `read(n)` allocates n bytes up front: ask for the size the file has, and read
        # on in steps only if it grew since (never a buffer of `limit` bytes).
        parts = [f.read(info.st_size + 1)]
        size = len(parts[0])
        while size > info.st_size and size <= limit and parts[-1]:
            parts.append(f.read(min(_STEP, limit + 1 - size)))
            size += len(parts[-1])
    if size > limit:
        raise OSError(f"{path} is more than the {limit:,} bytes allowed")
    return parts[0] if len(parts) == 1 else b"".join(parts)


_STEP = 1 << 20


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
