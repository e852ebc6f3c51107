"""The run manifest (`run.json`): how a run was made, typed.

`hloscope dump` and `hloscope.inspect` write it; every reader gets a `RunManifest` from
`RunManifest.from_json` and reads it by attribute. The JSON keys are the ones run
folders have always had, so older folders still load; a malformed file (wrong types,
truncated, nested too deep, numbers out of range) is one `UsageError`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from hloscope.errors import UsageError

__all__ = ["MANIFEST", "SCHEMA_VERSION", "Compile", "ModuleEntry", "RunManifest", "Target"]

MANIFEST = "run.json"
"""File name of the manifest in a run folder."""

SCHEMA_VERSION = 1
"""Version of the manifest's JSON layout."""


@dataclass(frozen=True)
class Target:
    """What `hloscope dump` ran.

    Attributes:
        kind: `script` or `module` (`python -m`).
        name: The script path or module name.
        args: The arguments given to it.
    """

    kind: str
    name: str
    args: tuple[str, ...] = ()


@dataclass(frozen=True)
class ModuleEntry:
    """One module as the writer found it in the dump folder.

    Attributes:
        key: The module's key in the run (`0008.jit_mlp`).
        name: The HloModule name.
        id: XLA's module number from the file name, if any.
        platform: What it was compiled for, if known.
        before: The before-optimization file, relative to the run folder.
        after: The after-optimization file, relative to the run folder.
    """

    key: str
    name: str
    id: str | None = None
    platform: str | None = None
    before: str | None = None
    after: str | None = None


