"""What a command printed and wrote, kept in the user's cache folder by the content of
the files it read: a later `report`, `ops`, `graph` or `parse` of unchanged files prints
it back instead of parsing and analysing again.

`cached_command` runs a command's body with stdout and stderr passed through recorders
(what it prints still goes out as it is made, a streamed JSON document included), which
write what they see to a temporary file in the cache folder as it comes (never held
whole: the 107 MB module's `ops --json` is 275 MB), adds the files the body wrote (a
`graph` picture and its DOT source, a `--html` page) and keeps it all as one entry
(`Entry`); a later call with the same key writes them back, byte for byte. The key (a
SHA-256) is of everything the output depends on: the command, its options, the path as
given and the working folder, the SHA-256 of the content of every file the command reads
(a folder's whole tree; for one module file, it and the files of its module beside it),
hloscope's version and source files, whether stdout is a terminal and its width and
colour settings, Graphviz's `dot`, and the CPU roofs kept on this machine. Entries live
in `$HLOSCOPE_CACHE_DIR/outputs` (default `~/.cache/hloscope/outputs`), one file each,
evicted least recently used first beyond `$HLOSCOPE_CACHE_MB` (default 1024 MB); an
output over 512 MB is printed, not kept. Keys and entries are signed with this user's
secret (`store.entry_key`, `store.signature`), and an entry is read as untrusted input:
a regular file under a size cap, never through a link, its signature checked before it
is parsed, of the expected layout, else it is computed again and replaced. `--no-cache`
skips it both ways.

Imports nothing of the pipeline: on a hit, no HLO is parsed.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import json
import mmap
import os
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from hloscope.files import inside, open_regular
from hloscope.store import code_stamps, digest, entry_key, probe_stamp, stat_stamps, tree_stats
from hloscope.user_cache import (
    CACHE_MB_VARIABLE,
    RACY_NS,
    EntryFile,
    cache_folder,
    cache_limit,
    read_entry,
    tree_digests,
)

__all__ = [
    "CACHE_MB_VARIABLE",
    "Entry",
    "cache_limit",
    "cached_command",
    "input_digests",
    "outputs_dir",
]

_VERSION = 2  # the layout of an entry (`Entry.read`)
_MAGIC = "hloscope output"
# What one entry may hold: the 341 MB JSON document of the 107 MB generated pair, and its
# 330 MB page. A bigger output is printed, not kept, and what was recorded of it dropped.
_MAX_ENTRY_BYTES = 512 << 20
_SUFFIX = ".out"
# A stream's consecutive writes are joined up to this many bytes into one record.
_RECORD_BYTES = 1 << 20
_MAX_HEAD_BYTES = 64 << 10  # a record's line (a path at most, besides two numbers)
# The most bytes of input hashed for a key: a run folder holding GBs of profile would
# spend longer hashing than a cache could save.
_MAX_HASHED_BYTES = 4 << 30
# What rich reads from the environment to lay out and colour what it prints.
_TERMINAL_VARIABLES = (
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "FORCE_COLOR",
    "COLUMNS",
    "LINES",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "JUPYTER_COLUMNS",
    "JUPYTER_LINES",
)
_MODULE_PREFIX = "module_"


@dataclass(frozen=True)
class Entry:
    """What a command printed and wrote.

    Kept as records, each a line of JSON saying what follows and its length in bytes,
    then those bytes: first `["hloscope output", 2]` (nothing follows), then in the
    order printed `[1, n]` and `[2, n]` (n bytes of text, UTF-8, the command printed to
    stdout and to stderr), then `["file", n, path]` for each file it wrote (its n bytes,
    at `path` as written). Written as the command prints (`_Recording`), never held
    whole.

    Attributes:
        chunks: `(stream, bytes)` in the order printed, stream 1 stdout and 2 stderr: the
            text printed in UTF-8 (anything else in it kept by its surrogate escapes).
        files: `(path as written, content)` of each file the command wrote.
    """

    chunks: tuple[tuple[int, memoryview], ...]
    files: tuple[tuple[str, memoryview], ...] = ()

    @classmethod
    def read(cls, data: bytes | mmap.mmap) -> Entry | None:
        """An entry from its records; None when they are not an entry's (written by
        another hloscope, damaged or edited: computed again)."""
        chunks: list[tuple[int, memoryview]] = []
        files: list[tuple[str, memoryview]] = []
        view = memoryview(data)  # each record a view of the entry read: none copied
        at = _after(data, 0, [_MAGIC, _VERSION])
        while at is not None and at < len(data):
            end = data.find(b"\n", at, at + _MAX_HEAD_BYTES)
            head = _head(data[at:end]) if end >= 0 else None
            if head is None:
                return None
            kind, size, *name = head
            at = end + 1 + size
            body = view[end + 1 : at]
            if len(body) != size:
                return None
            if kind in (1, 2) and not name:
                chunks.append((kind, body))
            elif kind == "file" and len(name) == 1 and isinstance(name[0], str):
                files.append((name[0], body))
            else:
                return None
        return None if at is None else cls(tuple(chunks), tuple(files))


def _record(kind: int | str, size: int, *name: str) -> bytes:
    """The line that starts a record of `size` bytes."""
    return json.dumps([kind, size, *name]).encode("ascii") + b"\n"


def _after(data: bytes | mmap.mmap, at: int, expected: list[Any]) -> int | None:
    """Where the record after the line `expected` at `at` starts; None if it is not."""
    end = data.find(b"\n", at, at + _MAX_HEAD_BYTES)
    try:
        found = json.loads(data[at:end]) if end >= 0 else None
    except (ValueError, RecursionError):
        return None
    return end + 1 if found == expected else None


def _head(line: bytes) -> list[Any] | None:
    """A record's line, `[kind, size, ...]`; None when it is not one."""
    try:
        head = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not (isinstance(head, list) and len(head) >= 2 and type(head[1]) is int):
        return None
    if head[1] < 0 or type(head[0]) not in (int, str):
        return None
    return head


