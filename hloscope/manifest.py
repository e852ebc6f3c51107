"""The run manifest (`run.json`): how a run was made, typed.

`hloscope dump` and `hloscope.inspect` write it; every reader gets a `RunManifest` from
`RunManifest.from_json` and reads it by attribute. The JSON keys are the ones run
folders have always had, so older folders still load; a malformed file (wrong types,
truncated, nested too deep, numbers out of range) is one `DocumentError`. Its sections
are typed too: the run's outcome is a `RunStatus`, its frameworks are `Framework`s, and
`--profile`'s settings are a `ProfileSettings`, each with `to_json`/`from_json`.
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from hloscope.errors import DocumentError
from hloscope.frameworks import Framework, join_frameworks, split_frameworks

__all__ = [
    "MANIFEST",
    "SCHEMA_VERSION",
    "Compile",
    "ModuleEntry",
    "ProfileSettings",
    "RunManifest",
    "RunStatus",
    "Target",
]

MANIFEST = "run.json"
"""File name of the manifest in a run folder."""

SCHEMA_VERSION = 1
"""Version of the manifest's JSON layout."""


class RunStatus(str, enum.Enum):
    """How a run ended, as `run.json`'s `status` records it.

    Example:
        >>> RunStatus("no-modules").failed, RunStatus.OK.failed
        (True, False)
    """

    RUNNING = "running"
    """Started and not finished (hloscope stopped before the script ended)."""
    OK = "ok"
    """The script exited 0 and XLA compiled at least one module."""
    FAILED = "failed"
    """The script exited non-zero, or its output could not all be saved."""
    INTERRUPTED = "interrupted"
    """Ctrl-C or a signal stopped it."""
    NO_MODULES = "no-modules"
    """The script succeeded but XLA compiled nothing."""
    MODULE_NOT_FOUND = "module-not-found"
    """`hloscope dump -m NAME` found no module NAME; nothing ran."""

    def __str__(self) -> str:
        return self.value

    @property
    def failed(self) -> bool:
        """Whether the run did not end well (anything but `ok`)."""
        return self is not RunStatus.OK


