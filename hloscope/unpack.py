"""Files that hold a run without being a run folder, turned into one: an nsys-jax archive
(a zip with the XLA dump under `dump/`) and a profile (`*.xplane.pb`, whose metadata
plane carries each compiled module's optimized HLO).

Each is unpacked once into a cache folder in the temp directory, keyed by the file's
path, size and time (the file itself is never changed), written under a temporary name
and renamed into place whole; `hloscope.runs` loads the folder as a run. Only HLO dump
members leave an archive, flat, by their file names: no path of a member's own choosing.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from hloscope.errors import UsageError
from hloscope.hlo.xspace import XPLANE_SUFFIX, XSpaceHlo

__all__ = ["NSYS_TRACE", "is_nsys_archive", "is_xspace", "unpacked_nsys", "unpacked_xspace"]

NSYS_TRACE = "nvtx_gpu_proj_trace/trace.parquet"
"""The NVTX trace an nsys-jax archive holds; with its `dump/`, the archive is a run."""
_MAX_ARCHIVE_MEMBER = 1024 * 1024 * 1024


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
        UsageError: The archive cannot be unpacked, or the cache folder is a link or
            someone else's.
    """
    folder = _cache_folder(archive, "nsys")
    if not (folder / ".complete").is_file():
        try:
            _unpack_dump(archive, folder, keep)
        except (OSError, zipfile.BadZipFile, ValueError) as e:
            raise UsageError(
                f"{archive}: cannot unpack the nsys-jax archive's dump ({e})"
            ) from None
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
    return folder


def _cache_folder(path: Path, kind: str) -> Path:
    """Where a file's unpacked dump is kept: a temp folder keyed by the file's path,
    size and time (the file itself is never changed).

    Raises:
        UsageError: The folder is a link or someone else's.
    """
    info = path.stat()
    key = hashlib.sha256(f"{path.resolve()}:{info.st_size}:{info.st_mtime_ns}".encode()).hexdigest()
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
    (partial / "dump").mkdir()
    for m in space.modules:
        name = _UNSAFE_NAME.sub("_", m.name).lstrip(".") or "module"
        prefix = f"module_{m.program_id:04d}." if m.program_id is not None else ""
        (partial / "dump" / f"{prefix}{name}.{suffix}_after_optimizations.hlo.pb").write_bytes(
            m.proto
        )
    (partial / ".complete").touch()
    try:
        partial.rename(folder)
    except OSError:  # another process wrote it first
        shutil.rmtree(partial, ignore_errors=True)


def _unpack_dump(archive: Path, folder: Path, keep: Callable[[str], bool]) -> None:
    """Unpack the `dump/*` members of an archive that `keep` takes, flat, by their file
    names only."""
    partial = Path(tempfile.mkdtemp(prefix=folder.name + "-", dir=folder.parent))
    (partial / "dump").mkdir()
    with zipfile.ZipFile(archive) as z:
        for member in z.infolist():
            parts = PurePosixPath(member.filename).parts
            if member.is_dir() or len(parts) < 2 or parts[-2] != "dump":
                continue
            name = parts[-1]
            if not keep(name) or name in (".", ".."):
                continue  # only HLO modules; no path of the member's own choosing
            if member.file_size > _MAX_ARCHIVE_MEMBER:
                raise ValueError(f"{member.filename} is {member.file_size:,} bytes")
            with z.open(member) as src, (partial / "dump" / name).open("wb") as dst:
                shutil.copyfileobj(src, dst)
    (partial / ".complete").touch()
    try:
        partial.rename(folder)
    except OSError:  # another process unpacked it first
        shutil.rmtree(partial, ignore_errors=True)
