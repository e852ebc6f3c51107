"""PyTorch/XLA support for `hloscope.inspect` and `hloscope.bench`: one function's HLO
before and after XLA's optimizations, in process, and its tensors moved between devices.

torch_xla has no API that returns the optimized HLO of a graph, and XLA reads its dump
flags once, when torch_xla starts its runtime (the first tensor on the XLA device). So
the first torch capture of a process, before that, adds `--xla_dump_to=<a folder kept
for the process>` to `XLA_FLAGS`; every graph the process compiles from then on is
dumped there, and a capture takes the files its own compile wrote. Where the runtime
is already up, a dump folder the user gave in `XLA_FLAGS` serves; without one the
capture fails with what to do.

The function runs lazily on the XLA device with torch_xla's IR debug on (op names and
Python frames in the HLO), and only its outputs are materialised (`xm.unlazy`), so the
graph is the function's own. Imported only when torch code is inspected; torch and
torch_xla are imported inside the functions, with an install hint when missing.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from hloscope.capture.inprocess import Captured
from hloscope.errors import MissingDependencyError, UsageError
from hloscope.frameworks import Framework
from hloscope.manifest import Compile

__all__ = ["capture", "import_torch_xla", "to_device", "xla_leaves"]

_INSTALL = "torch_xla is not installed; pip install 'hloscope[torch]' (torch and torch_xla 2.9)"
_DUMP_TO = re.compile(r"--xla_dump_to=(\"[^\"]*\"|'[^']*'|\S+)")
_AFTER = re.compile(r"^module_(\d+)\.(.+)\.(\w+?)_after_optimizations\.txt$")
# The process's dump folder (None until the first capture chose one), and the files of
# graphs captured already, by torch_xla's graph hash (a cached graph compiles no more).
_state: dict[str, Any] = {"dump": None, "graphs": {}}


def import_torch_xla() -> tuple[Any, Any]:
    """`(torch, torch_xla)`, with the runtime on the CPU unless `PJRT_DEVICE` says else.

    Raises:
        MissingDependencyError: torch or torch_xla is not installed.
    """
    os.environ.setdefault("PJRT_DEVICE", "CPU")
    try:
        import torch
        import torch_xla
    except ImportError:
        raise MissingDependencyError(_INSTALL) from None
    return torch, torch_xla


def capture(fn: Callable[..., Any], args: Sequence[Any]) -> Captured:
    """Run `fn(*args)` lazily on the XLA device, compile its outputs and return both
    HLO texts (and their binary dumps, which hold the Python frames).

    `fn` may be a function or an `nn.Module` (a module on the CPU is copied to the
    device; the original is left where it is); tensors in `args` (in lists, tuples and
    dicts) on the CPU are copied to the device.

    Raises:
        MissingDependencyError: torch or torch_xla is not installed.
        UsageError: The function returns no XLA tensor, or XLA cannot be made to dump
            (torch_xla's runtime started before, without a dump folder in `XLA_FLAGS`).
    """
    torch, torch_xla = import_torch_xla()
    import torch_xla.core.xla_model as xm

    dump = _dump_folder(torch_xla)
    device = torch_xla.device()
    fn_x, args_x = to_device(fn, args, device, torch)
    inputs = list(xla_leaves(args_x, torch))
    if inputs:
        xm.unlazy(inputs)  # inputs made lazily on the device are not the function's graph
    debug = torch_xla._XLAC._get_ir_debug()
    torch_xla._XLAC._set_ir_debug(True)  # op names and frames in the HLO metadata
    try:
        outputs = list(xla_leaves(fn_x(*args_x), torch))
    finally:
        torch_xla._XLAC._set_ir_debug(debug)
    if not outputs:
        raise UsageError("the function returned no tensor on the XLA device; nothing to compile")
    graph = str(torch_xla._XLAC._get_graph_hash(outputs))
    known = _state["graphs"].get(graph)
    seen = set(os.listdir(dump))
    compiled_before = _compile_time(torch_xla)
    xm.unlazy(outputs)
    compiled = _compile_time(torch_xla)
    files = known or _new_module(dump, seen)
    if files is None:
        raise UsageError(
            "torch_xla compiled nothing new and this graph was not captured before in this "
            f"process (was it compiled already?); no module in {dump}"
        )
    _state["graphs"][graph] = files
    before = files["before"].read_text(encoding="utf-8")
    timed = None
    if compiled[0] > compiled_before[0]:  # torch_xla's CompileTime: one sample per compile
        seconds = compiled[1] - compiled_before[1]
        name = files["before"].name.split(".", 1)[1].rsplit(".before_optimizations", 1)[0]
        timed = Compile(Framework.TORCH_XLA, name, seconds, {"compile": seconds})
    return Captured(
        framework=Framework.TORCH_XLA,
        before=before,
        after=files["after"].read_text(encoding="utf-8"),
        platform=files["platform"],
        compile=timed,
        before_proto=_bytes(files.get("before_proto")),
        after_proto=_bytes(files.get("after_proto")),
    )


def _compile_time(torch_xla: Any) -> tuple[int, float]:
    """torch_xla's `CompileTime` metric: (compiles, seconds) so far in this process."""
    import torch_xla.debug.metrics as met

    if "CompileTime" not in met.metric_names():
        return 0, 0.0
    count, total_ns, _ = met.metric_data("CompileTime")
    return int(count), float(total_ns) / 1e9


def _dump_folder(torch_xla: Any) -> Path:
    """Where XLA dumps in this process, set up on the first call (see the module doc)."""
    if _state["dump"] is not None:
        return Path(_state["dump"])
    # Read once, at torch_xla's first lowering: op names in the HLO metadata from then on.
    os.environ.setdefault("XLA_HLO_DEBUG", "1")
    flags = os.environ.get("XLA_FLAGS", "")
    given = _DUMP_TO.search(flags)
    if torch_xla._XLAC._xla_runtime_is_initialized():
        if given is None or "xla_dump_hlo_as_text" not in flags:
            raise UsageError(
                "torch_xla's runtime started before hloscope.inspect could tell XLA where to "
                "dump (XLA reads XLA_FLAGS once); call hloscope.inspect before the first "
                "tensor goes to the XLA device, or set XLA_FLAGS='--xla_dump_to=DIR "
                "--xla_dump_hlo_as_text' before starting Python"
            )
        folder = Path(given[1].strip("\"'"))
    elif given is not None:
        folder = Path(given[1].strip("\"'"))
        if "xla_dump_hlo_as_text" not in flags:
            os.environ["XLA_FLAGS"] = f"{flags} --xla_dump_hlo_as_text"
    else:
        folder = Path(tempfile.mkdtemp(prefix="hloscope-torch-xla-"))
        atexit.register(shutil.rmtree, folder, True)
        os.environ["XLA_FLAGS"] = (
            f"{flags} --xla_dump_to={folder} --xla_dump_hlo_as_text --xla_dump_hlo_as_proto"
        ).strip()
    folder.mkdir(parents=True, exist_ok=True)
    _state["dump"] = str(folder)
    return folder


def _new_module(dump: Path, seen: set[str]) -> dict[str, Any] | None:
    """The before/after files of the one module XLA dumped since `seen` was listed (the
    last one, should the outputs' graph have pulled in another)."""
    found = None
    for name in sorted(set(os.listdir(dump)) - seen):
        m = _AFTER.match(name)
        if m is None:
            continue
        stem = f"module_{m[1]}.{m[2]}"
        before = dump / f"{stem}.before_optimizations.txt"
        after = dump / name
        if not before.is_file():
            continue
        found = {"before": before, "after": after, "platform": m[3]}
        for side, path in (("before_proto", before), ("after_proto", after)):
            proto = path.with_name(path.name[: -len(".txt")] + ".hlo.pb")
            if proto.is_file():
                found[side] = proto
    return found


def _bytes(path: Path | None) -> bytes | None:
    return path.read_bytes() if path is not None else None


def to_device(fn: Callable[..., Any], args: Sequence[Any], device: Any, torch: Any) -> Any:
    """`(fn, args)` on `device`: an `nn.Module` not there is deep-copied there, tensors
    in `args` (nested in lists, tuples and dicts) are copied there."""
    import copy

    if isinstance(fn, torch.nn.Module):
        params = list(fn.parameters()) + list(fn.buffers())
        if any(p.device != device for p in params):
            fn = copy.deepcopy(fn).to(device)
    return fn, tuple(_moved(a, device, torch) for a in args)


def _moved(value: Any, device: Any, torch: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value if value.device == device else value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_moved(v, device, torch) for v in value)
    if isinstance(value, dict):
        return {k: _moved(v, device, torch) for k, v in value.items()}
    return value


def xla_leaves(value: Any, torch: Any, depth: int = 0) -> Iterator[Any]:
    """The XLA tensors in a (nested) result."""
    if depth > 8:
        return
    if isinstance(value, torch.Tensor):
        if value.device.type == "xla":
            yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from xla_leaves(v, torch, depth + 1)
    elif isinstance(value, dict):
        for v in value.values():
            yield from xla_leaves(v, torch, depth + 1)
