"""Results kept between commands: small keyed JSON files in a run folder, and where the
per-user cache lives.

Both caches of a run folder use this one store: the timings computed from a profile
(`hloscope.timing.cache`, `.hloscope-timings.json`) and the `report --json` document
(`hloscope.cli.cached`, `.hloscope-report.json`). A store file holds
`{"version": STORE_VERSION, "entries": {key: value}}`, oldest entry first and at most a
few. A key (`entry_key`) is a keyed hash (HMAC-SHA256, with a secret kept in the user's
cache folder) of everything its value depends on, files by the SHA-256 of their content
(`content_digest`, `user_cache.tree_digests`), never by names, sizes and times, and each value is
signed with its key: a key that is found holds a value that is still right, and a value
someone else wrote or edited (a forged file, a run folder from a colleague) is never
found, only recomputed. The file is input hloscope did
not necessarily write: it is read with `files.read_regular` under a size cap and never
through a link, and anything else (garbage, a FIFO, a link, a file too big) reads as
empty. Writes go to a temporary file renamed over the old one; a folder that cannot be
written loses the cache, never the result.

A new cache kept in a run folder takes four calls (as `timing.cache` does):

    doc = {"what": "my-analysis", "version": 1, "options": {...},
           "inputs": [[name, content_digest(path, MAX_HASHED_BYTES)] for ...]}
    key = entry_key(doc)                     # None: no secret here, compute uncached
    value = lookup(run / FILE, key, limit)   # None: absent, forged, stale or unreadable
    if value is None:                        # (check a value found as any input: it
        value = compute()                    #  is JSON from a file, signed or not)
        keep(run / FILE, key, value, limit=limit, max_entries=4)

Name files in `doc` by `content_digest` (one file) or `user_cache.tree_digests` of
`tree_stats` (a folder), never by stamps alone, and put in everything else the value
depends on (options, the version of its shape, hloscope's own code where that matters). Store files are named
`.hloscope-*.json`, so that `tree_stats` of the run leaves them out.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import platform
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hloscope.files import inside, open_regular, read_regular

__all__ = [
    "MAX_HASHED_BYTES",
    "PEAKS_FILE",
    "REPORT_CACHE",
    "STORE_VERSION",
    "TIMINGS_CACHE",
    "TooManyFiles",
    "code_stamps",
    "content_digest",
    "digest",
    "entry_key",
    "file_stamps",
    "keep",
    "lookup",
    "machine_key",
    "probe_stamp",
    "read_entries",
    "signature",
    "signer",
    "stat_stamps",
    "tree_stats",
    "user_cache_dir",
]

STORE_VERSION = 2
"""The layout of a store file; a file of another version reads as empty. 2: each entry
is `{"value": ..., "mac": ...}`, the value signed with its key (`_seal`)."""

TIMINGS_CACHE = ".hloscope-timings.json"
"""Timings computed from a run's profile (`hloscope.timing.cache`)."""
REPORT_CACHE = ".hloscope-report.json"
"""`report --json` documents of a run (`hloscope.cli.cached`)."""
PEAKS_FILE = "peaks.json"
"""This machine's measured CPU roofs, in the user cache dir (`timing.roofline.cpu_peaks`)."""

_PREFIX = ".hloscope-"  # what the store files (and their temporary files) are named


def digest(doc: Any) -> str:
    """A SHA-256 of a JSON document with sorted keys (a fingerprint, not a store key:
    see `entry_key`)."""
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


_KEY_FILE = "store.key"
_secrets: dict[str, bytes] = {}  # by key file: read once per process


def entry_key(doc: Any) -> str | None:
    """The key a value computed from `doc` is kept under: an HMAC-SHA256 of the document
    with this user's secret, so that only this user's hloscope writes keys it will find.
    `doc` names files by their content (`content_digest`, `user_cache.tree_digests`). None where no
    secret can be kept (no writable cache folder): then nothing is cached."""
    secret = _user_secret()
    if secret is None:
        return None
    text = json.dumps(doc, sort_keys=True).encode()
    return hmac.new(secret, text, hashlib.sha256).hexdigest()


def _user_secret() -> bytes | None:
    """32 random bytes in the user's cache folder, made on first use, readable by the
    user only; None where it cannot be made, or the file found is not that."""
    path = user_cache_dir() / _KEY_FILE
    if str(path) in _secrets:
        return _secrets[str(path)]
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(secrets.token_bytes(32))
        info = os.lstat(path)
        getuid = getattr(os, "getuid", None)
        if not stat.S_ISREG(info.st_mode) or info.st_mode & 0o077:
            return None  # a link, or readable by others: anyone could forge keys
        if getuid is not None and info.st_uid != getuid():
            return None
        value = read_regular(path, 64)
    except OSError:
        return None
    if len(value) != 32:
        return None
    _secrets[str(path)] = value
    return value


_CHUNK = 1 << 20


