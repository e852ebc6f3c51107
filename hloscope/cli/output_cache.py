"""What a command printed and wrote, kept in the user's cache folder by the content of
the files it read: a later `report`, `ops`, `graph` or `parse` of unchanged files prints
it back instead of parsing and analysing again.

`cached_command` runs a command's body with stdout and stderr passed through recorders
(what it prints still goes out as it is made, a streamed JSON document included), keeps
what they saw and the files the body wrote (a `graph` picture and its DOT source, a
`--html` page) as one entry, and on a later call with the same key writes them back,
byte for byte. The key (a SHA-256) is of everything the output depends on: the command,
its options, the path as given and the working folder, the SHA-256 of the content of
every file the command reads (a folder's whole tree; for one module file, it and the
files of its module beside it), hloscope's version and source files, whether stdout is a
terminal and its width and colour settings, Graphviz's `dot`, and the CPU roofs kept on
this machine. Entries live in `$HLOSCOPE_CACHE_DIR/outputs` (default
`~/.cache/hloscope/outputs`), one file each, evicted least recently used first beyond
`$HLOSCOPE_CACHE_MB` (default 1024 MB). Keys and entries are signed with this user's
secret (`store.entry_key`, `store.signature`), and an entry is read as untrusted input:
a regular file under a size cap, never through a link, its signature checked before it
is parsed, of the expected shape under the expected key, else it is computed again and
replaced. `--no-cache` skips it both ways.

Imports nothing of the pipeline: on a hit, no HLO is parsed.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import stat
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from hloscope.cli.cached import probe_stamp
from hloscope.files import inside, read_regular
from hloscope.store import code_stamps, digest, entry_key, tree_stats
from hloscope.user_cache import (
    CACHE_MB_VARIABLE,
    RACY_NS,
    DigestIndex,
    cache_folder,
    cache_limit,
    read_entry,
    write_entry,
)

__all__ = [
    "CACHE_MB_VARIABLE",
    "Entry",
    "cache_limit",
    "cached_command",
    "input_digests",
    "outputs_dir",
]

_VERSION = 1  # the shape of an entry
# What one entry may hold: a bigger output (the 341 MB JSON document of the 107 MB
# generated pair) is printed, not kept, and what was recorded of it is dropped.
_MAX_ENTRY_BYTES = 128 << 20
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

    Attributes:
        chunks: `(stream, text)` in the order printed; stream 1 is stdout, 2 stderr.
        files: `(path as written, content)` of each file the command wrote.
    """

    chunks: tuple[tuple[int, str], ...]
    files: tuple[tuple[str, bytes], ...] = ()

    def to_json(self, key: str) -> dict[str, Any]:
        """The entry as kept: `{version, key, chunks, files}` (file content in base64)."""
        return {
            "version": _VERSION,
            "key": key,
            "chunks": [list(c) for c in self.chunks],
            "files": [[p, base64.b64encode(b).decode("ascii")] for p, b in self.files],
        }

    @classmethod
    def from_json(cls, doc: Any, key: str) -> Entry | None:
        """Read a kept entry; None when it is of another shape or kept under another key
        (written by another hloscope, damaged or edited: computed again)."""
        if not isinstance(doc, dict) or doc.get("version") != _VERSION or doc.get("key") != key:
            return None
        chunks, files = doc.get("chunks"), doc.get("files")
        if not isinstance(chunks, list) or not isinstance(files, list):
            return None
        read_chunks = []
        for c in chunks:
            if not (isinstance(c, list) and len(c) == 2 and c[0] in (1, 2)):
                return None
            if not isinstance(c[1], str):
                return None
            read_chunks.append((int(c[0]), c[1]))
        read_files = []
        for f in files:
            if not (isinstance(f, list) and len(f) == 2 and all(isinstance(x, str) for x in f)):
                return None
            try:
                content = base64.b64decode(f[1], validate=True)
            except ValueError:
                return None
            read_files.append((f[0], content))
        return cls(tuple(read_chunks), tuple(read_files))


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
    path = folder / f"{key}.json"
    found = _read(path, key)
    if found is not None:
        _replay(found)
        return
    started = time.time_ns()
    stamps = _stamps(found_inputs)
    recorder = _Recording(_MAX_ENTRY_BYTES)
    with recorder.installed():
        written = body()
    if recorder.over:
        return
    with contextlib.suppress(OSError):
        now = _input_stats(run)
        if now is None or _stamps(now) != stamps or any(s[-1] >= started - RACY_NS for s in stamps):
            return  # a file changed while it ran, or may change unseen: keep nothing
        files = []
        size = recorder.size
        for p in written:
            content = _read_output(p, _MAX_ENTRY_BYTES - size)
            if content is None:
                return
            size += len(content)
            files.append((str(p), content))
        # keyed as computed: a first CPU roofline has probed and kept this machine's roofs
        key = _with_peaks(base)
        if key is None:
            return
        entry = Entry(recorder.chunks(), tuple(files))
        _keep(folder, key, entry.to_json(key), limit)


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
    try:
        index = DigestIndex(root, outputs_dir())
        out: list[list[Any]] = []
        budget = _MAX_HASHED_BYTES
        for name, st in found:
            kind = stat.S_IFMT(st.st_mode)
            if kind != stat.S_IFREG:
                out.append([name, kind, ""])  # never opened by a reader either
                continue
            budget -= st.st_size
            if budget < 0:
                return None
            out.append([name, kind, index.digest(name, st, st.st_size)])
        index.save()
    except OSError:
        return None
    return out


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


