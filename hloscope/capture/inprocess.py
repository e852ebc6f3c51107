"""`hloscope.inspect`: capture one function's HLO in the running process (notebooks).

No child process: the framework's own API gives the HLO text before and after XLA's
optimizations (`hloscope.capture.tf`, `hloscope.capture.jax`); for PyTorch/XLA, which has
none, XLA's dump of the function's graph (`hloscope.capture.torch`).
The texts are written to a run folder with XLA's dump file names and a `run.json`, and
the folder is loaded with `load_run`, so the result is the same `Run` the CLI makes.
Without `save_to` that folder is temporary: it is removed when the returned `Run` is
garbage-collected, or when the interpreter exits.
"""

from __future__ import annotations

import datetime as _dt
import importlib
import re
import shutil
import sys
import tempfile
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hloscope.errors import UsageError
from hloscope.frameworks import Framework
from hloscope.manifest import MANIFEST, Compile, ModuleEntry, RunManifest
from hloscope.runs import Run, load_run, read_manifest

__all__ = ["Captured", "framework_of_call", "inspect"]

_SUPPORT = {
    Framework.TENSORFLOW: "hloscope.capture.tf",
    Framework.JAX: "hloscope.capture.jax",
    Framework.TORCH_XLA: "hloscope.capture.torch",
}
_HEADER = re.compile(r"^\s*HloModule\s+[%@]?([\w.\-]+)", re.M)
_DUMP_SUBDIR = "dump"


@dataclass(frozen=True)
class Captured:
    """What a framework module hands back for one function.

    Attributes:
        framework: The framework that compiled it.
        before: HLO text before optimization.
        after: HLO text after optimization.
        platform: What it was compiled for (`cpu`, `sm_90`, ...).
        compile: The compile as the framework timed it, where it says (JAX, torch_xla).
        before_proto: XLA's binary dump of the module before optimization, when it wrote
            one (torch_xla's: it holds the stack frames its text leaves out).
        after_proto: The same after optimization.
    """

    framework: Framework
    before: str
    after: str
    platform: str
    compile: Compile | None = None
    before_proto: bytes | None = None
    after_proto: bytes | None = None


def inspect(
    fn: Callable[..., Any],
    *example_args: Any,
    framework: str | None = None,
    save_to: str | Path | None = None,
) -> Run:
    """Compile `fn(*example_args)` with XLA and return its HLO before and after optimization.

    TensorFlow functions go through `tf.function(fn, jit_compile=True)
    .experimental_get_compiler_ir`, JAX functions through `jax.jit(fn).lower(...)` and
    `.compile()`; already-wrapped functions are used as they are. A PyTorch function or
    `nn.Module` runs lazily on torch_xla's device and its graph is compiled there
    (`hloscope.capture.torch`: call it before the process first uses the XLA device).

    Args:
        fn: The function: a plain Python function, a `tf.function`, a jitted JAX
            function, or a PyTorch function or `nn.Module`.
        *example_args: Arguments to compile it for (tensors, arrays, pytrees of them;
            PyTorch tensors on the CPU are copied to the XLA device).
        framework: `"tensorflow"` (or `"tf"`), `"jax"` or `"torch"`; detected from `fn`
            and the arguments when None.
        save_to: A run folder to keep the capture in (created if missing; an earlier
            `hloscope.inspect` run there is replaced), to read again later with
            `hloscope report`, `ops`, `graph` or `hloscope.load_run`. Without it nothing
            is kept: the files live in a temporary folder that is removed when the
            returned run is garbage-collected, or at the latest when Python exits.

    Returns:
        The run, with one module; `run.modules[0].load_after()` is the optimized module.

    Raises:
        UsageError: The framework cannot be told, or `save_to` is a non-empty folder that
            is not an earlier `inspect` run.
        MissingDependencyError: The framework is not installed.
    """
    name = Framework.parse(framework) if framework else framework_of_call(fn, example_args)
    if name is None:
        raise UsageError(
            "cannot tell whether the function is TensorFlow, JAX or PyTorch code; "
            "pass framework='tensorflow', 'jax' or 'torch'"
        )
    folder = _prepare_folder(save_to)
    support = importlib.import_module(_SUPPORT[name])
    try:
        captured: Captured = support.capture(fn, example_args)
        run = _write_run(folder, captured, fn)
    except BaseException:
        if save_to is None:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    if save_to is None:
        # the run reads its files lazily: they go when it goes (finalizers also run at exit)
        weakref.finalize(run, shutil.rmtree, folder, ignore_errors=True)
    return run


_TF_MODULES = ("tensorflow", "keras", "tf_keras")
_JAX_MODULES = ("jax", "jaxlib", "flax")
_TORCH_MODULES = ("torch", "torch_xla")


