"""The user's cache folder: folders of signed entries, one file each, kept by the content
of the files they were computed from and evicted least recently used first.

Two caches live there: what a command printed (`hloscope.cli.output_cache`, in
`outputs/`) and each module's analysis (`hloscope.analysis.kept`, in `analyses/`).
Both name an entry by its key (`store.entry_key`: an HMAC with this user's secret of
everything the entry depends on) and write it as its signature (`store.signature`), a
newline and its bytes. An entry is read as untrusted input: a regular file under a size
cap, never through a link, its signature checked before anything else reads it; one
that fails is not there. A folder takes at most `cache_limit()` bytes
(`$HLOSCOPE_CACHE_MB`, default 1024 MB; 0 keeps nothing).

`DigestIndex` remembers the SHA-256 of the files hashed for keys, by their stat fields,
as git's index does, so an unchanged file is not read again to name it.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import io
import json
import mmap
import os
import re
import stat
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any, BinaryIO, Literal, cast, overload

from hloscope.files import open_regular
from hloscope.store import content_digest, signature, signer, user_cache_dir

__all__ = [
    "CACHE_MB_VARIABLE",
    "RACY_NS",
    "DigestIndex",
    "EntryFile",
    "cache_folder",
    "cache_limit",
    "read_entry",
    "tree_digests",
    "write_entry",
]

CACHE_MB_VARIABLE = "HLOSCOPE_CACHE_MB"
"""Environment variable: the most megabytes each cache folder may take (0: keep none)."""

_DEFAULT_MB = 1024
RACY_NS = 1_000_000_000
"""A file changed this recently may change again unseen (its times kept as they are):
what is computed from it is not kept, and its digest is not remembered."""
_INDEX_VERSION = 1
_MAX_INDEX_BYTES = 64 << 20  # the whole file, its signature line included
_SIGNATURE_LINE = 65  # a SHA-256 HMAC in hex and a newline, before an entry's bytes
_SHA256 = re.compile("[0-9a-f]{64}")
_TEMPORARY = ".tmp"  # the suffix of a file being written
# An entry read with `mapped` from this size: read and checked in two threads at once.
_MAPPED_BYTES = 32 << 20
_MAPPED_BLOCK = 8 << 20  # read, then checked, a block at a time
_ABANDONED_NS = 24 * 3600 * 1_000_000_000  # a temporary file no command writes any more
# Digests taken in this process, by file and stat fields: two caches keying one command
# hash each file once.
_TAKEN: dict[tuple[str, tuple[int, ...]], str] = {}


def cache_limit() -> int:
    """The most bytes a cache folder may take (`$HLOSCOPE_CACHE_MB`, default 1024 MB)."""
    raw = os.environ.get(CACHE_MB_VARIABLE, "").strip()
    mb = int(raw) if raw.isdigit() else _DEFAULT_MB
    return mb << 20


def cache_folder(name: str) -> Path:
    """A cache's folder in the user's cache folder (`$HLOSCOPE_CACHE_DIR`, else
    `$XDG_CACHE_HOME/hloscope` or `~/.cache/hloscope`)."""
    return user_cache_dir() / name


@overload
def read_entry(path: Path, key: str, max_bytes: int) -> bytes | None: ...
@overload
def read_entry(
    path: Path, key: str, max_bytes: int, *, mapped: Literal[True]
) -> bytes | mmap.mmap | None: ...
def read_entry(
    path: Path, key: str, max_bytes: int, *, mapped: bool = False
) -> bytes | mmap.mmap | None:
    """The bytes kept under `key` at `path`; None when absent, a link, not a regular
    file, over `max_bytes`, or not signed with this user's secret for this key.

    With `mapped`, a big entry comes as anonymous memory (`mmap`: bytes-like, found in
    and sliced as bytes are), read by a second thread while this one checks what it
    has read (`_read_signing`)."""
    mac = signer(key)
    if mac is None:
        return None
    data: bytes | mmap.mmap | None
    try:
        if path.is_symlink():
            return None
        with open_regular(path, max_bytes + _SIGNATURE_LINE) as (f, size):
            line = f.read(_SIGNATURE_LINE)
            if mapped and size - len(line) >= _MAPPED_BYTES:
                data = _read_signing(f, size - len(line), mac)
            else:
                data = f.read(size - len(line))  # one object: not a copy of hundreds of MB
                mac.update(data)
    except OSError:
        return None
    if data is None or not hmac.compare_digest(line, mac.hexdigest().encode() + b"\n"):
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # the most recently used
    return data


def _read_signing(f: BinaryIO, size: int, mac: hmac.HMAC) -> mmap.mmap | None:
    """The next `size` bytes of `f`, read into anonymous memory by a thread of their own
    while this one adds what it has read to `mac`; None when the file ends first.

    The two take about as long (a 275 MB entry: reading it, its pages faulted in, 0.13
    s; its HMAC 0.23 s), and both let go of the interpreter lock: together 0.33 s
    against 0.45 s one after the other. What is checked is what is returned: the
    memory this process read into, not the file again."""
    readinto = cast("io.BufferedReader", f).readinto  # what `open_regular` opens
    memory = mmap.mmap(-1, size)
    view = memoryview(memory)
    read = [0]  # bytes read so far
    ended = threading.Event()  # the reader is done (read all, or stopped)
    more = threading.Condition()

    def reader() -> None:
        try:
            while read[0] < size:
                n = readinto(view[read[0] : read[0] + _MAPPED_BLOCK])
                if not n:
                    break
                with more:
                    read[0] += n
                    more.notify()
        except OSError:
            pass  # what was read falls short: not kept
        finally:
            with more:
                ended.set()
                more.notify()

    thread = threading.Thread(target=reader, name="hloscope-entry", daemon=True)
    thread.start()
    signed = 0
    try:
        while True:
            with more:
                while read[0] == signed and not ended.is_set():
                    more.wait()
                upto = read[0]
            if upto > signed:
                mac.update(view[signed:upto])
                signed = upto
            elif ended.is_set():
                break
    finally:
        thread.join()
        view.release()
    return memory if signed == size else None


def write_entry(path: Path, key: str, data: bytes, limit: int) -> bool:
    """Keep `data` under `key` at `path`, signed, then evict the folder's least recently
    used entries beyond `limit` bytes; False (nothing kept) when there is no secret to
    sign with, `data` alone is over `limit`, or the folder cannot be written."""
    mac = signature(key, data)
    if mac is None or len(data) > limit:
        return False
    if not write_atomic(path, mac.encode() + b"\n" + data):
        return False
    _evict(path.parent, limit)
    return True


def write_atomic(path: Path, data: bytes) -> bool:
    """Write a file of a cache folder through a temporary file renamed over it (a reader
    sees the old file or the new one), readable by the user only; False when it cannot
    be written."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}{_TEMPORARY}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        tmp.replace(path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        return False
    return True


