"""The dump child's report: what the bootstrap (`runner.py`) tells `hloscope dump`, typed.

The child runs under any Python and imports nothing from hloscope, so it writes plain
JSON (`.child-report.json` in the run folder) as it ends. The parent reads it once, here,
into a `ChildReport`, and everything after reads attributes: which frameworks and
versions the script imported, the devices they saw, the script's exception, the compile
watch's events and the profilers that ran. A malformed report is a `DocumentError`; a
report that is missing (the child was killed before it could write one) is `None`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hloscope.errors import DocumentError
from hloscope.frameworks import Framework, split_frameworks

__all__ = [
    "CHILD_REPORT",
    "ChildReport",
    "CompileWatchReport",
    "ProfileOutcome",
    "read_child_report",
]

CHILD_REPORT = ".child-report.json"
"""Where the child writes its report, in the run folder (removed once read)."""

_MAX_BYTES = 64 * 1024 * 1024  # events of a long run; far past any real report


@dataclass(frozen=True)
class CompileWatchReport:
    """What the child's compile watch heard (`compile_watch.CompileWatch.stop`).

    Attributes:
        events: JAX's compile events in order, each `(framework, phase, name, value)`.
        used: The frameworks the script traced or compiled with.
        notes: What the watch has to say (why something was not heard).
    """

    events: tuple[tuple[Any, ...], ...] = ()
    used: tuple[Framework, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProfileOutcome:
    """How `--profile` went in the child (`profiler.Profiling.stop`).

    Attributes:
        profiled: The frameworks whose profiler ran.
        keras_backend: The backend of the Keras the script imported, if any.
        errors: What went wrong with the profilers, one line each.
    """

    profiled: tuple[Framework, ...] = ()
    keras_backend: str | None = None
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class TorchXlaOutcome:
    """What the child's PyTorch/XLA hooks did (`torch_xla_hooks.TorchXla.finish`).

    Attributes:
        env: The variables they set as the script imported torch_xla.
        device: The PJRT device type torch_xla ran on (`CPU`, `CUDA`, `TPU`), if read.
        error: Why torch_xla's metrics could not be read, if they could not.
    """

    env: Mapping[str, str] = field(default_factory=dict)
    device: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class ChildReport:
    """The child's report on the script it ran.

    Attributes:
        exit_code: The script's exit status, as the child saw it.
        module_not_found: `-m NAME` named no module; nothing ran.
        exception: The script's uncaught exception (`type`, `message`, `traceback`).
        versions: Python's and each imported framework's version, by package name.
        devices: The devices the frameworks had set up (`framework`, `platform`, `kind`,
            ...).
        environment: The XLA- and framework-related environment variables as the script
            left them.
        compiles: What the compile watch heard; None when it was not set up.
        compile_watch_error: Why the compile watch could not run, if it could not.
        profile: How `--profile` went; None without `--profile`.
        torch_xla: What the PyTorch/XLA hooks did; None when the script did not
            import torch_xla.

    Example:
        >>> r = ChildReport.from_json({"exit_code": 0, "versions": {"jax": "0.10.2"}})
        >>> r.exit_code, r.versions["jax"]
        (0, '0.10.2')
    """

    exit_code: int | None = None
    module_not_found: bool = False
    exception: Mapping[str, Any] | None = None
    versions: Mapping[str, str] = field(default_factory=dict)
    devices: tuple[Mapping[str, Any], ...] = ()
    environment: Mapping[str, str] = field(default_factory=dict)
    compiles: CompileWatchReport | None = None
    compile_watch_error: str | None = None
    profile: ProfileOutcome | None = None
    torch_xla: TorchXlaOutcome | None = None

    @property
    def torch_xla_env(self) -> Mapping[str, str]:
        """The variables the PyTorch/XLA hooks set for the script (empty without them)."""
        return self.torch_xla.env if self.torch_xla is not None else {}

    @property
    def traceback(self) -> tuple[str, ...]:
        """The last lines of the script's traceback, as the child kept them."""
        lines = (self.exception or {}).get("traceback")
        return tuple(str(x) for x in lines) if isinstance(lines, list | tuple) else ()

    def to_json(self) -> dict[str, Any]:
        """The report as the child writes it."""
        doc: dict[str, Any] = {
            "exit_code": self.exit_code,
            "exception": dict(self.exception) if self.exception is not None else None,
            "versions": dict(self.versions),
            "devices": [dict(d) for d in self.devices],
            "environment": dict(self.environment),
        }
        if self.module_not_found:
            doc["error"] = "module-not-found"
        if self.compiles is not None:
            doc["compiles"] = {
                "events": [list(e) for e in self.compiles.events],
                "used": [f.value for f in self.compiles.used],
                "notes": list(self.compiles.notes),
            }
        if self.compile_watch_error is not None:
            doc["compile_watch_error"] = self.compile_watch_error
        if self.profile is not None:
            doc["profile"] = {
                "profiled": {f.value: {} for f in self.profile.profiled},
                "keras_backend": self.profile.keras_backend,
                "errors": list(self.profile.errors),
            }
        if self.torch_xla is not None:
            doc["torch_xla"] = {
                "env": dict(self.torch_xla.env),
                "device": self.torch_xla.device,
                "error": self.torch_xla.error,
            }
        return doc

    @classmethod
    def from_json(cls, doc: Any, *, where: str = CHILD_REPORT) -> ChildReport:
        """Read the child's JSON report, checking each field's type.

        Raises:
            DocumentError: The report is not an object, or a field has the wrong type.
        """
        if not isinstance(doc, dict):
            raise DocumentError("not a child report (expected a JSON object)", where=where)
        exit_code = doc.get("exit_code")
        if exit_code is not None and (
            not isinstance(exit_code, int) or isinstance(exit_code, bool)
        ):
            raise DocumentError("exit_code should be an integer", where=where)
        exception = doc.get("exception")
        if exception is not None and not isinstance(exception, dict):
            raise DocumentError("exception should be an object", where=where)
        devices = doc.get("devices") or []
        if not isinstance(devices, list) or not all(isinstance(d, dict) for d in devices):
            raise DocumentError("devices should be a list of objects", where=where)
        watched = doc.get("compiles")
        profile = doc.get("profile")
        torch_xla = doc.get("torch_xla")
        return cls(
            exit_code=exit_code,
            module_not_found=doc.get("error") == "module-not-found",
            exception=exception,
            versions=_texts(doc.get("versions"), "versions", where),
            devices=tuple(devices),
            environment=_texts(doc.get("environment"), "environment", where),
            compiles=_watch(watched, where) if watched is not None else None,
            compile_watch_error=_text(doc.get("compile_watch_error"), "compile_watch_error", where),
            profile=_profile(profile, where) if profile is not None else None,
            torch_xla=_torch_xla(torch_xla, where) if torch_xla is not None else None,
        )


