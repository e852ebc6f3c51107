"""Files that hold a run without being a run folder, turned into one: an nsys-jax archive
(a zip with the XLA dump under `dump/`) and a profile (`*.xplane.pb`, whose metadata
plane carries each compiled module's optimized HLO).

Each is unpacked once into a cache folder in the temp directory, keyed by the file's
content (SHA-256; the file itself is never changed), written under a temporary name and
renamed into place whole, within a budget of `files.MAX_EXPANSION` times the archive;
a failure removes what was written, and only the newest few of each kind are kept.
`hloscope.runs` loads the folder as a run. Only HLO dump members leave an archive, flat,
by their file names: no path of a member's own choosing.
"""

from __future__ import annotations

import lzma
import os
import re
import shutil
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import IO

from hloscope.errors import UsageError
from hloscope.files import expansion_limit
from hloscope.hlo.xspace import XPLANE_SUFFIX, XSpaceHlo
from hloscope.store import content_digest

__all__ = ["NSYS_TRACE", "is_nsys_archive", "is_xspace", "unpacked_nsys", "unpacked_xspace"]

NSYS_TRACE = "nvtx_gpu_proj_trace/trace.parquet"
"""The NVTX trace an nsys-jax archive holds; with its `dump/`, the archive is a run."""
# Unpacked dumps are kept in the temp folder as `hloscope-<kind>-<digest>`, a few of
# each kind.
_KEEP_UNPACKED = 8
_MAX_ARCHIVE_BYTES = 64 << 30
# What the members unpacked from one archive may add up to: `files.MAX_EXPANSION` times
# the archive (its dumps are xz inside the zip: they unpack to about its size), and
# never past this.
_MAX_UNPACKED_BYTES = 4 << 30
# Member errors a damaged zip raises: encrypted (RuntimeError), a compression method
# Python cannot read (NotImplementedError), a bad CRC or stream.
_ZIP_ERRORS = (
    OSError, zipfile.BadZipFile, RuntimeError, NotImplementedError, ValueError, EOFError,
    zlib.error, lzma.LZMAError,
)  # fmt: skip


def is_nsys_archive(path: str | Path) -> bool:
    """Whether a path is an nsys-jax archive: a zip or a folder holding the NVTX trace."""
    p = Path(path)
    if p.is_dir():
        return (p / NSYS_TRACE).is_file()
    try:
        if not (p.is_file() and zipfile.is_zipfile(p)):
            return False
        with zipfile.ZipFile(p) as z:
            return any(n.endswith(NSYS_TRACE) for n in z.namelist())
    except (OSError, zipfile.BadZipFile):
        return False


def is_xspace(path: str | Path) -> bool:
    """Whether a path names an XSpace profile (`*.xplane.pb`)."""
    return Path(path).name.endswith(XPLANE_SUFFIX)


def unpacked_nsys(archive: Path, keep: Callable[[str], bool]) -> Path:
    """The cache folder holding an nsys-jax archive's `dump/` members (in its `dump/`),
    unpacked on first use.

    Args:
        archive: The zip.
        keep: Which member file names to unpack (HLO dump files).

    Raises:
        UsageError: The archive cannot be unpacked or unpacks past its budget, or the
            cache folder is a link or someone else's.
    """
    folder = _cache_folder(archive, "nsys")
    if not (folder / ".complete").is_file():
        _unpack_dump(archive, folder, keep)
        _prune_unpacked(folder)
    return folder


def unpacked_xspace(path: Path, space: XSpaceHlo) -> Path:
    """The cache folder holding a profile's HLO modules as binary dumps (in its `dump/`,
    named as XLA names them: `module_<program id>.<name>.<platform>_after_optimizations.hlo.pb`),
    written on first use.

    Raises:
        UsageError: The cache cannot be written, or its folder is a link or someone
            else's.
    """
    folder = _cache_folder(path, "xspace")
    if not (folder / ".complete").is_file():
        try:
            _write_modules(space, folder)
        except OSError as e:
            raise UsageError(f"{path}: cannot keep its HLO modules in {folder} ({e})") from None
        _prune_unpacked(folder)
    return folder


def _cache_folder(path: Path, kind: str) -> Path:
    """Where a file's unpacked dump is kept: a temp folder keyed by the file's content
    (SHA-256: another file of the same path, size and time is another key; the file
    itself is never changed).

    Raises:
        UsageError: The file cannot be read, or the folder is a link or someone else's.
    """
    try:
        key = content_digest(path, _MAX_ARCHIVE_BYTES)
    except OSError as e:
        raise UsageError(f"{path}: cannot read ({e})") from None
    folder = Path(tempfile.gettempdir()) / f"hloscope-{kind}-{key[:16]}"
    if folder.is_symlink() or (folder.exists() and not _ours(folder)):
        # a shared temp folder: someone may have put a cache there that leads elsewhere
        raise UsageError(f"{folder}, the cache of {path}, is a link or not yours; not read")
    return folder


