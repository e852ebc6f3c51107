"""`hloscope dump`: run a script in a child Python under XLA's dump flags, keep the run.

A `DumpRequest` is what the user asked for; its `plan` (or `plan_dump`) checks it and
decides the run folder and the environment without side effects; `run_dump` creates the
folder, runs the child (output streamed to the given
sinks and saved to `stdout.log`/`stderr.log`), stops it cleanly on Ctrl-C, writes
`run.json` and returns a `DumpResult` holding the loaded `Run`. Nothing here prints: the
CLI renders the result, and the frameworks are only ever imported in the child.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from hloscope.capture.child import (
    Sink,
    StopSignals,
    own_process_group,
    start_pump,
    std_sink,
    wait_child,
)
from hloscope.capture.child_report import CHILD_REPORT, ChildReport, read_child_report
from hloscope.capture.compile_watch import tf_vmodule
from hloscope.capture.compiles import record_compiles
from hloscope.capture.env import detect_device, detect_platform, framework_of_run
from hloscope.capture.flags import merge_xla_flags
from hloscope.capture.folder import choose_run_dir, release_run_dir
from hloscope.capture.passes import pass_environ
from hloscope.capture.tf_graphs import GRAPHS_SUBDIR, graph_dump_env, keep_read_stage
from hloscope.capture.torch_xla_hooks import FOLDER as TORCH_XLA_FOLDER
from hloscope.errors import DocumentError, HloscopeError, UsageError
from hloscope.frameworks import Framework, join_frameworks
from hloscope.manifest import (
    MANIFEST,
    ModuleEntry,
    ProfileSettings,
    RunManifest,
    RunStatus,
    Target,
)
from hloscope.runs import Run, load_run
from hloscope.store import REPORT_CACHE, TIMINGS_CACHE

__all__ = [
    "SCHEMA_VERSION",
    "DumpPlan",
    "DumpRequest",
    "DumpResult",
    "count_compiled",
    "plan_dump",
    "run_dump",
    "xla_error_lines",
]

SCHEMA_VERSION = 1
DUMP_SUBDIR = "dump"
STDOUT_LOG = "stdout.log"
STDERR_LOG = "stderr.log"
_RUNNER = Path(__file__).with_name("runner.py")
# The profiler hooks the child loads by path (standard library only, like the runner).
_PROFILER_HOOKS = Path(__file__).with_name("profiler.py")
PROFILE_SUBDIR = "profile"
PROFILE_ENV = "HLOSCOPE_PROFILE"
# What a run folder holds that hloscope wrote: all `--force` removes. The caches
# (`hloscope.store`): timings computed from the profile, `report --json` documents.
_OWN_FOLDERS = (DUMP_SUBDIR, PROFILE_SUBDIR, GRAPHS_SUBDIR, TORCH_XLA_FOLDER)
_OWN_FILES = (
    MANIFEST, MANIFEST + ".tmp", STDOUT_LOG, STDERR_LOG, CHILD_REPORT, TIMINGS_CACHE,
    REPORT_CACHE,
)  # fmt: skip
_LOG_TAIL_BYTES = 2 << 20
_EXIT_INTERRUPTED = 130

# Lines that carry XLA's reason for not compiling, in TensorFlow's and JAX's words.
_XLA_ERROR = re.compile(
    r"Detected unsupported operations|XLA compilation|XlaRuntimeError|INVALID_ARGUMENT|"
    r"UNIMPLEMENTED|InvalidArgumentError|UnimplementedError|"
    r"XLA can't deduce compile time constant|must be a compile-time constant|"
    r"Compilation failure|No registered '\w+' OpKernel for XLA"
)
_TF_LOG_PREFIX = re.compile(r"^[IWEF]\d{4} [\d:.]+\s+\d+ [\w./-]+:\d+\] ")


@dataclass(frozen=True)
class DumpRequest:
    """What `hloscope dump` is asked to do, as the user said it (checked by `plan`).

    Attributes:
        script: The script to run; None with `module`.
        args: Arguments for the script.
        module: Run this module as `python -m` does instead of a script.
        python: The interpreter to use (default: the one running hloscope).
        module_re: Dump only modules whose name matches this regex.
        out: The run folder (default `hloscope-runs/<script>-<timestamp>/`).
        force: Replace an earlier run in a non-empty `out`.
        profile: Run the framework's profiler around the script (`--profile`).
        framework: `tensorflow`/`tf` or `jax`: profile only this one; by default the
            child profiles whatever the script imports and compiles with.
        skip_first: With `profile`: executions of each module left out as warm-up.
        profile_steps: With `profile`: steady-state executions kept per module.
        python_trace: With `profile`: also record Python calls (`--python-trace`).
        passes: Also dump the module after every pass whose name matches this regex
            (`.*`: every pass that changed it) and log XLA's pass timings (`--passes`,
            `--pass-re`); None: only before and after optimization.

    Example:
        >>> request = DumpRequest("samples/jax_mlp.py", profile=True)
        >>> plan = request.plan(now=datetime.datetime(2026, 1, 2))  # doctest: +SKIP
        >>> result = run_dump(plan)  # doctest: +SKIP
    """

    script: str | Path | None = None
    args: Sequence[str] = ()
    module: str | None = None
    python: str | Path | None = None
    module_re: str | None = None
    out: str | Path | None = None
    force: bool = False
    profile: bool = False
    framework: str | None = None
    skip_first: int = 1
    profile_steps: int | None = None
    python_trace: bool = False
    passes: str | None = None

    def plan(
        self,
        *,
        command: Sequence[str] | None = None,
        environ: Mapping[str, str] | None = None,
        now: _dt.datetime | None = None,
    ) -> DumpPlan:
        """Check the request and decide the run folder and the child's environment.

        Args:
            command: The command line to record (default: `sys.argv`).
            environ: The environment to start from (default: `os.environ`).
            now: The time for the default folder name (default: now).

        Returns:
            The plan; nothing is run yet. Without `out`, the run folder is created
            (empty) as its name is chosen, so that two dumps started in the same second
            cannot both choose it.

        Raises:
            UsageError: The script is missing, not Python or does not compile; the
                interpreter is missing; the regex is invalid; `out` is not empty and
                `force` is not set; `framework` names no framework.
        """
        return _plan(self, command, environ, now)

    def replaced(self, **changes: Any) -> DumpRequest:
        """A copy with some fields changed (`--compare-unfused`'s second run)."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class DumpPlan:
    """What `run_dump` will do, decided and checked before anything runs.

    Attributes:
        kind: `"script"` or `"module"` (`-m`).
        target: The script path as given, or the module name.
        args: Arguments for the script.
        python: The interpreter that runs it.
        run_dir: The run folder to create.
        dump_dir: Where XLA dumps, inside `run_dir`.
        env_set: Environment variables hloscope sets for the child (XLA_FLAGS, ...).
        user_xla_flags: The XLA_FLAGS found in the environment, if any.
        flag_conflicts: User flags that had to give way, one line each.
        module_re: The `--module` regex, if any.
        command: The command line that asked for the run, for the manifest.
        cwd: The working directory of the child.
        replace: Whether to clear an earlier run in `run_dir` first (`--force`).
        profile: With `--profile`: how to profile (the framework `--framework` chose,
            the warm-up executions to leave out, the executions to keep after them);
            None otherwise.
        made: Folders the plan created (the default run folder, claimed atomically,
            and `hloscope-runs/` when it was new), removed again when nothing runs.
        passes: With `--passes`: the regex of the passes after which XLA dumps the
            module (`.*`: every pass that changed it); None otherwise.
        env_notes: Settings of the user's environment that had to give way, one line
            each (the logging variables `--passes` sets).
        request: The request it was planned from.
    """

    kind: str
    target: str
    args: tuple[str, ...]
    python: str
    run_dir: Path
    dump_dir: Path
    env_set: Mapping[str, str]
    user_xla_flags: str | None
    flag_conflicts: tuple[str, ...]
    module_re: str | None
    command: tuple[str, ...]
    cwd: Path
    replace: bool = False
    profile: ProfileSettings | None = None
    made: tuple[Path, ...] = ()
    passes: str | None = None
    env_notes: tuple[str, ...] = ()
    request: DumpRequest = field(default_factory=DumpRequest, compare=False, repr=False)

    @property
    def display_name(self) -> str:
        """`samples/dense_relu.py` or `-m package.module`."""
        return self.target if self.kind == "script" else f"-m {self.target}"

    @property
    def child_argv(self) -> list[str]:
        """The child's command line: the bootstrap in front of the target."""
        report = str(self.run_dir / CHILD_REPORT)
        return [self.python, str(_RUNNER), report, self.kind, self.target, *self.args]

    @property
    def script_command(self) -> list[str]:
        """The equivalent plain command, to run the script again without hloscope."""
        head = [self.target] if self.kind == "script" else ["-m", self.target]
        return [self.python, *head, *self.args]


@dataclass(frozen=True)
class DumpResult:
    """How a dump went, and the run it left.

    Attributes:
        plan: The plan that ran.
        run: The run folder, loaded.
        status: How the run ended: `ok`, `failed` (non-zero exit), `interrupted`,
            `no-modules` (the script succeeded but XLA compiled nothing) or
            `module-not-found` (`-m`).
        exit_code: The script's exit status (128+N when a signal N ended it).
        wall_time_s: Seconds from start to exit of the child.
        xla_errors: Lines of the output that say why XLA could not compile.
        traceback_tail: The last lines of the script's traceback, if it raised.
        child: What the bootstrap reported (versions, devices, exception); empty when
            it reported nothing.
        removed: What `--force` removed of an earlier run (`dump/`, `profile/`, ...).
        stopped_by: The signal that made hloscope stop the script (`SIGINT`,
            `SIGTERM`, `SIGHUP`), or None.
    """

    plan: DumpPlan
    run: Run
    status: RunStatus
    exit_code: int
    wall_time_s: float
    xla_errors: tuple[str, ...] = ()
    traceback_tail: tuple[str, ...] = ()
    child: ChildReport = field(default_factory=ChildReport)
    removed: tuple[str, ...] = ()
    stopped_by: str | None = None

    @property
    def command_exit_code(self) -> int:
        """What `hloscope dump` exits with: the script's status when it failed, 130 when
        interrupted (128 + the signal for SIGTERM and SIGHUP), 1 when XLA compiled
        nothing, 2 when the `-m` module was not found."""
        if self.status is RunStatus.INTERRUPTED and self.stopped_by in ("SIGTERM", "SIGHUP"):
            return 128 + int(getattr(signal, self.stopped_by))
        return {
            RunStatus.OK: 0,
            RunStatus.NO_MODULES: 1,
            RunStatus.MODULE_NOT_FOUND: 2,
            RunStatus.INTERRUPTED: _EXIT_INTERRUPTED,
        }.get(self.status, self.exit_code or 1)


def plan_dump(
    script: str | Path | None = None,
    args: Sequence[str] = (),
    *,
    command: Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
    now: _dt.datetime | None = None,
    **options: Any,
) -> DumpPlan:
    """Check a dump request and decide the run folder and the child's environment:
    `DumpRequest(script, args, **options).plan(command=..., environ=..., now=...)`.

    Args:
        script: The script to run; None with `module=`.
        args: Arguments for the script.
        command: The command line to record (default: `sys.argv`).
        environ: The environment to start from (default: `os.environ`).
        now: The time for the default folder name (default: now).
        **options: The other fields of `DumpRequest` (`module`, `out`, `force`,
            `profile`, ...).

    Raises:
        UsageError: See `DumpRequest.plan`.
    """
    request = DumpRequest(script, tuple(args), **options)
    return request.plan(command=command, environ=environ, now=now)


def _plan(
    request: DumpRequest,
    command: Sequence[str] | None,
    environ: Mapping[str, str] | None,
    now: _dt.datetime | None,
) -> DumpPlan:
    script, module, python = request.script, request.module, request.python
    if (script is None) == (module is None):
        raise UsageError("give a script (hloscope dump SCRIPT.py) or a module (-m NAME)")
    py = _check_python(python)
    if module is not None:
        if not re.fullmatch(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*", module):
            raise UsageError(f"-m {module}: not a module name (like package.module)")
        kind, target, stem = "module", module, module.rsplit(".", 1)[-1]
    else:
        assert script is not None
        target = str(script)
        _check_script(Path(target), compile_it=python is None)
        kind, stem = "script", Path(target).stem
    module_re, passes = request.module_re, request.passes
    for option, regex in (("--module", module_re), ("--pass-re", passes)):
        if regex is None:
            continue
        try:
            re.compile(regex)
        except re.error as e:
            raise UsageError(f"{option} {regex!r}: not a valid regex ({e})") from None
    env = os.environ if environ is None else environ
    cwd = Path.cwd()
    run_dir, replace, made = choose_run_dir(
        request.out, stem, request.force, now or _dt.datetime.now()
    )
    run_dir = run_dir if run_dir.is_absolute() else cwd / run_dir
    made = tuple(p if p.is_absolute() else cwd / p for p in made)
    dump_dir = run_dir / DUMP_SUBDIR
    flags = merge_xla_flags(env.get("XLA_FLAGS"), dump_dir, module_re, passes)
    env_set = {
        "XLA_FLAGS": flags.value,
        "PYTHONUNBUFFERED": "1",
        # TensorFlow logs each XLA compile and its time (`capture.compiles` reads it)
        "TF_CPP_VMODULE": tf_vmodule(env.get("TF_CPP_VMODULE")),
    }
    env_set.update(graph_dump_env(env, run_dir))  # what TensorFlow auto-clusters
    env_notes: tuple[str, ...] = ()
    if passes is not None:
        # on top of what is set above: TensorFlow's compile log keeps its module
        logging, env_notes = pass_environ({**env, **env_set})
        env_set.update(logging)
    profile_plan = None
    if request.profile:
        try:
            profile_plan = _plan_profile(request, PROFILE_SUBDIR)
        except BaseException:
            release_run_dir(made)  # the folder just claimed stays empty: leave none
            raise
        env_set[PROFILE_ENV] = json.dumps(
            {
                "framework": join_frameworks(profile_plan.frameworks) or None,
                "logdir": str(run_dir / PROFILE_SUBDIR),
                "hooks": str(_PROFILER_HOOKS),
                "python_trace": profile_plan.python_trace,
            }
        )
    return DumpPlan(
        kind=kind,
        target=target,
        args=tuple(request.args),
        python=py,
        run_dir=run_dir,
        dump_dir=dump_dir,
        env_set=env_set,
        user_xla_flags=flags.user,
        flag_conflicts=flags.conflicts,
        module_re=module_re,
        command=tuple(sys.argv if command is None else command),
        cwd=cwd,
        replace=replace,
        profile=profile_plan,
        made=made,
        passes=passes,
        env_notes=env_notes,
        request=request,
    )


def _plan_profile(request: DumpRequest, folder: str) -> ProfileSettings:
    """How to profile and how to read the profile.

    Which framework runs is not guessed here: the child starts the profiler of whatever
    the script itself imports and compiles with (`profiler.Profiling`), and
    `_profile_outcome` records it. `framework` (`--framework`) limits it to one.
    """
    skip, steps = request.skip_first, request.profile_steps
    if skip < 0 or (steps is not None and steps < 1):
        raise UsageError("--skip-first must be 0 or more and --profile-steps 1 or more")
    only: tuple[Framework, ...] = ()
    if request.framework is not None:
        try:
            only = (Framework.parse(request.framework),)
        except UsageError as e:
            raise UsageError(f"--framework: {e}") from None
    return ProfileSettings(
        frameworks=only,
        dir=folder,
        skip_first=skip,
        max_executions=steps,
        python_trace=request.python_trace,
    )


def _profile_outcome(
    planned: ProfileSettings | None, child: ChildReport, modules: Sequence[Any]
) -> ProfileSettings | None:
    """The run's `profile` entry: the plan, plus which profilers ran (`profiled`), the
    frameworks whose profile holds the compiled modules (`frameworks`) and Keras's
    backend."""
    if planned is None:
        return None
    outcome = child.profile
    profiled = outcome.profiled if outcome is not None else ()
    # of the profiled frameworks, those whose modules the dump holds (TensorFlow's
    # profiler starts at its import, also where the script only imported it)
    named = framework_of_run(dict.fromkeys(f.value for f in profiled), modules)
    compiled = tuple(f for f in profiled if f in named) or profiled
    return dataclasses.replace(
        planned,
        frameworks=compiled or planned.frameworks,
        profiled=profiled,
        keras_backend=outcome.keras_backend if outcome is not None else None,
    )


def run_dump(
    plan: DumpPlan,
    *,
    out: Sink | None = None,
    err: Sink | None = None,
    on_interrupt: Callable[[], None] | None = None,
    environ: Mapping[str, str] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> DumpResult:
    """Run the plan: create the run folder, run the child, write `run.json`.

    Args:
        plan: From `plan_dump`.
        out: Receives the child's stdout as it comes (default: this process's stdout).
        err: Receives the child's stderr as it comes (default: this process's stderr).
        on_interrupt: Called once when Ctrl-C (or SIGTERM) starts stopping the child.
        environ: The environment to start from (default: `os.environ`).
        clock: Monotonic seconds, for the wall time.

    Returns:
        The result, with the run loaded from the folder (dumps kept whatever happened).
    """
    try:
        removed = _prepare_run_dir(plan)
    except OSError as e:  # --force on a folder hloscope may not write
        raise UsageError(
            f"{plan.run_dir}: cannot replace the earlier run there ({e.strerror or e}); "
            "pass -o DIR for another folder"
        ) from None
    env = dict(os.environ if environ is None else environ)
    env.update(plan.env_set)
    started_at = _dt.datetime.now().astimezone()
    manifest = _base_manifest(plan, started_at)
    _write_manifest(plan.run_dir, manifest.updated(status=RunStatus.RUNNING))
    report_path = plan.run_dir / CHILD_REPORT
    out = out or std_sink(sys.stdout)
    err = err or std_sink(sys.stderr)

    log_errors: list[str] = []
    start = clock()
    with _open_logs(plan.run_dir) as (out_log, err_log), StopSignals() as signals:
        try:
            proc = subprocess.Popen(
                plan.child_argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                cwd=plan.cwd,
                **own_process_group(),
            )
        except OSError as e:
            raise UsageError(f"cannot start {plan.python}: {e.strerror or e}") from None
        assert proc.stdout is not None and proc.stderr is not None
        pumps = [
            start_pump(proc.stdout, out_log, out, log_errors),
            start_pump(proc.stderr, err_log, err, log_errors),
        ]
        returncode = wait_child(proc, signals, on_interrupt)
        wall = clock() - start
        for pump in pumps:
            pump.join(timeout=5.0)  # a grandchild may hold the pipes open
    stopped_by = signals.stopped_by
    interrupted = stopped_by is not None
    exit_code = returncode if returncode >= 0 else 128 - returncode
    child = _read_child_report(report_path)
    keep_read_stage(plan.run_dir / GRAPHS_SUBDIR)
    if child.module_not_found:
        if not plan.replace:  # nothing ran: leave no empty run folder behind
            shutil.rmtree(plan.run_dir, ignore_errors=True)
            release_run_dir(plan.made)
        run = Run(plan.run_dir, manifest, (), None)
        return DumpResult(
            plan, run, RunStatus.MODULE_NOT_FOUND, exit_code, wall, child=child, removed=removed
        )
    run = load_run(plan.run_dir)
    status = _status(child, run, exit_code, interrupted)
    xla_errors = tuple(xla_error_lines(plan.run_dir)) if status.failed else ()
    failed = status in (RunStatus.FAILED, RunStatus.INTERRUPTED)
    tail = _traceback_tail(child, plan.run_dir / STDERR_LOG) if failed else ()
    devices = child.devices
    platform = detect_platform(run.modules, devices)
    if log_errors:  # the script's output was not all saved: the run is not whole
        status, stopped_by = RunStatus.FAILED, "; ".join(log_errors)
    compiles, compile_notes = record_compiles(child, plan.run_dir / STDERR_LOG, run.modules)
    used = {*(child.compiles.used if child.compiles else ()), *(c.framework for c in compiles)}
    manifest = manifest.updated(
        env=_env_set(plan, child),
        status=status,
        exit_code=exit_code,
        interrupted=interrupted,
        stopped_by=stopped_by,
        wall_time_s=round(wall, 3),
        frameworks=framework_of_run(child.versions, run.modules, used),
        versions=child.versions,
        platform=platform,
        device=detect_device(platform, devices),
        devices=devices,
        framework_env=child.environment,
        exception=child.exception,
        xla_errors=xla_errors,
        modules=tuple(_module_entry(m, plan.run_dir) for m in run.modules),
        profile=_profile_outcome(plan.profile, child, run.modules),
        compiles=compiles,
        compile_notes=compile_notes,
    )
    _write_manifest(plan.run_dir, manifest)
    if log_errors:
        raise HloscopeError(
            f"{log_errors[0]}; the script ran to the end, but its output was not all "
            f"saved (run.json in {plan.run_dir} says status 'failed'); free some space "
            "and run it again"
        )
    return DumpResult(
        plan=plan,
        run=Run(run.path, manifest, run.modules, run.dump_dir),
        status=status,
        exit_code=exit_code,
        wall_time_s=wall,
        xla_errors=xla_errors,
        traceback_tail=tail,
        child=child,
        removed=removed,
        stopped_by=stopped_by,
    )


def count_compiled(dump_dir: Path) -> int:
    """How many modules XLA has started to compile so far (before-optimization files)."""
    try:
        with os.scandir(dump_dir) as entries:
            return sum(1 for e in entries if e.name.endswith("before_optimizations.txt"))
    except OSError:
        return 0


def xla_error_lines(run_dir: Path, limit: int = 6) -> list[str]:
    """Lines of a run's logs that say why XLA could not compile, deduplicated.

    Both logs are read (TensorFlow samples often print the error themselves); TF's
    log-line prefix is dropped and long lines are cut.
    """
    found: list[str] = []
    for name in (STDERR_LOG, STDOUT_LOG):
        for line in _tail_text(run_dir / name).splitlines():
            if not _XLA_ERROR.search(line):
                continue
            text = _TF_LOG_PREFIX.sub("", line.strip())
            text = text if len(text) <= 400 else text[:397] + "..."
            if text and text not in found:
                found.append(text)
    return found[-limit:]


# ---------------------------------------------------------------------------------------
# Planning


def _check_python(python: str | Path | None) -> str:
    if python is None:
        return sys.executable
    found = shutil.which(str(python))
    if found is None:
        raise UsageError(f"--python {python}: no such interpreter (give a path or a name on PATH)")
    return found


def _check_script(path: Path, *, compile_it: bool) -> None:
    if not path.exists():
        raise UsageError(f"{path}: no such file; give the path of a Python script")
    if path.is_dir():
        raise UsageError(f"{path}: is a folder; give a Python script (or -m for a module)")
    if path.suffix != ".py":
        raise UsageError(f"{path}: not a Python script (expected a .py file; -m runs a module)")
    if not compile_it:
        return
    try:
        source = path.read_bytes()
    except OSError as e:
        raise UsageError(f"{path}: cannot read ({e.strerror})") from None
    try:
        compile(source, str(path), "exec", dont_inherit=True)
    except SyntaxError as e:
        where = f"{path}:{e.lineno}" if e.lineno else str(path)
        raise UsageError(f"{where}: syntax error: {e.msg}") from None
    except ValueError as e:  # null bytes
        raise UsageError(f"{path}: not a Python script ({e})") from None


# ---------------------------------------------------------------------------------------
# Running


def _prepare_run_dir(plan: DumpPlan) -> tuple[str, ...]:
    """Create the run folder; with --force, remove what an earlier run wrote there.

    Only hloscope's own files are removed (the dump, the profile, the timings and
    reports cached from them, the logs, run.json), so that a mistaken `-o ~ --force`
    cannot delete anything else, and no earlier profile can pass for this run's.

    Returns:
        The names removed (folders with a trailing `/`), for the CLI to say.
    """
    run_dir = plan.run_dir
    removed: list[str] = []
    if plan.replace:
        for name in _OWN_FOLDERS:
            path = run_dir / name
            if path.is_symlink():  # the link is ours; what it points to is not
                path.unlink()
                removed.append(name)
            elif path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
                removed.append(name + "/")
        for name in _OWN_FILES:
            with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                (run_dir / name).unlink()
                removed.append(name)
    try:
        plan.dump_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"{run_dir}: cannot create the run folder ({e.strerror})") from None
    return tuple(removed)


@contextlib.contextmanager
def _open_logs(run_dir: Path) -> Iterator[tuple[IO[bytes], IO[bytes]]]:
    """`stdout.log` and `stderr.log`, unbuffered; one clear error when they cannot be
    created."""
    opened: list[IO[bytes]] = []
    try:
        for name in (STDOUT_LOG, STDERR_LOG):
            opened.append(open(run_dir / name, "wb", buffering=0))  # noqa: SIM115
    except OSError as e:
        for f in opened:
            f.close()
        raise HloscopeError(f"{run_dir / name}: cannot write ({e.strerror or e})") from None
    with opened[0] as out_log, opened[1] as err_log:
        yield out_log, err_log


# ---------------------------------------------------------------------------------------
# After the run


def _env_set(plan: DumpPlan, child: ChildReport) -> dict[str, str]:
    """What hloscope set for the script: the plan's variables, and those the child set
    as the script imported torch_xla (`torch_xla_hooks`), which win."""
    return {**plan.env_set, **child.torch_xla_env}


def _status(child: ChildReport, run: Run, exit_code: int, interrupted: bool) -> RunStatus:
    if interrupted or exit_code == _EXIT_INTERRUPTED:
        return RunStatus.INTERRUPTED
    if exit_code != 0:
        return RunStatus.FAILED
    return RunStatus.OK if run.modules else RunStatus.NO_MODULES


def _read_child_report(path: Path) -> ChildReport:
    """The child's report; empty when it wrote none (killed) or an unreadable one (the
    run's own files still tell its outcome)."""
    try:
        return read_child_report(path) or ChildReport()
    except DocumentError:
        return ChildReport()


def _tail_text(path: Path) -> str:
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - _LOG_TAIL_BYTES))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _traceback_tail(child: ChildReport, stderr_log: Path, lines: int = 6) -> tuple[str, ...]:
    if child.traceback:
        return child.traceback[-lines:]
    text = _tail_text(stderr_log)
    start = text.rfind("Traceback (most recent call last):")
    if start < 0:
        return ()
    block = text[start:].splitlines()
    # the traceback ends at the first unindented line after its header
    end = next(
        (i + 1 for i, line in enumerate(block[1:], 1) if line and not line.startswith(" ")),
        len(block),
    )
    return tuple(block[:end][-lines:])