def content_digest(path: Path, limit: int) -> str:
    """The SHA-256 of a regular file's content, read in steps (never held whole).

    The file is opened without blocking and checked to be a regular file first: a
    FIFO or a device is refused, not read.

    Raises:
        OSError: Missing, not a regular file, over `limit` bytes, or unreadable.
    """
    h = hashlib.sha256()
    size = 0
    with open_regular(path, limit) as (f, _):
        while chunk := f.read(_CHUNK):
            size += len(chunk)
            if size > limit:
                raise OSError(f"{path} is more than the {limit:,} bytes allowed")
            h.update(chunk)
    return h.hexdigest()


# Files of a run are hashed up to this size each (profiles of long GPU runs reach GBs).
MAX_HASHED_BYTES = 16 << 30


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
    """The value kept under `key` in a store file, or None, also when its signature does
    not match: a value edited in place under a key it did not earn is never returned."""
    entry = read_entries(path, limit).get(key)
    if not isinstance(entry, dict) or "value" not in entry:
        return None
    seal = _seal(key, entry["value"])
    if seal is None or not hmac.compare_digest(str(entry.get("mac", "")), seal):
        return None
    return entry["value"]


def _seal(key: str, value: Any) -> str | None:
    """An HMAC of a key and the value kept under it, with this user's secret."""
    return signature(key, json.dumps(value, sort_keys=True).encode())


def signature(key: str, data: bytes) -> str | None:
    """An HMAC-SHA256 of bytes kept under `key`, with this user's secret: what a cache
    kept elsewhere (`cli.output_cache`, one file per entry) checks before it trusts
    what it reads back (`hmac.compare_digest`). None where no secret can be kept."""
    mac = signer(key)
    if mac is None:
        return None
    mac.update(data)
    return mac.hexdigest()


def signer(key: str) -> hmac.HMAC | None:
    """`signature` of bytes given a piece at a time: an HMAC to `update` with each piece
    in order, whose `hexdigest` is then their `signature`. None where no secret can be
    kept."""
    secret = _user_secret()
    if secret is None:
        return None
    return hmac.new(secret, key.encode() + b"\0", hashlib.sha256)


def keep(path: Path, key: str, value: Any, *, limit: int, max_entries: int) -> None:
    """Keep `value` under `key` as the newest entry of a store file, signed.

    The oldest entries go when there are more than `max_entries`, or while the file
    would be bigger than `limit` (a value alone over it is not kept). Atomic: a reader
    sees the old file or the new one. An unwritable folder, or no secret to sign with,
    keeps nothing, silently.
    """
    seal = _seal(key, value)
    if seal is None:
        return
    entries = read_entries(path, limit)
    entries.pop(key, None)
    entries[key] = {"value": value, "mac": seal}
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


_PACKAGE = Path(__file__).resolve().parent


def code_stamps() -> list[list[Any]]:
    """hloscope's own source files, by name, size and time (an editable install
    changes without a new version): what a cache of computed results is keyed by.

    Raises:
        OSError: A file cannot be stat'ed.
    """
    return file_stamps(_PACKAGE, sorted(_PACKAGE.rglob("*.py")))


class TooManyFiles(OSError):
    """A folder holds more files than a key should stat."""


def tree_stats(folder: Path, *, max_files: int = 200_000) -> list[tuple[str, os.stat_result]]:
    """`(name, stat)` of every file under a folder (named relative to it), sorted by name.

    Links inside the folder are followed (what a link names is what a reader reads),
    each folder once; a link out of it, or a broken one, counts by its own stat
    (`lstat`): the readers of a run never follow those, and nothing outside it is
    stat'ed (a link to `/` would otherwise walk the whole disk). So a file whose stat
    is a regular file's may be read. The store's own files are left out.

    Raises:
        OSError: A folder cannot be listed, or it holds more than `max_files` files
            (`TooManyFiles`).
    """
    out: list[tuple[str, os.stat_result]] = []
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
                out.append((name, st))
                if len(out) > max_files:
                    raise TooManyFiles(f"{folder} holds more than {max_files:,} files")
    out.sort(key=lambda found: found[0])
    return out


def stat_stamps(found: Iterable[tuple[str, os.stat_result]]) -> list[list[Any]]:
    """Names, types, sizes and modification times of the files `tree_stats` found: what
    changes when one is written (to see a file change while a command ran)."""
    return [[name, st.st_mode, st.st_size, st.st_mtime_ns] for name, st in found]


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


def probe_stamp() -> list[Any]:
    """This machine and its kept CPU roofs (`timing.roofline.cpu_peaks`): the roofs a
    CPU run's roofline uses when no flag or device table gives them."""
    path = user_cache_dir() / PEAKS_FILE
    try:
        st = path.stat()
        stamp: list[Any] = [st.st_size, st.st_mtime_ns]
    except OSError:
        stamp = []
    return [machine_key(), str(path), stamp]