@dataclass(frozen=True)
class Compile:
    """One compile as the framework reported it while the script ran.

    Attributes:
        framework: `jax` or `tensorflow`.
        function: The framework's name for what it compiled (`jit(attend)`,
            `__inference_attend_16`).
        seconds: How long it took: for JAX tracing, lowering and XLA's compile (its
            `jax.monitoring` duration events); for TensorFlow XLA's compile of the
            function (its DeviceCompiler log line; tracing the Python function is not
            included).
        phases: Those seconds by phase (`trace`, `lower`, `compile`).
        module: The key of the dumped module it made, where that can be told.
        reason: The framework's own explanation of why it compiled (JAX's
            `jax_explain_cache_misses`), if it gave one.
    """

    framework: str
    function: str
    seconds: float
    phases: Mapping[str, float] = field(default_factory=dict)
    module: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class RunManifest:
    """Everything `run.json` records; every field optional for old and bare runs.

    Attributes:
        schema_version: Layout version of the file (`SCHEMA_VERSION`).
        source: `dump` (`hloscope dump`), `inspect` (`hloscope.inspect`), or "" for a
            bare XLA dump with no manifest.
        hloscope_version: The hloscope that wrote it.
        command: The hloscope command line that made the run.
        script_command: The script's own command line (`python model.py --batch 8`), as
            arguments.
        target: What `hloscope dump` ran.
        function: What `hloscope.inspect` captured (a function's qualified name).
        python: The interpreter the script ran with.
        cwd: The folder it ran in.
        env: Environment variables hloscope set for the child.
        user_xla_flags: The user's own XLA_FLAGS, kept beside hloscope's.
        xla_flag_conflicts: User flags hloscope overrode.
        module_re: `--module`, the dump filter.
        started_at: When the run started (ISO 8601 with the UTC offset).
        dump_dir: The XLA dump folder, relative to the run folder.
        logs: Log files by stream (`stdout`, `stderr`), relative to the run folder.
        profile: `--profile` settings (`framework`, `skip_first`, `max_executions`,
            ...), None when not profiled.
        status: `running`, `ok`, `failed`, `interrupted`, `no-modules`, ...
        exit_code: The script's exit code.
        interrupted: Whether Ctrl-C or a signal stopped it.
        stopped_by: What ended the run early or spoilt it: the signal hloscope stopped
            the script for (`SIGINT`, `SIGTERM`, `SIGHUP`), or a failure of its own
            (`stdout.log: cannot write (No space left on device)`).
        wall_time_s: The script's wall time, seconds.
        framework: `tensorflow` or `jax`, when known.
        versions: Versions of Python, the framework and jaxlib.
        platform: What the modules were compiled for (`cpu`, `sm_90`, ...).
        device: The device in words (`Intel Xeon ...`, `NVIDIA H100`).
        devices: Every device the frameworks listed (`framework`, `platform`, `kind`, ...).
        framework_env: The XLA- and framework-related environment variables as the script
            left them (`XLA_FLAGS`, `TF_XLA_FLAGS`, `JAX_*`, `KERAS_BACKEND`,
            `CUDA_VISIBLE_DEVICES`, ...), set by the user, by hloscope or by the script.
        exception: The script's uncaught exception (`type`, `message`, `traceback`), if any.
        xla_errors: XLA's error lines from the log, when the run failed.
        modules: The modules found in the dump.
        compiles: Every compile the frameworks reported, in the order they happened.
        compile_notes: What the frameworks said about compiling beyond single compiles
            (TensorFlow's retracing warnings), and why compile times are missing.
    """

    schema_version: int = SCHEMA_VERSION
    source: str = ""
    hloscope_version: str | None = None
    command: tuple[str, ...] = ()
    script_command: tuple[str, ...] = ()
    target: Target | None = None
    function: str | None = None
    python: str | None = None
    cwd: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    user_xla_flags: str | None = None
    xla_flag_conflicts: tuple[str, ...] = ()
    module_re: str | None = None
    started_at: str | None = None
    dump_dir: str = "dump"
    logs: Mapping[str, str] = field(default_factory=dict)
    profile: Mapping[str, Any] | None = None
    status: str | None = None
    exit_code: int | None = None
    interrupted: bool | None = None
    stopped_by: str | None = None
    wall_time_s: float | None = None
    framework: str | None = None
    versions: Mapping[str, str] = field(default_factory=dict)
    platform: str | None = None
    device: str | None = None
    devices: tuple[Mapping[str, Any], ...] = ()
    framework_env: Mapping[str, str] = field(default_factory=dict)
    exception: Mapping[str, Any] | None = None
    xla_errors: tuple[str, ...] = ()
    modules: tuple[ModuleEntry, ...] = ()
    compiles: tuple[Compile, ...] = ()
    compile_notes: tuple[str, ...] = ()

    @property
    def compile_s(self) -> float | None:
        """Seconds the frameworks spent compiling, all compiles together; None when the
        run recorded none (made before hloscope recorded them, or by another tool)."""
        return sum(c.seconds for c in self.compiles) if self.compiles else None

    @property
    def error(self) -> str | None:
        """The error that ended the run, in one line: the script's uncaught exception
        (`Type: message`), else XLA's or the framework's reason for not compiling from
        the log, else what stopped it; None when nothing went wrong."""
        if self.status in (None, "ok"):
            return None
        line = None
        if self.exception:
            kind = str(self.exception.get("type") or "")
            message = str(self.exception.get("message") or "").strip().splitlines()
            line = f"{kind}: {message[0]}" if kind and message else kind or None
        if line is None and self.xla_errors:
            line = self.xla_errors[0]
        return line or self.stopped_by

    @property
    def script(self) -> str | None:
        """What ran, in a few words: the script or `-m module`, or the inspected
        function; None for a bare dump."""
        if self.target is not None:
            return self.target.name if self.target.kind == "script" else f"-m {self.target.name}"
        return self.function

    def updated(self, **changes: Any) -> RunManifest:
        """A copy with some fields changed (writers fill the manifest in two steps)."""
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        """The JSON object `run.json` holds (keys in field order, None kept)."""
        doc: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Target):
                value = {"kind": value.kind, "name": value.name, "args": list(value.args)}
            elif f.name == "modules":
                value = [_entry_doc(m) for m in value]
            elif f.name == "compiles":
                value = [_compile_doc(c) for c in value]
            elif f.name == "devices":
                value = [dict(d) for d in value]
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, Mapping):
                value = dict(value)
            doc[f.name] = value
        return doc

    def dumps(self) -> str:
        """`run.json`'s text."""
        return json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, doc: Any, *, where: str = MANIFEST) -> RunManifest:
        """Read a parsed `run.json` object, checking every field's type.

        Unknown keys are ignored (a newer hloscope may add some); strings lose lone
        surrogates (they cannot be printed); numbers must be finite.

        Args:
            doc: What `json.loads` returned.
            where: The file, for error messages.

        Raises:
            UsageError: A field has the wrong type, or the document is not an object.
        """
        if not isinstance(doc, dict):
            raise UsageError(f"{where}: not a run manifest (expected a JSON object)")
        r = _Reader(doc, where)
        target = r.obj("target")
        return cls(
            schema_version=r.integer("schema_version") or SCHEMA_VERSION,
            source=r.text("source") or "",
            hloscope_version=r.text("hloscope_version"),
            command=r.texts("command"),
            script_command=r.texts("script_command"),
            target=_target(target, where) if target is not None else None,
            function=r.text("function"),
            python=r.text("python"),
            cwd=r.text("cwd"),
            env=r.text_map("env"),
            user_xla_flags=r.text("user_xla_flags"),
            xla_flag_conflicts=r.texts("xla_flag_conflicts"),
            module_re=r.text("module_re"),
            started_at=r.text("started_at") or r.text("started") or r.text("created"),
            dump_dir=_relative(r.text("dump_dir") or "dump", where),
            logs=r.text_map("logs"),
            profile=_plain(r.obj("profile"), where, "profile"),
            status=r.text("status"),
            exit_code=r.integer("exit_code"),
            interrupted=r.flag("interrupted"),
            stopped_by=r.text("stopped_by"),
            wall_time_s=r.number("wall_time_s"),
            framework=r.text("framework"),
            versions=r.text_map("versions"),
            platform=r.text("platform"),
            device=r.text("device"),
            devices=tuple(_plain(d, where, "devices[]") or {} for d in r.items("devices")),
            framework_env=r.text_map("framework_env"),
            exception=_plain(r.obj("exception"), where, "exception"),
            xla_errors=r.texts("xla_errors"),
            modules=tuple(_entry(m, where) for m in r.items("modules")),
            compiles=tuple(_compile(c, where) for c in r.items("compiles")),
            compile_notes=r.texts("compile_notes"),
        )

    @classmethod
    def loads(cls, text: str | bytes, *, where: str = MANIFEST) -> RunManifest:
        """Parse `run.json`'s text.

        Raises:
            UsageError: Not JSON, nested too deep, or malformed (see `from_json`).
        """
        try:
            doc = json.loads(text)
        except RecursionError:
            raise UsageError(f"{where}: not a run manifest (JSON nested too deep)") from None
        except (ValueError, UnicodeDecodeError) as e:
            raise UsageError(f"{where}: not a readable run manifest ({e})") from None
        return cls.from_json(doc, where=where)