@dataclass(frozen=True)
class ProfileSettings:
    """`hloscope dump --profile` as the run recorded it (`run.json`'s `profile`).

    Attributes:
        frameworks: Before the run, the one framework `--framework` asked for (empty:
            whichever the script uses); after it, the frameworks whose profile holds
            the compiled modules.
        dir: The profile folder, relative to the run folder.
        skip_first: Executions of each module left out as warm-up.
        max_executions: Steady-state executions kept per module (None: all).
        python_trace: Whether Python calls were recorded too.
        profiled: The frameworks whose profiler ran (after the run).
        keras_backend: The backend of the Keras the script imported, if any.

    Example:
        >>> s = ProfileSettings.from_json({"framework": "jax", "skip_first": 2})
        >>> s.frameworks, s.skip_first, s.to_json()["framework"]
        ((<Framework.JAX: 'jax'>,), 2, 'jax')
    """

    frameworks: tuple[Framework, ...] = ()
    dir: str = "profile"
    skip_first: int = 1
    max_executions: int | None = None
    python_trace: bool = False
    profiled: tuple[Framework, ...] = ()
    keras_backend: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The `profile` object of `run.json` (`framework` joined as `jax+tensorflow`,
        null for none)."""
        return {
            "framework": join_frameworks(self.frameworks) or None,
            "dir": self.dir,
            "skip_first": self.skip_first,
            "max_executions": self.max_executions,
            "python_trace": self.python_trace,
            "profiled": [f.value for f in self.profiled],
            "keras_backend": self.keras_backend,
        }

    @classmethod
    def from_json(cls, doc: Any, *, where: str = MANIFEST) -> ProfileSettings:
        """Read `run.json`'s `profile` object, checking each field's type.

        Frameworks this hloscope does not know are left out (a newer one wrote them).

        Raises:
            DocumentError: A field has the wrong type or is out of range.
        """
        if not isinstance(doc, dict):
            raise DocumentError("field 'profile' should be an object", where=where)
        r = _Reader(doc, f"{where} (profile)")
        skip = r.integer("skip_first")
        limit = r.integer("max_executions")
        if (skip is not None and skip < 0) or (limit is not None and limit < 1):
            raise DocumentError(
                "profile.skip_first must be 0 or more and max_executions 1 or more",
                where=where,
            )
        profiled = r.items("profiled")
        if isinstance(doc.get("profiled"), dict):  # the child's own form: name -> details
            profiled = list(doc["profiled"])
        if not all(isinstance(x, str) for x in profiled):
            raise DocumentError("profile.profiled should be a list of names", where=where)
        return cls(
            frameworks=split_frameworks(r.text("framework")),
            dir=_relative(r.text("dir") or "profile", where, "profile.dir"),
            skip_first=1 if skip is None else skip,
            max_executions=limit,
            python_trace=bool(r.flag("python_trace")),
            profiled=split_frameworks("+".join(profiled)),
            keras_backend=r.text("keras_backend"),
        )


@dataclass(frozen=True)
class Target:
    """What `hloscope dump` ran.

    Attributes:
        kind: `script` or `module` (`python -m`).
        name: The script path or module name.
        args: The arguments given to it.

    Example:
        >>> hloscope.RunManifest(target=hloscope.Target('module', 'pkg.train')).script
        '-m pkg.train'
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

    Example:
        >>> entry = hloscope.ModuleEntry(key='0030.jit_mlp', name='jit_mlp', id='0030')
        >>> doc = hloscope.RunManifest(modules=(entry,)).to_json()
        >>> hloscope.RunManifest.from_json(doc).modules[0].key
        '0030.jit_mlp'
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
        framework: The framework that compiled.
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

    Example:
        >>> c = hloscope.Compile(hloscope.Framework.JAX, 'jit(mlp)', 0.25, {'compile': 0.25})
        >>> hloscope.RunManifest(compiles=(c,)).compile_s
        0.25
    """

    framework: Framework
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
        profile: `--profile` settings, None when not profiled.
        status: How the run ended; None for a bare dump.
        exit_code: The script's exit code.
        interrupted: Whether Ctrl-C or a signal stopped it.
        stopped_by: What ended the run early or spoilt it: the signal hloscope stopped
            the script for (`SIGINT`, `SIGTERM`, `SIGHUP`), or a failure of its own
            (`stdout.log: cannot write (No space left on device)`).
        wall_time_s: The script's wall time, seconds.
        frameworks: What the script compiled with (sorted; empty when not known);
            `framework` gives them as one name.
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

    Example:
        >>> manifest = hloscope.load_run("tests/data/tf_dense_relu").manifest
        >>> manifest.source, manifest.status
        ('', None)
        >>> m = hloscope.RunManifest(source='dump', frameworks=(hloscope.Framework.JAX,))
        >>> hloscope.RunManifest.loads(m.dumps()) == m, m.framework
        (True, 'jax')
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
    profile: ProfileSettings | None = None
    status: RunStatus | None = None
    exit_code: int | None = None
    interrupted: bool | None = None
    stopped_by: str | None = None
    wall_time_s: float | None = None
    frameworks: tuple[Framework, ...] = ()
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
    def framework(self) -> str | None:
        """The frameworks as one name, as `run.json` writes it (`tensorflow`, `jax`,
        `jax+tensorflow`); None when not known."""
        return join_frameworks(self.frameworks) or None

    @property
    def error(self) -> str | None:
        """The error that ended the run, in one line: the script's uncaught exception
        (`Type: message`), else XLA's or the framework's reason for not compiling from
        the log, else what stopped it; None when nothing went wrong."""
        if self.status in (None, RunStatus.OK):
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
            if f.name == "frameworks":
                doc["framework"] = self.framework
                continue
            if isinstance(value, Target):
                value = {"kind": value.kind, "name": value.name, "args": list(value.args)}
            elif f.name == "modules":
                value = [_entry_doc(m) for m in value]
            elif f.name == "compiles":
                value = [_compile_doc(c) for c in value]
            elif isinstance(value, ProfileSettings):
                value = value.to_json()
            elif isinstance(value, RunStatus):
                value = value.value
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
            DocumentError: A field has the wrong type, or the document is not an object.
        """
        if not isinstance(doc, dict):
            raise DocumentError("not a run manifest (expected a JSON object)", where=where)
        r = _Reader(doc, where)
        target = r.obj("target")
        profile = r.obj("profile")
        status = r.text("status")
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
            profile=ProfileSettings.from_json(profile, where=where)
            if profile is not None
            else None,
            status=_status(status, where) if status is not None else None,
            exit_code=r.integer("exit_code"),
            interrupted=r.flag("interrupted"),
            stopped_by=r.text("stopped_by"),
            wall_time_s=r.number("wall_time_s"),
            frameworks=split_frameworks(r.text("framework")),
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
            DocumentError: Not JSON, nested too deep, or malformed (see `from_json`).
        """
        try:
            doc = json.loads(text)
        except RecursionError:
            raise DocumentError("not a run manifest (JSON nested too deep)", where=where) from None
        except (ValueError, UnicodeDecodeError) as e:
            raise DocumentError(f"not a readable run manifest ({e})", where=where) from None
        return cls.from_json(doc, where=where)


# ---------------------------------------------------------------------------------------


class _Reader:
    """Typed field access on a manifest object, with one clear error per bad field."""

    def __init__(self, doc: Mapping[str, Any], where: str) -> None:
        self.doc, self.where = doc, where

    def _bad(self, key: str, expected: str) -> DocumentError:
        got = type(self.doc.get(key)).__name__
        return DocumentError(f"field {key!r} should be {expected}, not {got}", where=self.where)

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
        value: int | None = self._get(key, int, "an integer")
        if value is not None and abs(value) > 2**63:
            raise DocumentError(f"field {key!r} is out of range", where=self.where)
        return value

    def number(self, key: str) -> float | None:
        value = self._get(key, (int, float), "a number")
        if value is None:
            return None
        if isinstance(value, int) and abs(value) > 2**63:
            raise DocumentError(f"field {key!r} is out of range", where=self.where)
        if not math.isfinite(value):
            raise DocumentError(f"field {key!r} is not a finite number", where=self.where)
        return float(value)

    def flag(self, key: str) -> bool | None:
        value: bool | None = self._get(key, bool, "true or false")
        return value

    def obj(self, key: str) -> dict[str, Any] | None:
        value: dict[str, Any] | None = self._get(key, dict, "an object")
        return value

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
            raise DocumentError(f"field {key!r} should map names to strings", where=self.where)
        return {_clean(k): _clean(v) for k, v in value.items() if v is not None}


def _clean(text: str) -> str:
    """`text` without lone surrogates (JSON can carry them; no terminal can print them)."""
    return text.encode("utf-8", "replace").decode("utf-8") if not text.isascii() else text


def _relative(path: str, where: str, key: str = "dump_dir") -> str:
    """A path inside the run folder: neither absolute nor climbing out with `..`."""
    for flavour in (PurePosixPath(path), PureWindowsPath(path)):
        if flavour.is_absolute() or flavour.anchor or ".." in flavour.parts:
            raise DocumentError(
                f"{key} {path!r} points outside the run folder; hloscope reads only inside it",
                where=where,
            )
    return path


def _target(doc: Mapping[str, Any], where: str) -> Target:
    r = _Reader(doc, f"{where} (target)")
    return Target(kind=r.text("kind") or "script", name=r.text("name") or "", args=r.texts("args"))


def _entry(doc: Any, where: str) -> ModuleEntry:
    if not isinstance(doc, dict):
        raise DocumentError("each of 'modules' should be an object", where=where)
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
        raise DocumentError("each of 'compiles' should be an object", where=where)
    r = _Reader(doc, f"{where} (compiles)")
    phases = r.obj("phases") or {}
    for name, value in phases.items():
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise DocumentError(f"compiles[].phases.{name} should be a number", where=where)
        if not math.isfinite(value):
            raise DocumentError(f"compiles[].phases.{name} is not a finite number", where=where)
    framework = Framework.lookup(r.text("framework") or "")
    if framework is None:
        raise DocumentError(
            f"compiles[].framework {doc.get('framework')!r} is no framework hloscope knows",
            where=where,
        )
    return Compile(
        framework=framework,
        function=r.text("function") or "",
        seconds=r.number("seconds") or 0.0,
        phases={_clean(k): float(v) for k, v in phases.items()},
        module=r.text("module"),
        reason=r.text("reason"),
    )


def _compile_doc(c: Compile) -> dict[str, Any]:
    return {
        "framework": c.framework.value,
        "function": c.function,
        "seconds": c.seconds,
        "phases": dict(c.phases),
        "module": c.module,
        "reason": c.reason,
    }


def _status(text: str, where: str) -> RunStatus:
    try:
        return RunStatus(text)
    except ValueError:
        known = ", ".join(s.value for s in RunStatus)
        raise DocumentError(
            f"field 'status' is {text!r}, not one of {known}", where=where
        ) from None


def _entry_doc(m: ModuleEntry) -> dict[str, Any]:
    return {f.name: getattr(m, f.name) for f in fields(m)}


def _plain(doc: Any, where: str, key: str) -> dict[str, Any] | None:
    """An object of scalars or lists of strings (`profile`, `exception`, a device),
    checked to hold nothing else."""
    if doc is None:
        return None
    if not isinstance(doc, dict):
        raise DocumentError(f"field {key} should be an object", where=where)
    for name, value in doc.items():
        if isinstance(value, list) and all(isinstance(x, str) for x in value):
            continue
        if isinstance(value, float) and not math.isfinite(value):
            raise DocumentError(f"field {key}.{name} is not a finite number", where=where)
        if isinstance(value, int) and abs(value) > 2**63:
            raise DocumentError(f"field {key}.{name} is out of range", where=where)
        if not isinstance(value, str | int | float | bool | None):
            raise DocumentError(f"field {key}.{name} should be a plain value", where=where)
    return {_clean(k): _clean_value(v) for k, v in doc.items()}


def _clean_value(value: Any) -> Any:
    if isinstance(value, str):
        return _clean(value)
    if isinstance(value, list):
        return [_clean(x) for x in value]
    return value