class EntryFile:
    """An entry written a piece at a time as it is made (what a command prints, as it
    prints it), never held whole: into a temporary file in the cache folder, then
    signed and renamed into place by `keep`, in `write_entry`'s layout (its signature, a
    newline, its bytes), or removed by `drop`. More than `limit` bytes drop it, as does
    a write that fails; nothing is raised.
    """

    def __init__(self, folder: Path, limit: int) -> None:
        self.size = 0
        self.limit = limit
        self._file: IO[bytes] | None = None
        # A leading dot: `_evict` leaves it alone while it is written, and removes it
        # once it is older than any command (its process was killed).
        self._tmp = folder / f".entry.{os.getpid()}.{id(self):x}{_TEMPORARY}"
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self._tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            self._file = os.fdopen(fd, "w+b")
            self._file.write(b"0" * (_SIGNATURE_LINE - 1) + b"\n")  # signed when kept
        except OSError:
            self.drop()

    @property
    def dropped(self) -> bool:
        """Whether it was dropped (over its limit, or a write failed)."""
        return self._file is None

    def write(self, data: bytes) -> None:
        """Add `data` (or drop the entry, when it would be over the limit)."""
        if self._file is None:
            return
        self.size += len(data)
        if self.size > self.limit:
            self.drop()
            return
        try:
            self._file.write(data)
        except OSError:
            self.drop()

    def keep(self, path: Path, key: str, limit: int) -> bool:
        """Sign what was written under `key` and put it at `path` (atomically), then
        evict the folder's least recently used entries beyond `limit` bytes; False
        (nothing kept) when it was dropped, there is no secret to sign with, or it
        cannot be written."""
        mac = signer(key)
        f = self._file
        if f is None or mac is None or self.size > limit:
            self.drop()
            return False
        self._file = None
        try:
            with f:
                # signed now, read back: the key may only be known once the entry is
                # written (a command's first CPU roofline keeps this machine's roofs)
                f.flush()
                f.seek(_SIGNATURE_LINE)
                while block := f.read(1 << 20):
                    mac.update(block)
                f.seek(0)
                f.write(mac.hexdigest().encode())
            os.replace(self._tmp, path)
        except OSError:
            self.drop()
            return False
        _evict(path.parent, limit)
        return True

    def drop(self) -> None:
        """Remove what was written; nothing is kept."""
        f, self._file = self._file, None
        if f is not None:
            with contextlib.suppress(OSError):
                f.close()
        with contextlib.suppress(OSError):
            os.unlink(self._tmp)