def _base_manifest(plan: DumpPlan, started_at: _dt.datetime) -> RunManifest:
    from hloscope import __version__

    return RunManifest(
        source="dump",
        hloscope_version=__version__,
        command=tuple(plan.command),
        script_command=tuple(plan.script_command),
        target=Target(kind=plan.kind, name=plan.target, args=tuple(plan.args)),
        python=plan.python,
        cwd=str(plan.cwd),
        env=dict(plan.env_set),
        user_xla_flags=plan.user_xla_flags,
        xla_flag_conflicts=tuple(plan.flag_conflicts),
        module_re=plan.module_re,
        started_at=started_at.isoformat(timespec="seconds"),
        dump_dir=DUMP_SUBDIR,
        logs={"stdout": STDOUT_LOG, "stderr": STDERR_LOG},
        profile=plan.profile,
    )


def _module_entry(module: Any, run_dir: Path) -> ModuleEntry:
    def rel(p: Path | None) -> str | None:
        if p is None:
            return None
        try:
            return p.relative_to(run_dir).as_posix()
        except ValueError:
            return str(p)

    return ModuleEntry(
        key=module.key,
        name=module.name,
        id=module.module_id,
        platform=module.platform,
        before=rel(module.before),
        after=rel(module.after),
    )


def _write_manifest(run_dir: Path, manifest: RunManifest) -> None:
    """Write run.json through a temporary file, atomically.

    On a full disk the temporary file is removed and run.json is rewritten in place
    (truncating it frees its own blocks); only when that fails too is it an error.

    Raises:
        HloscopeError: run.json cannot be written.
    """
    text = manifest.dumps().encode("utf-8")
    tmp = run_dir / (MANIFEST + ".tmp")
    try:
        tmp.write_bytes(text)
        tmp.replace(run_dir / MANIFEST)
        return
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
    try:
        (run_dir / MANIFEST).write_bytes(text)
    except OSError as e:
        raise HloscopeError(f"{run_dir / MANIFEST}: cannot write ({e.strerror or e})") from None