def read_child_report(path: Path) -> ChildReport | None:
    """Read and remove the child's report.

    Returns:
        The report, or None when the child wrote none (killed before it could).

    Raises:
        DocumentError: The file is not a readable report.
    """
    try:
        with path.open("rb") as f:
            data = f.read(_MAX_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise DocumentError(f"cannot read ({e.strerror or e})", where=str(path)) from None
    finally:
        with contextlib.suppress(OSError):
            path.unlink()
    if len(data) > _MAX_BYTES:
        raise DocumentError(f"larger than {_MAX_BYTES:,} bytes", where=str(path))
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as e:
        raise DocumentError(f"not JSON ({e})", where=str(path)) from None
    return ChildReport.from_json(doc, where=str(path))


def _text(value: Any, key: str, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise DocumentError(f"{key} should be a string", where=where)
    return value


def _texts(value: Any, key: str, where: str) -> dict[str, str]:
    """A name -> text object; None values (a package without a version) left out."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise DocumentError(f"{key} should be an object", where=where)
    return {str(k): v for k, v in value.items() if isinstance(v, str)}


def _names(value: Any, key: str, where: str) -> tuple[Framework, ...]:
    if value is None:
        return ()
    if isinstance(value, dict):  # the profiler's form: name -> details
        value = list(value)
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise DocumentError(f"{key} should be a list of names", where=where)
    return split_frameworks("+".join(value))


def _watch(doc: Any, where: str) -> CompileWatchReport:
    if not isinstance(doc, dict):
        raise DocumentError("compiles should be an object", where=where)
    events = doc.get("events") or []
    notes = doc.get("notes") or []
    if not isinstance(events, list) or not isinstance(notes, list):
        raise DocumentError("compiles.events and compiles.notes should be lists", where=where)
    return CompileWatchReport(
        events=tuple(tuple(e) for e in events if isinstance(e, list)),
        used=_names(doc.get("used"), "compiles.used", where),
        notes=tuple(n for n in notes if isinstance(n, str)),
    )


def _profile(doc: Any, where: str) -> ProfileOutcome:
    if not isinstance(doc, dict):
        raise DocumentError("profile should be an object", where=where)
    errors = doc.get("errors") or []
    if not isinstance(errors, list):
        raise DocumentError("profile.errors should be a list", where=where)
    return ProfileOutcome(
        profiled=_names(doc.get("profiled"), "profile.profiled", where),
        keras_backend=_text(doc.get("keras_backend"), "profile.keras_backend", where),
        errors=tuple(str(e) for e in errors),
    )


def _torch_xla(doc: Any, where: str) -> TorchXlaOutcome:
    if not isinstance(doc, dict):
        raise DocumentError("torch_xla should be an object", where=where)
    return TorchXlaOutcome(
        env=_texts(doc.get("env"), "torch_xla.env", where),
        device=_text(doc.get("device"), "torch_xla.device", where),
        error=_text(doc.get("error"), "torch_xla.error", where),
    )