def _evict(folder: Path, limit: int) -> None:
    """Remove the least recently used entries until they take at most `limit` bytes
    (a temporary file being written, named with a leading dot, is left alone; one left
    by a process that was killed goes once it is older than `_ABANDONED_NS`)."""
    entries = []
    abandoned = time.time_ns() - _ABANDONED_NS
    with contextlib.suppress(OSError), os.scandir(folder) as found:
        for e in found:
            if not e.is_file(follow_symlinks=False):
                continue
            with contextlib.suppress(OSError):
                st = e.stat(follow_symlinks=False)
                if not e.name.startswith("."):
                    entries.append((st.st_mtime_ns, st.st_size, e.path))
                elif e.name.endswith(_TEMPORARY) and st.st_mtime_ns < abandoned:
                    os.unlink(e.path)
    total = sum(size for _, size, _ in entries)
    for _, size, name in sorted(entries):
        if total <= limit:
            break
        with contextlib.suppress(OSError):
            os.unlink(name)
            total -= size


def tree_digests(
    root: Path, found: Iterable[tuple[str, os.stat_result]], folder: Path, *, budget: int
) -> list[list[Any]] | None:
    """`[name, kind, SHA-256 of the content]` of each file `found` under `root` (as
    `store.tree_stats` finds them: `(name relative to root, stat)`), what a result
    computed from them depends on: regular files by their content, anything else (a
    link out of the root, a FIFO) by its kind alone, never opened. A file's digest is
    taken again from the last call's while its stat fields are those it had then
    (`DigestIndex`, kept in cache folder `folder`).

    Returns:
        The digests, in the order found; None when a file cannot be read or the regular
        files hold more than `budget` bytes (too much to hash on every call).
    """
    try:
        index = DigestIndex(root, folder)
        out: list[list[Any]] = []
        for name, st in found:
            kind = stat.S_IFMT(st.st_mode)
            if kind != stat.S_IFREG:
                out.append([name, kind, ""])
                continue
            budget -= st.st_size
            if budget < 0:
                return None
            out.append([name, kind, index.digest(name, st, st.st_size)])
        index.save()
    except OSError:
        return None
    return out


class DigestIndex:
    """The digests of a folder's files as last hashed, by name, with the stat fields
    that say a file is unchanged: a small JSON file in a cache folder, signed as its
    entries are, evicted with them, read as untrusted (anything unsigned or of another
    shape is an empty index).

    A file's digest is taken again from it while its inode, size, modification and
    change times are those it had then, as git does for its index: a change of content
    changes the change time, which no one can set back.
    """

    def __init__(self, root: Path, folder: Path) -> None:
        where = os.path.realpath(root)
        self.path = folder / f"digests-{hashlib.sha256(where.encode()).hexdigest()}.json"
        self.root = where
        self.files: dict[str, list[Any]] = {}
        self.seen: dict[str, list[Any]] = {}
        self.now = time.time_ns()
        if cache_limit() <= 0:
            return
        # not this user's (unsigned): a digest read from it could name stale content
        data = read_entry(self.path, self.path.name, _MAX_INDEX_BYTES - _SIGNATURE_LINE)
        if data is None:
            return
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError):
            return
        if isinstance(doc, dict) and doc.get("version") == _INDEX_VERSION:
            files = doc.get("files")
            if doc.get("root") == where and isinstance(files, dict):
                self.files = files

    @staticmethod
    def _stamp(st: os.stat_result) -> list[Any]:
        return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]

    def digest(self, name: str, st: os.stat_result, limit: int) -> str:
        """The SHA-256 of file `name` (relative to the root), whose stat is `st`: as
        kept while it has those stat fields, else hashed (up to `limit` bytes).

        Raises:
            OSError: It cannot be read, or is over `limit` bytes.
        """
        stamp = self._stamp(st)
        taken = (os.path.join(self.root, name), tuple(stamp))
        sha = self._get(name, stamp) or _TAKEN.get(taken)
        if sha is None:
            sha = content_digest(Path(self.root) / name, limit)
        if max(st.st_mtime_ns, st.st_ctime_ns) < self.now - RACY_NS:  # else it may change
            self.seen[name] = [*stamp, sha]
            _TAKEN[taken] = sha
        return sha

    def _get(self, name: str, stamp: list[Any]) -> str | None:
        found = self.files.get(name)
        if not isinstance(found, list) or len(found) != 6 or found[:5] != stamp:
            return None
        sha = found[5]
        if not (isinstance(sha, str) and _SHA256.fullmatch(sha)):
            return None
        return sha

    def save(self) -> None:
        """Keep what was seen (only the files read this time), when it changed."""
        if cache_limit() <= 0:
            return
        if self.seen == self.files:
            with contextlib.suppress(OSError):
                os.utime(self.path)  # used: the most recently, for eviction
            return
        text = json.dumps({"version": _INDEX_VERSION, "root": self.root, "files": self.seen})
        data = text.encode("utf-8", "surrogateescape")
        mac = signature(self.path.name, data)
        if mac is not None:
            write_atomic(self.path, mac.encode() + b"\n" + data)