def cached_command(
    run: Path,
    command: str,
    options: Mapping[str, Any],
    body: Callable[[], Sequence[Path]],
    *,
    enabled: bool = True,
) -> None:
    """Run a command's body, or print back what it printed and wrote last time.

    Args:
        run: The path the command reads (a folder, one module file, an archive).
        command: The command's name.
        options: Its other options (JSON values; paths as strings).
        body: Runs the command: prints through `sys.stdout`/`sys.stderr` and returns
            the files it wrote. Its errors propagate, and nothing is kept.
        enabled: False for `--no-cache`: the body runs, nothing is read or kept.
    """
    folder = outputs_dir()
    limit = cache_limit()
    # What it reads, as found now: a file changed from here on changes its stamp.
    found_inputs = _input_stats(run) if enabled and limit > 0 else None
    base = _base_key(run, command, options, found_inputs) if found_inputs is not None else None
    if found_inputs is None or base is None:
        body()
        return
    key = _with_peaks(base)
    if key is None:  # no secret to sign with: nothing is kept
        body()
        return
    path = folder / f"{key}{_SUFFIX}"
    found = _read(path, key)
    if found is not None:
        _replay(found)
        return
    started = time.time_ns()
    stamps = stat_stamps(found_inputs)
    entry = EntryFile(folder, min(_MAX_ENTRY_BYTES, limit))
    try:
        recorder = _Recording(entry)
        with recorder.installed():
            written = body()
        recorder.flush()
        if entry.dropped:  # over its limit: printed, not kept
            return
        now = _input_stats(run)
        if (
            now is None
            or stat_stamps(now) != stamps
            or any(s[-1] >= started - RACY_NS for s in stamps)
        ):
            return  # a file changed while it ran, or may change unseen: keep nothing
        for p in written:
            _record_file(entry, p)
        # keyed as computed: a first CPU roofline has probed and kept this machine's roofs
        key = _with_peaks(base)
        if key is not None:
            entry.keep(folder / f"{key}{_SUFFIX}", key, limit)
    finally:
        entry.drop()  # what was not kept (too big, an error, an interrupt): removed


