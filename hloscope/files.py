"""Reading files hloscope did not write: regular files only, never past a size limit,
never through a link out of the folder they were found in.

Run folders come from colleagues, CI and bug reports. A name that is a FIFO would block
a reader forever, a link to `/dev/zero` would fill memory; `read_regular` refuses both
before reading a byte. A link `dump/x.txt -> ~/.ssh/id_rsa` would put another file's
text into a report; `inside` tells the loaders which entries to leave alone.
"""

from __future__ import annotations

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