# ---------------------------------------------------------------------------------------


class _Reader:
    """Typed field access on a manifest object, with one clear error per bad field."""

    def __init__(self, doc: Mapping[str, Any], where: str) -> None:
        self.doc, self.where = doc, where

    def _bad(self, key: str, expected: str) -> UsageError:
        got = type(self.doc.get(key)).__name__
        return UsageError(f"{self.where}: field {key!r} should be {expected}, not {got}")

    def _get(self, key: str, types: type | tuple[type, ...], expected: str) -> Any:
        value = self.doc.get(key)
        if value is None:
            return None
        if isinstance(value, bool) and bool not in (
            types if isinstance(types, tuple) else (types,)
        ):
            raise self._bad(key, expected)
        if not isinstance(value, types):
            raise self._bad(key, expected)
        return value

    def text(self, key: str) -> str | None:
        value = self._get(key, str, "a string")
        return _clean(value) if value is not None else None

    def integer(self, key: str) -> int | None:
        value = self._get(key, int, "an integer")
        if value is not None and abs(value) > 2**63:
            raise UsageError(f"{self.where}: field {key!r} is out of range")
        return value

    def number(self, key: str) -> float | None:
        value = self._get(key, (int, float), "a number")
        if value is None:
            return None
        if isinstance(value, int) and abs(value) > 2**63:
            raise UsageError(f"{self.where}: field {key!r} is out of range")
        if not math.isfinite(value):
            raise UsageError(f"{self.where}: field {key!r} is not a finite number")
        return float(value)

    def flag(self, key: str) -> bool | None:
        return self._get(key, bool, "true or false")

    def obj(self, key: str) -> dict[str, Any] | None:
        return self._get(key, dict, "an object")

    def items(self, key: str) -> list[Any]:
        return self._get(key, list, "a list") or []

    def texts(self, key: str) -> tuple[str, ...]:
        items = self.items(key)
        if not all(isinstance(x, str) for x in items):
            raise self._bad(key, "a list of strings")
        return tuple(_clean(x) for x in items)

    def text_map(self, key: str) -> dict[str, str]:
        value = self.obj(key) or {}
        if not all(isinstance(v, str | None) for v in value.values()):
            raise UsageError(f"{self.where}: field {key!r} should map names to strings")
        return {_clean(k): _clean(v) for k, v in value.items() if v is not None}