def _stamps(found: list[tuple[str, os.stat_result]]) -> list[list[Any]]:
    """Names, types, sizes and times of what the command reads: to see a file change
    while it runs (the output may then be of either state)."""
    return [[name, st.st_mode, st.st_size, st.st_mtime_ns] for name, st in found]


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
    """What stdout and stderr were given, in order, up to a size (then nothing)."""

    def __init__(self, limit: int) -> None:
        # each stream's consecutive writes, joined when asked (`chunks`): adding each
        # to the last one's string copied a streamed JSON document over and over
        self._runs: list[tuple[int, list[str]]] = []
        self.size = 0
        self.limit = limit
        self.over = False

    def add(self, number: int, text: str) -> None:
        if self.over or not text:
            return
        self.size += len(text.encode("utf-8", "surrogateescape"))
        if self.size > self.limit:
            self.over = True
            self._runs = []
            return
        if self._runs and self._runs[-1][0] == number:
            self._runs[-1][1].append(text)
        else:
            self._runs.append((number, [text]))

    def chunks(self) -> tuple[tuple[int, str], ...]:
        """`(stream, text)` in the order printed, a stream's consecutive writes joined."""
        return tuple((number, "".join(texts)) for number, texts in self._runs)

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
    for number, text in entry.chunks:
        stream = sys.stdout if number == 1 else sys.stderr
        stream.write(text)
        if number == 2:
            stream.flush()
    sys.stdout.flush()


def _read_output(path: Path, limit: int) -> bytes | None:
    """A file the command wrote, to keep; None when it is over `limit` or unreadable."""
    try:
        return read_regular(path, max(limit, 0))
    except OSError:
        return None


# --- the folder of entries --------------------------------------------------------------


def _read(path: Path, key: str) -> Entry | None:
    """The entry kept under `key`, or None (absent, a link, not a regular file, too big,
    its signature not this user's for this key, not JSON, of another shape or key)."""
    data = read_entry(path, key, 2 * _MAX_ENTRY_BYTES)
    if data is None:
        return None
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return Entry.from_json(doc, key)


def _keep(folder: Path, key: str, doc: dict[str, Any], limit: int) -> None:
    """Write an entry atomically as its signature, a newline and its JSON, then evict
    the least recently used beyond `limit` bytes; a folder that cannot be written keeps
    nothing, silently."""
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    data = text.encode("utf-8", "surrogateescape")
    write_entry(folder / f"{key}.json", key, data, min(limit, 2 * _MAX_ENTRY_BYTES))