def outputs_dir() -> Path:
    """Where kept outputs live: `outputs/` in the user's cache folder
    (`$HLOSCOPE_CACHE_DIR`, else `$XDG_CACHE_HOME/hloscope` or `~/.cache/hloscope`)."""
    return cache_folder("outputs")


def input_digests(run: Path) -> list[list[Any]] | None:
    """`[name, kind, SHA-256 of the content]` of every file the command reads: a
    folder's whole tree (named relative to it, the store's own files left out), or one
    file and the files of its module beside it (`module_0001.*`). A link out of the
    folder, or anything but a regular file, counts by its kind alone and is never
    opened. None when they cannot all be read or there is too much to hash (nothing is
    cached then).

    A file's digest is taken again from the last call's while its stat fields are
    those it had then (`user_cache.DigestIndex`).
    """
    found = _input_stats(run)
    return None if found is None else _digests(run, found)


def _input_stats(run: Path) -> list[tuple[str, os.stat_result]] | None:
    """`(name, stat)` of every file the command reads, named relative to the folder
    (`store.tree_stats`: links inside it followed, any other link by its own stat); None
    when they cannot all be stat'ed, or `run` is neither a folder nor a file."""
    try:
        if run.is_dir():
            return tree_stats(run)
        if not run.is_file():
            return None
        root = run.parent
        out = []
        for name in _module_files(run):
            p = root / name
            out.append((name, p.stat(follow_symlinks=not p.is_symlink() or inside(p, root))))
        return out
    except OSError:
        return None


def _digests(run: Path, found: list[tuple[str, os.stat_result]]) -> list[list[Any]] | None:
    """`input_digests` of the files `_input_stats` found, each hashed as of its stat."""
    root = run if run.is_dir() else run.parent
    return tree_digests(root, found, outputs_dir(), budget=_MAX_HASHED_BYTES)


# --- the key --------------------------------------------------------------------------


def _base_key(
    run: Path,
    command: str,
    options: Mapping[str, Any],
    found: list[tuple[str, os.stat_result]],
) -> str | None:
    """The digest of all the key holds but the CPU roofs (`_with_peaks`), the files read
    being those `_input_stats` found; None when they cannot all be hashed."""
    from hloscope import __version__

    inputs = _digests(run, found)
    if inputs is None:
        return None
    try:
        code = code_stamps()
        cwd = os.getcwd()
    except OSError:
        return None
    return digest(
        {
            "version": _VERSION,
            "hloscope": __version__,
            "code": code,
            "command": command,
            "options": dict(options),
            "run": str(run),
            "cwd": cwd,
            "inputs": inputs,
            "terminal": _terminal(),
            "dot": _dot_stamp() if command == "graph" or options.get("html") else None,
        }
    )


def _with_peaks(base: str) -> str | None:
    """The key: `base` and the CPU roofs kept on this machine (a profiled CPU run's
    roofline reads them, and its first report measures and keeps them), keyed with this
    user's secret; None where there is none."""
    return entry_key([base, probe_stamp()])


def _terminal() -> list[Any]:
    """What the output's layout depends on: whether stdout and stderr are terminals,
    their width as rich sees it, and the variables rich reads."""
    from hloscope.cli.app import _stdout_is_terminal, _width

    try:
        err = sys.stderr.isatty()
    except (AttributeError, ValueError):
        err = False
    env = {v: os.environ[v] for v in _TERMINAL_VARIABLES if v in os.environ}
    return [_stdout_is_terminal(), err, _width(), env]


def _dot_stamp() -> list[Any]:
    """Graphviz's `dot` (its path, size and time): another version draws differently."""
    found = shutil.which("dot")
    if found is None:
        return []
    try:
        st = os.stat(found)
    except OSError:
        return [found]
    return [found, st.st_size, st.st_mtime_ns]


def _module_files(path: Path) -> list[str]:
    """One module file and the other files of its module in the same folder (its
    before/after partner, its `.hlo.pb`, ...), by XLA's `module_NNNN.` prefix; the file
    alone when its name has none."""
    name = path.name
    at = name.find(_MODULE_PREFIX)
    dot = name.find(".", at) if at >= 0 else -1
    if at < 0 or dot < 0 or not name[at + len(_MODULE_PREFIX) : dot].isdigit():
        return [name]
    prefix = name[: dot + 1]
    with os.scandir(path.parent) as entries:
        found = {e.name for e in entries if e.name.startswith(prefix) and e.is_file()}
    return sorted(found | {name})