def framework_of_call(fn: Callable[..., Any], args: Sequence[Any]) -> Framework | None:
    """The framework of a call, from the types of the arguments, else from where `fn` (a
    `tf.function`, a jitted function, an `nn.Module`) or the objects it closes over come
    from, else from which one framework is imported; None when nothing tells."""

    def framework_of(obj: Any, module: str | None = None) -> Framework | None:
        top = (module or type(obj).__module__ or "").split(".")[0]
        if top in _TF_MODULES:
            return Framework.TENSORFLOW
        if top in _JAX_MODULES:
            return Framework.JAX
        if top in _TORCH_MODULES:
            return Framework.TORCH_XLA
        return None

    found = {framework_of(leaf) for leaf in _leaves(list(args))} - {None}
    if not found:
        closure = [c.cell_contents for c in (getattr(fn, "__closure__", None) or ())]
        bases = type(fn).__mro__[1:]  # an `nn.Module` subclass defined in a script
        found = (
            {framework_of(fn)}
            | {framework_of(obj, getattr(obj, "__module__", None)) for obj in [fn, *closure]}
            | {framework_of(None, base.__module__) for base in bases}
        )
        found.discard(None)
    if not found:
        found = {fw for fw in Framework if fw.value in sys.modules}
    return found.pop() if len(found) == 1 else None


def _leaves(value: Any, depth: int = 0) -> Iterator[Any]:
    """Leaves of nested lists, tuples and dicts (a pytree's usual containers)."""
    if depth > 8:
        return
    if isinstance(value, (list, tuple)):
        for v in value[:1000]:
            yield from _leaves(v, depth + 1)
    elif isinstance(value, dict):
        for v in list(value.values())[:1000]:
            yield from _leaves(v, depth + 1)
    else:
        yield value


def _prepare_folder(save_to: str | Path | None) -> Path:
    if save_to is None:
        return Path(tempfile.mkdtemp(prefix="hloscope-inspect-"))
    folder = Path(save_to)
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"save_to={str(folder)!r} is a file; give a folder")
    if folder.is_dir() and any(folder.iterdir()):
        if not _is_inspect_run(folder):
            raise UsageError(f"save_to={str(folder)!r} is not empty; give an empty or new folder")
        shutil.rmtree(folder / _DUMP_SUBDIR, ignore_errors=True)
        (folder / MANIFEST).unlink()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _is_inspect_run(folder: Path) -> bool:
    try:
        return read_manifest(folder / MANIFEST).source == "inspect"
    except UsageError:
        return False


def _file_platform(platform: str) -> str:
    """The platform as XLA writes it in file names: `cpu`, `gpu`, `sm_90_gpu`, ..."""
    return platform if platform in ("cpu", "gpu", "tpu") else f"{platform}_gpu"


def _write_run(folder: Path, captured: Captured, fn: Callable[..., Any]) -> Run:
    from hloscope.capture.env import detect_device
    from hloscope.capture.runner import framework_info

    m = _HEADER.search(captured.before) or _HEADER.search(captured.after)
    module_name = m[1] if m else "module"
    dump = folder / _DUMP_SUBDIR
    dump.mkdir(exist_ok=True)
    stem = f"module_0000.{module_name}"
    before = dump / f"{stem}.before_optimizations.txt"
    after = dump / f"{stem}.{_file_platform(captured.platform)}_after_optimizations.txt"
    before.write_text(captured.before, encoding="utf-8")
    after.write_text(captured.after, encoding="utf-8")
    for path, proto in ((before, captured.before_proto), (after, captured.after_proto)):
        if proto is not None:  # beside the text, where `runs` looks for its stack frames
            path.with_name(path.name[: -len(".txt")] + ".hlo.pb").write_bytes(proto)
    info = framework_info()
    key = f"0000.{module_name}"
    compiles = (replace(captured.compile, module=key),) if captured.compile else ()
    notes = (
        ()
        if compiles
        else (
            "TensorFlow reports XLA's compile time only in its log, not to the process: "
            "`hloscope dump` records it",
        )
        if captured.framework is Framework.TENSORFLOW
        else (
            f"{'torch_xla' if captured.framework is Framework.TORCH_XLA else 'JAX'} compiled "
            "nothing here: this process had compiled the function before",
        )
    )
    manifest = RunManifest(
        source="inspect",
        function=getattr(fn, "__qualname__", None) or type(fn).__name__,
        started_at=_dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        frameworks=(captured.framework,),
        versions=info["versions"],
        platform=captured.platform,
        device=detect_device(captured.platform, info["devices"]),
        devices=tuple(info["devices"]),
        dump_dir=_DUMP_SUBDIR,
        compiles=compiles,
        compile_notes=notes,
        modules=(
            ModuleEntry(
                key=key,
                name=module_name,
                id="0000",
                platform=captured.platform,
                before=before.relative_to(folder).as_posix(),
                after=after.relative_to(folder).as_posix(),
            ),
        ),
    )
    (folder / MANIFEST).write_text(manifest.dumps(), encoding="utf-8")
    return load_run(folder)
