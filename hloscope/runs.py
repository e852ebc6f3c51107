"""Runs: the saved unit every hloscope command reads, and the loader that finds them.

A run is a folder written by `hloscope dump` or `hloscope.inspect` (a `run.json` manifest,
the logs and the raw XLA dump under `dump/`), a bare XLA dump folder made by something
else, one HLO text file, an nsys-jax archive, or a profile (`*.xplane.pb`), whose
compiled modules the profiler recorded (the last two unpacked into a folder by
`hloscope.unpack`). `load_run` turns any of these into a `Run`: its modules, each with
the before/after-optimization file pair, parsed lazily on first use.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hloscope.errors import HloParseError, HloscopeError, UsageError
from hloscope.files import inside, read_regular
from hloscope.hlo.fusion_log import SUFFIX as FUSION_LOG_SUFFIX
from hloscope.hlo.fusion_log import FusionDecisions, find_log, read_decisions
from hloscope.hlo.model import HloModule
from hloscope.hlo.xspace import METADATA_PLANE, read_xspace_hlo
from hloscope.manifest import MANIFEST, RunManifest
from hloscope.status import reading
from hloscope.unpack import is_nsys_archive, is_xspace, unpacked_nsys, unpacked_xspace

__all__ = [
    "MANIFEST",
    "ModuleDump",
    "Run",
    "dump_file_info",
    "is_trivial",
    "left_out_of_dump",
    "load_run",
    "module_header",
    "read_manifest",
    "scan_dump_dir",
]

# A manifest is a few kilobytes; reading stops well past that.
MAX_MANIFEST_BYTES = 16 * 1024 * 1024

# `[<timestamp>.]module_<id>.<name>.before_optimizations.txt` and
# `[<timestamp>.]module_<id>.<name>.<platform>_after_optimizations.txt` (or `.hlo.pb`,
# `.hlo.pb.xz`: binary HloProto, as nsys-jax and --xla_dump_hlo_as_proto write), where <platform>
# is `cpu`, `gpu`, `sm_80_gpu`, `sm_9.0_gpu`, `sm_100a_gpu`, `gfx950_gpu`, `tpu`, ...
# TensorFlow up to ~2.10 prefixes a microsecond timestamp; `module_<id>.` is missing from
# files some tools write by hand. The name is greedy so that module names with dots
# (`a_inference_f_12__..._.1`) stay whole.
_DUMP_NAME = re.compile(
    r"(?:(?P<stamp>\d{10,})\.)?"
    r"(?:module_(?P<id>\d+)\.)?"
    r"(?P<name>.+)\."
    r"(?:(?P<before>before_optimizations)"
    r"|(?P<platform>(?:sm_\d+(?:\.\d+)?[a-z]?_|[a-z]+\d+[a-z]*_)?[a-z]+)_after_optimizations)"
    r"\.(?:txt|hlo\.pb|hlo\.pb\.xz)"
)
_DUMP_SUFFIXES = (".txt", ".hlo.pb", ".hlo.pb.xz")
# `dump_file_info`'s reading of a name: (stamp, module id, module name, platform)
_DumpInfo = tuple[str | None, str | None, str, str | None]
_HEADER = re.compile(r"^\s*HloModule\s+[%@]?([\w.\-]+)([^\n]*)", re.M)
_TRIVIAL_INSTRUCTIONS = 5
_HEAD_BYTES = 65536

# Modules JAX compiles on the side when a program runs eager ops (parameter init, RNG
# seeding, printing results): `jit_<name>` for these names is a helper, not the model.
_JAX_HELPERS = frozenset(
    {
        # lax primitives and jnp functions run eagerly outside jit
        "broadcast_in_dim", "convert_element_type", "concatenate", "reshape", "squeeze",
        "expand_dims", "transpose", "dynamic_slice", "dynamic_update_slice", "gather",
        "scatter", "slice", "unstack", "stack", "iota", "copy", "stage", "multi_slice",
        "sqrt", "rsqrt", "true_divide", "divide", "multiply", "add", "subtract", "negative",
        "astype", "where", "full", "zeros", "ones", "zeros_like", "ones_like", "arange",
        "clip",
        # jax.random and its threefry implementation
        "threefry_seed", "threefry_split", "threefry_fold_in", "threefry_random_bits",
        "threefry2x32", "random_bits", "random_seed", "random_wrap", "random_unwrap",
        "random_split", "random_fold_in", "normal", "uniform", "randint", "bernoulli",
        "truncated_normal", "permutation", "choice", "gamma", "split", "fold_in",
        # jnp reductions used to print results
        "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_any",
        "reduce_all", "mean", "std", "var", "argmax", "argmin", "sum", "max", "min",
        "cumsum", "allclose", "isclose",
    }
)  # fmt: skip


@dataclass(frozen=True)
class ModuleDump:
    """One compiled HLO module of a run: its before/after-optimization files.

    Attributes:
        name: The HloModule name (`jit_mlp`, `a_inference_f_18__XlaMustCompile_...`).
        module_id: XLA's module number as printed in the file name (`"0008"`), or None
            when the file name has none.
        before: The `*.before_optimizations.txt` file, if dumped.
        after: The `*.<platform>_after_optimizations.txt` file, if dumped.
        platform: What the module was compiled for, from the after file's name: `cpu`,
            `gpu`, `sm_90`, `gfx950`, ...; None without an after file.
        stamp: The timestamp prefix older TensorFlow puts on file names, if any.
        qualified: Whether the key carries the stamp (same id and name dumped by
            several processes into one folder).

    Example:
        >>> dump = hloscope.load_run("tests/data/jax_mlp").main()
        >>> dump.key, dump.module_id, dump.platform, dump.load_after().name
        ('0030.jit_mlp', '0030', 'cpu', 'jit_mlp')
    """

    name: str
    module_id: str | None
    before: Path | None
    after: Path | None
    platform: str | None
    stamp: str | None = field(default=None, compare=False)
    # Set when another process's dump in the same folder has the same id and name.
    qualified: bool = field(default=False, compare=False, repr=False)

    @property
    def key(self) -> str:
        """A short id, unique within the run: `"0008.jit_mlp"` (the name without an id;
        prefixed with the timestamp when two processes dumped the same id and name)."""
        key = f"{self.module_id}.{self.name}" if self.module_id is not None else self.name
        return f"{self.stamp}.{key}" if self.qualified and self.stamp else key

    @property
    def id_number(self) -> int | None:
        """The module id as a number, or None."""
        return int(self.module_id) if self.module_id is not None else None

    def load_before(self) -> HloModule | None:
        """The parsed before-optimization module, or None without that file.

        Raises:
            HloParseError: The file is not readable HLO text.
        """
        return _load(self.before) if self.before is not None else None

    def load_after(self) -> HloModule | None:
        """The parsed after-optimization module, or None without that file.

        Raises:
            HloParseError: The file is not readable HLO text.
        """
        return _load(self.after) if self.after is not None else None

    def load_fusion_decisions(self) -> FusionDecisions | None:
        """XLA's priority-fusion decisions for this module, from the log XLA's GPU
        fusion pass writes beside the after-optimization dump; None without one.

        Raises:
            HloParseError: The log is not readable protobuf text format.
        """
        log = find_log(self.after)
        return read_decisions(log) if log is not None else None


@dataclass(frozen=True)
class Run:
    """A captured run: what `load_run` returns and every report reads.

    Attributes:
        path: The run folder, the dump folder, or the single file it was loaded from.
        manifest: What `run.json` records; empty (`RunManifest()`) for bare dumps and
            single files.
        modules: The modules, ordered by module id.
        dump_dir: The folder with the XLA dump files; None for a single file.
        left_out: Files of the dump folder, named as HLO dumps, that were not read, each
            with why (`"dump/module_0099.x.before_optimizations.txt: a link out of the
            run folder; not read"`): a link out of the run, a FIFO, a device, a broken
            link. What `report` warns of on stderr.

    Example:
        >>> run = hloscope.load_run("tests/data/jax_mlp")
        >>> run.module('30').name, run.module('jit_mlp').key
        ('jit_mlp', '0030.jit_mlp')
    """

    path: Path
    manifest: RunManifest
    modules: tuple[ModuleDump, ...]
    dump_dir: Path | None
    left_out: tuple[str, ...] = ()

    @property
    def platform(self) -> str | None:
        """What the modules were compiled for (`cpu`, `sm_90`, ...), if known."""
        return self.manifest.platform or platform_of(self.modules)

    def main(self) -> ModuleDump:
        """The biggest module that is not a trivial helper (what `graph` draws by default).

        Raises:
            UsageError: The run holds no modules.
        """
        if not self.modules:
            raise UsageError(f"{self.path} holds no modules")
        if len(self.modules) == 1:  # no file to parse to tell whether it is trivial
            return self.modules[0]
        candidates = [m for m in self.modules if not is_trivial(m)] or list(self.modules)
        return max(candidates, key=_dump_size)

    def module(self, pattern: str) -> ModuleDump:
        """Find one module by key, name, id or unique substring of its key.

        Args:
            pattern: `"0030.jit_mlp"`, `"jit_mlp"`, `"0030"`, `"30"` or `"mlp"`.

        Returns:
            The one module that matches.

        Raises:
            UsageError: No module or several modules match; the message lists candidates.
        """
        for exact in (
            [m for m in self.modules if m.key == pattern],
            [m for m in self.modules if m.name == pattern],
            [m for m in self.modules if pattern.isdigit() and m.id_number == int(pattern)],
            [m for m in self.modules if pattern in m.key],
        ):
            if len(exact) == 1:
                return exact[0]
            if len(exact) > 1:
                raise UsageError(
                    f"{pattern!r} matches {len(exact)} modules in {self.path}: "
                    f"{_listing(exact)}; pass a module key"
                )
        if not self.modules:
            raise UsageError(f"{self.path} holds no modules, so none matches {pattern!r}")
        raise UsageError(
            f"no module matches {pattern!r} in {self.path}; modules: {_listing(self.modules)}"
        )


def load_run(path: str | Path) -> Run:
    """Load a run folder, a bare XLA dump folder, a single HLO text file, an nsys-jax
    archive, or a profile.

    Args:
        path: A folder with `run.json` (made by `hloscope dump` or `hloscope.inspect`), a
            folder XLA dumped into (`--xla_dump_to`), one `.txt`/`.hlo` module file, an
            nsys-jax `.zip`, or an `*.xplane.pb` profile (its modules are the optimized
            HLO the profiler recorded in it; its events are the run's timings).

    Returns:
        The run; modules are parsed only when asked for.

    Raises:
        UsageError: The path is missing, is a folder without HLO dumps, or is a profile
            that carries no HLO.
        ProfileReadError: An `*.xplane.pb` that is not an XSpace.

    Example:
        >>> run = hloscope.load_run("tests/data/jax_mlp")
        >>> len(run.modules), run.main().key, run.platform
        (21, '0030.jit_mlp', 'cpu')
    """
    p = Path(path)
    if p.is_file() and is_nsys_archive(p):
        return _load_nsys_zip(p)
    if p.is_file() and is_xspace(p):
        return _load_xspace(p)
    if not p.exists():
        raise UsageError(
            f"{p}: no such file or folder; pass a run folder (made by `hloscope dump`), "
            "an XLA dump folder or an HLO .txt file"
        )
    if p.is_file():
        return _load_file(p)
    if not p.is_dir():
        raise UsageError(
            f"{p}: not a regular file or a folder (a device or a pipe?); pass a run folder, "
            "an XLA dump folder or an HLO .txt file"
        )
    manifest_path = p / MANIFEST
    if manifest_path.exists() or manifest_path.is_symlink():
        if not inside(manifest_path, p):
            raise UsageError(f"{manifest_path} is a link out of the run folder; not read")
        manifest = read_manifest(manifest_path)
        dump_dir = _dump_dir(p, manifest.dump_dir)
        modules = scan_dump_dir(dump_dir, root=p)
        return Run(p, manifest, modules, dump_dir, left_out_of_dump(dump_dir, p))
    modules = scan_dump_dir(p)
    if modules:
        return Run(p, RunManifest(), modules, p, left_out_of_dump(p, p))
    # A folder holding the dump one level down (`hlo/`, `dump/`, `xla_dump/`).
    try:
        subdirs = sorted(d for d in p.iterdir() if d.is_dir() and inside(d, p))
    except OSError as e:
        raise UsageError(f"{p}: cannot list the folder ({e.strerror or e})") from None
    runs = [d for d in subdirs if (d / MANIFEST).is_file()]
    if runs:
        names = ", ".join(str(d) for d in runs[-3:])
        raise UsageError(f"{p} holds {len(runs)} runs, not one; pass one of them (latest: {names})")
    nested = [(d, scan_dump_dir(d, root=p)) for d in subdirs]
    nested = [(d, mods) for d, mods in nested if mods]
    if len(nested) == 1:
        d, mods = nested[0]
        return Run(p, _bare_manifest(p, mods), mods, d, left_out_of_dump(d, p))
    if len(nested) > 1:
        raise UsageError(
            f"{p} holds several dump folders ({', '.join(str(d) for d, _ in nested)}); "
            "pass one of them"
        )
    raise UsageError(
        f"{p}: no HLO dumps here (no *.before_optimizations.txt or "
        "*_after_optimizations.txt files); make a run with `hloscope dump SCRIPT.py`, or "
        "dump with XLA_FLAGS='--xla_dump_to=DIR --xla_dump_hlo_as_text'"
    )


NSYS_SOURCE = "nsys-jax"
"""`RunManifest.source` of an nsys-jax archive loaded as a run."""


def _bare_manifest(folder: Path, modules: Iterable[ModuleDump]) -> RunManifest:
    """What a folder without run.json tells of itself: an unpacked nsys-jax archive says
    so; a bare dump says nothing."""
    if is_nsys_archive(folder):
        return RunManifest(source=NSYS_SOURCE, platform=platform_of(modules))
    return RunManifest()


XSPACE_SOURCE = "xspace"
"""`RunManifest.source` of a profile file loaded as a run (its embedded HLO modules)."""


def _load_nsys_zip(path: Path) -> Run:
    """An nsys-jax zip as a run: its `dump/`, unpacked once into a cache folder
    (`hloscope.unpack`; the zip itself is never changed)."""
    folder = unpacked_nsys(path, keep=_dump_member)
    modules = scan_dump_dir(folder / "dump", root=folder)  # no link out of the cache
    if not modules:
        raise UsageError(f"{path}: this nsys-jax archive holds no HLO dump (no dump/ folder)")
    manifest = RunManifest(source=NSYS_SOURCE, platform=platform_of(modules))
    return Run(path, manifest, modules, folder / "dump")


def _dump_member(name: str) -> bool:
    """Which members of an archive's `dump/` are unpacked: HLO modules and XLA's GPU
    fusion logs (`hlo.fusion_log`)."""
    return dump_file_info(name) is not None or name.endswith(FUSION_LOG_SUFFIX)


def _load_xspace(path: Path) -> Run:
    """A profile as a run: the optimized HLO of each module it ran, which the profiler
    recorded in the file, kept once as binary dumps in a cache folder
    (`hloscope.unpack`). The profile itself is the run's timing
    (`timing.sources.XSpaceSource`).

    Raises:
        ProfileReadError: The file is not an XSpace.
        UsageError: It carries no HLO module, or the cache cannot be written.
    """
    space = read_xspace_hlo(path)
    if not space.modules:
        raise UsageError(
            f"{path}: this profile carries no HLO module (no `Hlo Proto` in its "
            f"{METADATA_PLANE} plane), so it is no run; `hloscope profile {path}` times it"
        )
    folder = unpacked_xspace(path, space)
    modules = scan_dump_dir(folder / "dump", root=folder)
    manifest = RunManifest(source=XSPACE_SOURCE, platform=space.platform, device=space.device)
    return Run(path, manifest, modules, folder / "dump")


def dump_file_info(name: str) -> tuple[str | None, str | None, str, str | None] | None:
    """Read an XLA dump file name.

    Args:
        name: A file name such as `module_0008.jit_mlp.cpu_after_optimizations.txt`.

    Returns:
        `(stamp, module_id, module_name, platform)`, with platform None for a
        before-optimization file, or None when the name is not a before/after
        HLO text dump (buffer assignments, `.ll`, `.o`, `.mlir`, debug options, ...).
    """
    # what the pattern asks first, at C speed: most of a dump folder is not modules
    # (buffer assignments, `.ll`, `.o`: 3,102 of an EfficientNet dump's 3,432 files)
    if not (name.endswith(_DUMP_SUFFIXES) and "optimizations." in name):
        return None
    m = _DUMP_NAME.fullmatch(name)
    if m is None:
        return None
    platform = m["platform"]
    return m["stamp"], m["id"], m["name"], _normalise_platform(platform) if platform else None


def scan_dump_dir(folder: Path, *, root: Path | None = None) -> tuple[ModuleDump, ...]:
    """The modules in one XLA dump folder (not recursive), ordered by module id.

    Files other than before/after HLO dumps are ignored. Where a side was dumped both as
    text and as a binary proto, the text is read (its line numbers show in the page).
    Links that lead out of `root` are ignored too: a run folder from someone else must
    not make hloscope read, and quote, files elsewhere on this machine.

    Args:
        folder: The dump folder.
        root: The run folder reading must stay in (default: `folder`).
    """
    groups: dict[tuple[str | None, str | None, str], dict[str, Any]] = {}
    base = folder if root is None else root
    if not inside(folder, base):
        return ()
    for file_name, info in _dump_names(folder):
        entry = folder / file_name
        if not entry.is_file():
            continue
        if entry.is_symlink() and not inside(entry, base):
            continue
        stamp, module_id, name, platform = info
        group = groups.setdefault((stamp, module_id, name), {})
        side = "before" if platform is None else "after"
        if side not in group or _prefer(entry, group[side]):
            group[side] = entry
            if platform is not None:
                group["platform"] = platform
    modules = [
        ModuleDump(
            name=name,
            module_id=module_id,
            before=g.get("before"),
            after=g.get("after"),
            platform=g.get("platform"),
            stamp=stamp,
        )
        for (stamp, module_id, name), g in groups.items()
    ]
    modules = _disambiguate(modules)
    modules.sort(key=lambda m: (m.id_number is None, m.id_number or 0, m.stamp or "", m.name))
    return tuple(modules)


def left_out_of_dump(folder: Path, root: Path) -> tuple[str, ...]:
    """The entries of a dump folder named as HLO dumps that `scan_dump_dir` does not
    read, each with why: a link out of `root`, a FIFO or a device, a broken link.

    A run folder someone else made may hold them; they are never read (a link to
    `/etc/passwd` named as a module would quote it), but a module silently missing
    would read as "XLA compiled nothing", so `report` names them.

    Args:
        folder: The dump folder.
        root: The run folder reading must stay in.
    """
    out = []
    for file_name, _ in _dump_names(folder) if inside(folder, root) else ():
        entry = folder / file_name
        shown = entry.relative_to(root) if entry.is_relative_to(root) else entry
        if entry.is_symlink() and not entry.exists():
            out.append(f"{shown}: a broken link; not read")
        elif entry.is_symlink() and not inside(entry, root):
            out.append(f"{shown}: a link out of the run folder; not read")
        elif entry.exists() and not entry.is_file() and not entry.is_dir():
            out.append(f"{shown}: not a regular file (a FIFO or a device); not read")
    return tuple(out)


def _dump_names(folder: Path) -> list[tuple[str, _DumpInfo]]:
    """The names in a folder that name HLO dumps, sorted (the order of their paths
    there), each with `dump_file_info`'s reading of it; none when it cannot be listed."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [(n, info) for n in names if (info := dump_file_info(n)) is not None]


def _prefer(new: Path, old: Path) -> bool:
    """Text over binary proto for the same module and side; else the first found."""
    return new.name.endswith(".txt") and not old.name.endswith(".txt")


def is_trivial(module: ModuleDump) -> bool:
    """Whether a module is a small helper rather than the user's model.

    JAX compiles every eager op a program runs (`jit_broadcast_in_dim`,
    `jit_convert_element_type`, RNG seeding and sampling such as `jit__threefry_split`
    and `jit__normal`, `jit__multi_slice`, the reductions that print results) as its
    own module. Those, and any module of at most five instructions, are trivial.

    Args:
        module: The module; its before-optimization file is parsed when the name does
            not decide (the after file when there is no before file).

    Example:
        >>> run = hloscope.load_run("tests/data/jax_mlp")
        >>> hloscope.is_trivial(run.module('jit__threefry_split')), hloscope.is_trivial(run.main())
        (True, False)
    """
    name = re.sub(r"\.\d+$", "", module.name)
    for prefix in ("jit__", "jit_", "pjit__", "pjit_"):
        if name.startswith(prefix):
            base = name[len(prefix) :]
            if base in _JAX_HELPERS or base.startswith(("threefry", "random_")):
                return True
            break
    try:
        parsed = module.load_before() or module.load_after()
    except HloscopeError:  # unreadable modules are shown, not hidden
        return False
    return parsed is not None and parsed.instruction_count <= _TRIVIAL_INSTRUCTIONS


def module_header(module: ModuleDump) -> str:
    """The text after the module's name on its `HloModule` line (its attributes, such as
    `entry_computation_layout={...}`), read from the head of its before-optimization file
    (else its after file) without parsing the module; "" when unreadable or binary."""
    for path in (module.before, module.after):
        if path is None or not path.name.endswith(".txt"):
            continue
        try:
            with path.open("rb") as f:
                head = f.read(_HEAD_BYTES).decode("utf-8", "replace")
        except OSError:
            continue
        m = _HEADER.search(head)
        if m is not None:
            return m[2]
    return ""


def platform_of(modules: Iterable[ModuleDump]) -> str | None:
    """The most common platform among the modules' after files, or None."""
    counts = Counter(m.platform for m in modules if m.platform)
    return counts.most_common(1)[0][0] if counts else None


# ---------------------------------------------------------------------------------------


def _dump_size(m: ModuleDump) -> int:
    path = m.after or m.before
    try:
        return path.stat().st_size if path is not None else 0
    except OSError:
        return 0


@functools.lru_cache(maxsize=64)
def _load_cached(path: str, mtime_ns: int) -> HloModule:
    from hloscope.hlo.proto import is_proto_path, load_module_file, with_stack_frames

    reading(Path(path))
    if is_proto_path(path):
        return load_module_file(path)
    _check_hlo_start(Path(path))
    return with_stack_frames(load_module_file(path))


def _check_hlo_start(path: Path) -> None:
    """Refuse, without quoting it, a file whose first statement is not `HloModule`.

    The parser's errors quote the offending text; for a file that is not HLO at all
    (a key, a config, a binary dumped under an HLO name) that would copy its first line
    into reports, JSON and HTML.
    """
    try:
        with path.open("rb") as f:
            head = f.read(_HEAD_BYTES).decode("utf-8", "replace")
    except OSError:
        return  # parse_file reports it
    for number, line in enumerate(head.splitlines(), 1):
        text = line.strip()
        if not text or text.startswith("//"):
            continue
        if text.startswith("HloModule"):
            return
        raise HloParseError(
            "not HLO text: expected 'HloModule <name>' first (content not shown)",
            path=str(path),
            line=number,
            column=1,
        )


def _load(path: Path) -> HloModule:
    try:
        mtime = path.stat().st_mtime_ns
    except OSError:
        mtime = 0  # parse_file reports the missing file
    return _load_cached(str(path), mtime)


def _normalise_platform(text: str) -> str:
    """`sm_9.0_gpu` -> `sm_90`, `sm_80_gpu` -> `sm_80`, `gfx950_gpu` -> `gfx950`."""
    if text.endswith("_gpu") and len(text) > 4:
        text = text[:-4]
    return text.replace(".", "")


def _disambiguate(modules: list[ModuleDump]) -> list[ModuleDump]:
    """Keep keys unique: dumps of several processes (timestamped names) may share ids."""
    counts = Counter(m.key for m in modules)
    if all(n == 1 for n in counts.values()):
        return modules
    return [
        dataclasses.replace(m, qualified=True) if counts[m.key] > 1 and m.stamp else m
        for m in modules
    ]


def _listing(modules: Iterable[ModuleDump], limit: int = 12) -> str:
    keys = [m.key for m in modules]
    shown = ", ".join(keys[:limit])
    return shown + (f", ... ({len(keys) - limit} more)" if len(keys) > limit else "")


def _dump_dir(run_dir: Path, name: str) -> Path:
    """The run's dump folder, which must not be a link out of the run folder."""
    dump_dir = run_dir / name
    if not dump_dir.is_dir():
        return run_dir
    if not inside(dump_dir, run_dir):
        raise UsageError(
            f"{dump_dir} is a link out of the run folder; hloscope reads only inside it "
            "(copy the dump into the run folder)"
        )
    return dump_dir


def read_manifest(path: Path) -> RunManifest:
    """Read a run folder's `run.json`.

    Raises:
        UsageError: The file is not a regular file, too big, or not a valid manifest.
    """
    try:
        data = read_regular(path, MAX_MANIFEST_BYTES)
    except OSError as e:
        raise UsageError(f"{path}: cannot read the run manifest ({e.strerror or e})") from None
    return RunManifest.loads(data, where=str(path))


def _load_file(path: Path) -> Run:
    """One HLO text file; its before/after partner in the same folder joins it."""
    info = dump_file_info(path.name)
    if info is not None:
        stamp, module_id, name, platform = info
        for module in scan_dump_dir(path.parent):
            if path in (module.before, module.after):
                return Run(path, RunManifest(), (module,), None)
        is_after = platform is not None
    else:
        name, is_after = _header(path)
        module_id = stamp = platform = None
    module = ModuleDump(
        name=name,
        module_id=module_id,
        before=None if is_after else path,
        after=path if is_after else None,
        platform=platform,
        stamp=stamp,
    )
    return Run(path, RunManifest(), (module,), None)


def _header(path: Path) -> tuple[str, bool]:
    """`(module name, is_scheduled)` from a file's `HloModule` line, without parsing."""
    try:
        with path.open("rb") as f:
            head = f.read(_HEAD_BYTES).decode("utf-8", "replace")
    except OSError as e:
        raise UsageError(f"{path}: cannot read ({e.strerror})") from None
    m = _HEADER.search(head)
    if m is None:
        raise UsageError(f"{path}: not an HLO text file (no 'HloModule' line)")
    return m[1], re.search(r"\bis_scheduled\s*=\s*true\b", m[2]) is not None