def _clean(text: str) -> str:
    """`text` without lone surrogates (JSON can carry them; no terminal can print them)."""
    return text.encode("utf-8", "replace").decode("utf-8") if not text.isascii() else text


def _relative(path: str, where: str) -> str:
    """A path inside the run folder: neither absolute nor climbing out with `..`."""
    for flavour in (PurePosixPath(path), PureWindowsPath(path)):
        if flavour.is_absolute() or flavour.anchor or ".." in flavour.parts:
            raise UsageError(
                f"{where}: dump_dir {path!r} points outside the run folder; hloscope reads "
                "only inside it"
            )
    return path


def _target(doc: Mapping[str, Any], where: str) -> Target:
    r = _Reader(doc, f"{where} (target)")
    return Target(kind=r.text("kind") or "script", name=r.text("name") or "", args=r.texts("args"))


def _entry(doc: Any, where: str) -> ModuleEntry:
    if not isinstance(doc, dict):
        raise UsageError(f"{where}: each of 'modules' should be an object")
    r = _Reader(doc, f"{where} (modules)")
    return ModuleEntry(
        key=r.text("key") or "",
        name=r.text("name") or "",
        id=r.text("id"),
        platform=r.text("platform"),
        before=r.text("before"),
        after=r.text("after"),
    )


def _compile(doc: Any, where: str) -> Compile:
    if not isinstance(doc, dict):
        raise UsageError(f"{where}: each of 'compiles' should be an object")
    r = _Reader(doc, f"{where} (compiles)")
    phases = r.obj("phases") or {}
    for name, value in phases.items():
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise UsageError(f"{where}: compiles[].phases.{name} should be a number")
        if not math.isfinite(value):
            raise UsageError(f"{where}: compiles[].phases.{name} is not a finite number")
    return Compile(
        framework=r.text("framework") or "",
        function=r.text("function") or "",
        seconds=r.number("seconds") or 0.0,
        phases={_clean(k): float(v) for k, v in phases.items()},
        module=r.text("module"),
        reason=r.text("reason"),
    )


def _compile_doc(c: Compile) -> dict[str, Any]:
    return {
        "framework": c.framework,
        "function": c.function,
        "seconds": c.seconds,
        "phases": dict(c.phases),
        "module": c.module,
        "reason": c.reason,
    }


def _entry_doc(m: ModuleEntry) -> dict[str, Any]:
    return {f.name: getattr(m, f.name) for f in fields(m)}


def _plain(doc: Any, where: str, key: str) -> dict[str, Any] | None:
    """An object of scalars or lists of strings (`profile`, `exception`, a device),
    checked to hold nothing else."""
    if doc is None:
        return None
    if not isinstance(doc, dict):
        raise UsageError(f"{where}: field {key} should be an object")
    for name, value in doc.items():
        if isinstance(value, list) and all(isinstance(x, str) for x in value):
            continue
        if isinstance(value, float) and not math.isfinite(value):
            raise UsageError(f"{where}: field {key}.{name} is not a finite number")
        if isinstance(value, int) and abs(value) > 2**63:
            raise UsageError(f"{where}: field {key}.{name} is out of range")
        if not isinstance(value, str | int | float | bool | None):
            raise UsageError(f"{where}: field {key}.{name} should be a plain value")
    return {_clean(k): _clean_value(v) for k, v in doc.items()}


def _clean_value(value: Any) -> Any:
    if isinstance(value, str):
        return _clean(value)
    if isinstance(value, list):
        return [_clean(x) for x in value]
    return value