# --- recording and playing back ---------------------------------------------------------


class _Tee:
    """A text stream that writes through to another and tells a recording what it
    wrote (as the stream it stands for: a terminal stays one)."""

    def __init__(self, stream: TextIO, number: int, recording: _Recording) -> None:
        self._stream = stream
        self._number = number
        self._recording = recording

    def write(self, text: str) -> int:
        self._recording.add(self._number, text)
        return self._stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _Recording:
    """What stdout and stderr were given, in order, written as an entry's records as it
    comes (`Entry`): each stream's consecutive writes joined up to `_RECORD_BYTES`.
    Once the entry is dropped (over its limit), nothing more."""

    def __init__(self, entry: EntryFile) -> None:
        self._entry = entry
        self._stream = 0
        self._pending: list[bytes] = []
        self._size = 0
        entry.write(json.dumps([_MAGIC, _VERSION]).encode("ascii") + b"\n")

    def add(self, number: int, text: str) -> None:
        if self._entry.dropped or not text:
            return
        if number != self._stream:
            self.flush()
            self._stream = number
        data = text.encode("utf-8", "surrogateescape")
        self._pending.append(data)
        self._size += len(data)
        if self._size >= _RECORD_BYTES:
            self.flush()

    def flush(self) -> None:
        """Write what is pending as one record."""
        if self._pending:
            self._entry.write(_record(self._stream, self._size))
            for data in self._pending:
                self._entry.write(data)
        self._pending = []
        self._size = 0

    @contextlib.contextmanager
    def installed(self) -> Any:
        out, err = sys.stdout, sys.stderr
        sys.stdout = _Tee(out, 1, self)
        sys.stderr = _Tee(err, 2, self)
        try:
            yield self
        finally:
            sys.stdout, sys.stderr = out, err


def _replay(entry: Entry) -> None:
    """Write an entry's files, then print what it printed, in its order."""
    for name, content in entry.files:
        Path(name).write_bytes(content)
    for number, data in entry.chunks:
        stream = sys.stdout if number == 1 else sys.stderr
        _write(stream, data)
        if number == 2:
            stream.flush()
    sys.stdout.flush()


def _write(stream: TextIO, data: memoryview) -> None:
    """Print bytes recorded as UTF-8 again: as they are to a file or pipe that takes
    text as UTF-8 with no newline translation (the 275 MB of the 107 MB module's `ops
    --json` are not decoded and encoded again), else as the text they are (through a
    stream that stands for another, such as the status line's)."""
    if (
        type(stream) is io.TextIOWrapper
        and os.linesep == "\n"
        and codecs.lookup(stream.encoding).name == "utf-8"
    ):
        stream.flush()
        stream.buffer.write(data)
    else:
        stream.write(str(data, "utf-8", "surrogateescape"))


def _record_file(entry: EntryFile, path: Path) -> None:
    """Add a file the command wrote to its entry, a block at a time (a page of hundreds
    of MB is never read whole); drop the entry when it cannot be read whole or would be
    over the entry's limit."""
    try:
        with open_regular(path, max(entry.limit - entry.size, 0)) as (f, size):
            entry.write(_record("file", size, str(path)))
            left = size
            while left and (block := f.read(min(left, _RECORD_BYTES))):
                entry.write(block)
                left -= len(block)
        if left:  # shorter than it was
            entry.drop()
    except OSError:
        entry.drop()


# --- the folder of entries --------------------------------------------------------------


def _read(path: Path, key: str) -> Entry | None:
    """The entry kept under `key`, or None (absent, a link, not a regular file, too big,
    its signature not this user's for this key, or not an entry's records)."""
    data = read_entry(path, key, _MAX_ENTRY_BYTES, mapped=True)  # read as it is checked
    return Entry.read(data) if data is not None else None
