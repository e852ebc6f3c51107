"""Results kept between commands: small keyed JSON files in a run folder, and where the
per-user cache lives.

Both caches of a run folder use this one store: the timings computed from a profile
(`hloscope.timing.cache`, `.hloscope-timings.json`) and the `report --json` document
(`hloscope.cli.cached`, `.hloscope-report.json`). A store file holds
`{"version": STORE_VERSION, "entries": {key: value}}`, oldest entry first and at most a
few; a key is a digest of everything its value depends on (`digest`), so a key that is
found holds a value that is still right. The file is input hloscope did not necessarily
write (run folders are shared): it is read with `files.read_regular` under a size cap and
never through a link, and anything else (garbage, a FIFO, a link, a file too big) reads
as empty, so the caller recomputes. Writes go to a temporary file renamed over the old
one; a folder that cannot be written loses the cache, never the result.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hloscope.files import inside, read_regular

__all__ = [
    "PEAKS_FILE",
    "REPORT_CACHE",
    "STORE_VERSION",
    "TIMINGS_CACHE",
    "TooManyFiles",
    "digest",
    "file_stamps",
    "keep",
    "lookup",
    "machine_key",
    "read_entries",
    "tree_stamps",
    "user_cache_dir",
]

STORE_VERSION = 1
"""The layout of a store file; a file of another version reads as empty."""

TIMINGS_CACHE = ".hloscope-timings.json"
"""Timings computed from a run's profile (`hloscope.timing.cache`)."""
REPORT_CACHE = ".hloscope-report.json"
"""`report --json` documents of a run (`hloscope.cli.cached`)."""
PEAKS_FILE = "peaks.json"
"""This machine's measured CPU roofs, in the user cache dir (`timing.roofline.cpu_peaks`)."""

_PREFIX = ".hloscope-"  # what the store files (and their temporary files) are named


def digest(doc: Any) -> str:
    """The key of a JSON document: a SHA-256 of it with sorted keys."""
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def read_entries(path: Path, limit: int) -> dict[str, Any]:
    """The entries of a store file, oldest first; {} when it is absent, a link, not a
    regular file, over `limit` bytes, not a store file or of another version."""
    try:
        if path.is_symlink():
            return {}
        doc = json.loads(read_regular(path, limit))
    except (OSError, ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return {}
    if not isinstance(doc, dict) or doc.get("version") != STORE_VERSION:
        return {}
    entries = doc.get("entries")
    return dict(entries) if isinstance(entries, dict) else {}


def lookup(path: Path, key: str, limit: int) -> Any | None:
    """The value kept under `key` in a store file, or None."""
    return read_entries(path, limit).get(key)


def keep(path: Path, key: str, value: Any, *, limit: int, max_entries: int) -> None:
    """Keep `value` under `key` as the newest entry of a store file.

    The oldest entries go when there are more than `max_entries`, or while the file
    would be bigger than `limit` (a value alone over it is not kept). Atomic: a reader
    sees the old file or the new one. An unwritable folder keeps nothing, silently.
    """
    entries = read_entries(path, limit)
    entries.pop(key, None)
    entries[key] = value
    while len(entries) > max_entries:
        entries.pop(next(iter(entries)))
    text = json.dumps({"version": STORE_VERSION, "entries": entries})
    while len(text.encode()) > limit and len(entries) > 1:
        entries.pop(next(iter(entries)))
        text = json.dumps({"version": STORE_VERSION, "entries": entries})
    if len(text.encode()) > limit:
        return
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, "utf-8")
        tmp.replace(path)  # replaces a link or a FIFO in the way, never what it names
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


def file_stamps(root: Path, files: Iterable[Path]) -> list[list[Any]]:
    """`[name, size, mtime_ns]` of each file, named relative to `root` where inside it.

    Raises:
        OSError: A file cannot be stat'ed.
    """
    out = []
    for f in files:
        st = f.stat()
        try:
            name = f.relative_to(root).as_posix()
        except ValueError:
            name = str(f)
        out.append([name, st.st_size, st.st_mtime_ns])
    return out


class TooManyFiles(OSError):
    """A folder holds more files than a key should stat."""


def tree_stamps(folder: Path, *, max_files: int = 200_000) -> list[list[Any]]:
    """`[name, file type, size, mtime_ns]` of every file under a folder (named relative
    to it), sorted: what a result computed from the folder's files depends on.

    Links inside the folder are followed (what a link names is what a reader reads),
    each folder once; a link out of it, or a broken one, counts by its own stamp: the
    readers of a run never follow those, and nothing outside it is stat'ed (a link to
    `/` would otherwise walk the whole disk). The store's own files are left out.

    Raises:
        OSError: A folder cannot be listed, or it holds more than `max_files` files
            (`TooManyFiles`).
    """
    out: list[list[Any]] = []
    root = folder.stat()
    seen = {(root.st_dev, root.st_ino)}
    stack = [(folder, "")]
    while stack:
        here, prefix = stack.pop()
        with os.scandir(here) as entries:
            for entry in entries:
                if entry.name.startswith(_PREFIX):
                    continue
                follow = not entry.is_symlink() or inside(entry.path, folder)
                try:
                    st = entry.stat(follow_symlinks=follow)
                except OSError:
                    st = entry.stat(follow_symlinks=False)
                name = prefix + entry.name
                if stat.S_ISDIR(st.st_mode):
                    if (st.st_dev, st.st_ino) not in seen:  # a link back up: once is enough
                        seen.add((st.st_dev, st.st_ino))
                        stack.append((Path(entry.path), name + "/"))
                    continue
                out.append([name, stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns])
                if len(out) > max_files:
                    raise TooManyFiles(f"{folder} holds more than {max_files:,} files")
    out.sort()
    return out


def user_cache_dir() -> Path:
    """Where per-machine results live (`$HLOSCOPE_CACHE_DIR`, else the XDG cache)."""
    explicit = os.environ.get("HLOSCOPE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hloscope"


def machine_key() -> str:
    """This machine: host name, processor and core count (what a probe is kept by)."""
    return f"{platform.node()}|{platform.processor() or platform.machine()}|{os.cpu_count()}"