def _ours(folder: Path) -> bool:
    """Whether this user owns a folder (always, where the system has no user ids)."""
    getuid = getattr(os, "getuid", None)
    return getuid is None or folder.lstat().st_uid == getuid()


# What a dump file's name may hold of a module's name (the rest becomes `_`).
_UNSAFE_NAME = re.compile(r"[^\w.\-]")


def _write_modules(space: XSpaceHlo, folder: Path) -> None:
    """Each embedded module as a binary dump, named as XLA names its dumps."""
    platform = space.platform
    suffix = platform if platform in ("tpu", "cpu", "gpu") else f"{platform}_gpu"  # sm_90_gpu
    partial = Path(tempfile.mkdtemp(prefix=folder.name + "-", dir=folder.parent))
    try:
        (partial / "dump").mkdir()
        for m in space.modules:
            name = _UNSAFE_NAME.sub("_", m.name).lstrip(".") or "module"
            prefix = f"module_{m.program_id:04d}." if m.program_id is not None else ""
            dump = partial / "dump" / f"{prefix}{name}.{suffix}_after_optimizations.hlo.pb"
            dump.write_bytes(m.proto)
        (partial / ".complete").touch()
    except BaseException:  # nothing half-written is left behind
        shutil.rmtree(partial, ignore_errors=True)
        raise
    try:
        partial.rename(folder)
    except OSError:  # another process wrote it first
        shutil.rmtree(partial, ignore_errors=True)


def _unpack_dump(archive: Path, folder: Path, keep: Callable[[str], bool]) -> None:
    """Unpack the `dump/*` members of an archive that `keep` takes, flat, by their file
    names only, within a size budget. A failure removes what was unpacked.

    Raises:
        UsageError: The archive cannot be read, or unpacks past its budget.
    """
    budget = expansion_limit(archive.stat().st_size, _MAX_UNPACKED_BYTES)
    partial = Path(tempfile.mkdtemp(prefix=folder.name + "-", dir=folder.parent))
    try:
        (partial / "dump").mkdir()
        with zipfile.ZipFile(archive) as z:
            for member in z.infolist():
                parts = PurePosixPath(member.filename).parts
                if member.is_dir() or len(parts) < 2 or parts[-2] != "dump":
                    continue
                name = parts[-1]
                if not keep(name) or name in (".", "..") or not name.isprintable():
                    continue  # only HLO modules; no path of the member's own choosing
                with z.open(member) as src, (partial / "dump" / name).open("wb") as dst:
                    budget -= _copy_within(src, dst, budget, member.filename)
        (partial / ".complete").touch()
        try:
            partial.rename(folder)
        except OSError:  # another process unpacked it first
            shutil.rmtree(partial, ignore_errors=True)
    except _ZIP_ERRORS as e:
        shutil.rmtree(partial, ignore_errors=True)
        raise UsageError(f"{archive}: cannot unpack the nsys-jax archive's dump ({e})") from None
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise


def _copy_within(src: IO[bytes], dst: IO[bytes], budget: int, name: str) -> int:
    """Copy a member, counting what it really yields (not what its header says)."""
    copied = 0
    while chunk := src.read(1 << 20):
        copied += len(chunk)
        if copied > budget:
            raise ValueError(f"{name} takes the unpacked dump past its budget")
        dst.write(chunk)
    return copied


def _prune_unpacked(keep: Path) -> None:
    """Keep the newest unpacked archives only; remove partial folders a killed process
    left more than an hour ago."""
    base, kind = keep.parent, keep.name[:-16]  # `hloscope-nsys-`, then the digest
    try:
        mine = [p for p in base.iterdir() if p.name.startswith(kind) and not p.is_symlink()]
        mine = [p for p in mine if p.is_dir() and _ours(p)]
        stamps = {p: p.stat().st_mtime for p in mine}
    except OSError:
        return
    complete = sorted((p for p in mine if (p / ".complete").is_file()), key=stamps.__getitem__)
    stale = [p for p in mine if p not in complete and stamps[p] < time.time() - 3600]
    for p in [*complete[:-_KEEP_UNPACKED], *stale]:
        if p != keep:
            shutil.rmtree(p, ignore_errors=True)
