"""What launches a kernel: the one classification table hloscope uses everywhere.

Every instruction the compiled program executes falls in one of these classes:

| class        | what                                                         | a kernel? |
|--------------|--------------------------------------------------------------|-----------|
| `fusion`     | a `fusion` instruction; kind = `kLoop`/`kInput`/`kOutput`/`kCustom`, or the backend's own kind from backend_config (`__triton_gemm`, `__cudnn$fusion`, `__ynn_fusion`, ...) | yes |
| `custom-call`| a library call (cuBLAS, cuDNN, oneDNN, ...), by `custom_call_target` | yes, unless the target is compile-time only (`Sharding`, ...) |
| `collective` | all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute, ... (an async `*-start`/`*-done` pair, or an `async-start` wrapping one, counts once, at the start) | yes |
| `unfused`    | any other compute instruction left on its own (dot, copy, sort, convolution, ...) | yes |
| `control`    | `call`, `while`, `conditional`: not kernels themselves, their callees are walked; an `async-start` with a wrapped computation is walked as one kernel: the wrapped op's | no |
| `free`       | parameter, constant, tuple, get-tuple-element, bitcast, after-all, opt-barrier, add-dependency, domain, the `*-done`/`*-update` half of async pairs; partition-id and replica-id when the platform is unknown | no |

What the runtime launches, where it differs from the table, is modelled by the walk in
`hloscope.analysis.fusion` (an `async-start` is one kernel reported under the op it wraps)
and, where the platforms' runtimes differ, by one `Runtime` per platform (`RUNTIMES`:
CPU, GPU, TPU), each rule with the source that shows it: a `partition-id`/`replica-id`
is a launch on the GPU and the CPU; on a TPU each half of an async pair is an op of its
own and a scalar copy is none. `platform()` says which runtime a module was compiled
for, from the module itself.

Before optimization the same table says which instructions are "ops": what eager
execution would launch one by one (every `unfused`-class instruction, and fusions,
custom calls and collectives as one op each).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from hloscope.analysis.memo import ByModule
from hloscope.hlo.lexical import Attributes
from hloscope.hlo.model import HloModule, Instruction
from hloscope.hlo.opcodes import async_wrapped_opcode

FUSION = "fusion"
CUSTOM_CALL = "custom-call"
COLLECTIVE = "collective"
UNFUSED = "unfused"
CONTROL = "control"
FREE = "free"

KERNEL_CLASSES = (FUSION, CUSTOM_CALL, COLLECTIVE, UNFUSED)

FREE_OPCODES = frozenset(
    {
        "parameter",
        "constant",
        "tuple",
        "get-tuple-element",
        "bitcast",
        "after-all",
        "opt-barrier",
        "add-dependency",
        "domain",
        # the second half of async pairs: the launch is counted at the start
        "all-gather-done",
        "all-reduce-done",
        "collective-permute-done",
        "copy-done",
        "send-done",
        "recv-done",
        "async-update",
        "async-done",
    }
)

CONTROL_OPCODES = frozenset({"call", "while", "conditional", "async-start"})

# A thunk of their own in XLA's GPU and CPU runtimes (the GPU's writes the id into device
# memory: ReplicaOrPartitionIdThunk; a JAX profile on the CPU shows `hlo_op=` events for a
# partition-id too); counted free where the platform is unknown.
RUNTIME_ID_OPCODES = frozenset({"partition-id", "replica-id"})

GPU = "gpu"
CPU = "cpu"
TPU = "tpu"


@dataclass(frozen=True)
class Runtime:
    """What one platform's runtime launches, where the platforms' runtimes differ.

    Attributes:
        platform: `CPU`, `GPU`, `TPU`, or None (not known: the rules all platforms share).
        runtime_ids: `partition-id` and `replica-id` run as a launch of their own.
        async_done: The `-done` (and `-update`) half of an async pair is an op of its
            own; otherwise the pair is one launch, at its start.
        scalar_copy: A `copy` of a scalar (rank 0) is an op of its own.
        memcpy_per_output: A copy fusion runs one memcpy per output.
        reduction_initializers: A reduction needing atomics first runs an initializer.
    """

    platform: str | None
    runtime_ids: bool = False
    async_done: bool = False
    scalar_copy: bool = True
    memcpy_per_output: bool = False
    reduction_initializers: bool = False


RUNTIMES: Mapping[str | None, Runtime] = MappingProxyType(
    {
        # XLA's CPU runtime runs a thunk for partition-id/replica-id (a JAX profile on the
        # CPU shows `hlo_op=partition-id` events); an async pair is one thunk.
        CPU: Runtime(CPU, runtime_ids=True),
        # XLA's GPU runtime: ReplicaOrPartitionIdThunk writes the id into device memory;
        # an async collective is one thunk under the wrapped op's name and its `-done`
        # half launches nothing (the real MaxText nsys trace in ../shared/gpu); a copy
        # fusion is a MemcpyFusion (xla/service/gpu/fusions/fusions.cc) and a reduction
        # that is not race free initialises its output first
        # (xla/service/gpu/reduction_utils.cc, ReductionIsRaceFree).
        GPU: Runtime(GPU, runtime_ids=True, memcpy_per_output=True, reduction_initializers=True),
        # A TPU core runs the scheduled program op by op, and its profile has one `XLA
        # Ops` event per op executed: a real TPU XSpace (openxla/xprof
        # xprof/convert/test_xplanes/tpu_inference_2.xplane.pb, ../shared/gpu) shows
        # every `copy-start` and every `copy-done` of a host-offload module as an op of
        # its own (15 per run of `jit_f`: 6 starts, 6 dones, 3 fusions), as XProf's
        # megascale docs show `send`, `send-done`, `recv` and `recv-done`; its scalar
        # copies into the core's scalar memory (`f32[]{:T(128)S(6)}`) have no event
        # (`jit_convert_element_type`: two scalar copies, no op event in 100 runs).
        TPU: Runtime(TPU, async_done=True, scalar_copy=False),
    }
)
_UNKNOWN = Runtime(None)


def runtime(platform: str | None) -> Runtime:
    """The launch rules of a platform's runtime (`RUNTIMES`); the rules every platform
    shares when the platform is not known."""
    return RUNTIMES.get(platform, _UNKNOWN)


# The halves of async pairs that finish (or advance) what their start began.
ASYNC_DONE_OPCODES = frozenset(
    {
        "all-gather-done", "all-reduce-done", "collective-permute-done", "copy-done",
        "send-done", "recv-done", "async-update", "async-done",
    }
)  # fmt: skip

COLLECTIVE_OPCODES = frozenset(
    {
        "all-gather",
        "all-gather-start",
        "all-reduce",
        "all-reduce-start",
        "all-to-all",
        "ragged-all-to-all",
        "reduce-scatter",
        "collective-broadcast",
        "collective-permute",
        "collective-permute-start",
        "collective-reduce",
    }
)

# custom-call targets that exist only at compile time (SPMD partitioner markers and
# the like) and launch nothing.
FREE_CUSTOM_CALL_TARGETS = frozenset(
    {
        "Sharding",
        "SPMDFullToShardShape",
        "SPMDShardToFullShape",
        "annotate_device_placement",
        "MoveToHost",
        "MoveToDevice",
        "AllocateBuffer",
        "LocalBuffer",
        "X64Combine",
        "X64SplitLow",
        "X64SplitHigh",
    }
)


def classify(inst: Instruction, platform: str | None = None) -> str:
    """The class of an instruction in the table above, on a platform's runtime.

    Args:
        inst: Any instruction of an executed computation (not of a fused one).
        platform: `GPU`, `CPU`, `TPU`, or None when unknown (then the rules every
            platform shares: `partition-id` and `replica-id` count as free, an async
            pair launches at its start). See `RUNTIMES`.

    Returns:
        One of `FUSION`, `CUSTOM_CALL`, `COLLECTIVE`, `UNFUSED`, `CONTROL`, `FREE`.
    """
    op = inst.opcode
    if op == "fusion":
        return FUSION
    known = _BY_OPCODE.get((op, platform))
    if known is not None:
        return known
    cls = _classify(inst, op, platform)
    # The class of most opcodes depends on the opcode and platform alone; bounded, as
    # opcodes come from the input.
    if op not in _BY_INSTRUCTION and len(_BY_OPCODE) < 4096:
        _BY_OPCODE[(op, platform)] = cls
    return cls


# classify() of the opcodes whose class depends on nothing else, by (opcode, platform):
# the analyses ask several times for each of a big module's instructions.
_BY_OPCODE: dict[tuple[str, str | None], str] = {}
# Their target, their callees, their shape (a scalar copy is free on some runtimes).
_BY_INSTRUCTION = frozenset({"custom-call", "async-start", "copy"})


def _classify(inst: Instruction, op: str, platform: str | None) -> str:
    rt = runtime(platform)
    if op in FREE_OPCODES:
        if rt.async_done and op in ASYNC_DONE_OPCODES:
            return COLLECTIVE if op.removesuffix("-done") in COLLECTIVE_OPCODES else UNFUSED
        return FREE
    if op in RUNTIME_ID_OPCODES:
        return UNFUSED if rt.runtime_ids else FREE
    if (
        op == "copy"
        and not rt.scalar_copy
        and not inst.shape.is_tuple
        and not inst.shape.dimensions
    ):
        return FREE
    wrapped = async_wrapped_opcode(op)
    if wrapped is not None:  # XLA's sugar for an async pair wrapping one op
        if not op.endswith("-start") and not rt.async_done:
            return FREE
        if wrapped in COLLECTIVE_OPCODES:
            return COLLECTIVE
        return {"fusion": FUSION, "custom-call": CUSTOM_CALL}.get(wrapped, UNFUSED)
    if op in CONTROL_OPCODES:
        if op == "async-start" and not inst.called:
            return FREE
        return CONTROL
    if op == "custom-call":
        return FREE if inst.custom_call_target in FREE_CUSTOM_CALL_TARGETS else CUSTOM_CALL
    if op in COLLECTIVE_OPCODES:
        return COLLECTIVE
    return UNFUSED


def kernel_kind(inst: Instruction, platform: str | None = None) -> str:
    """The kind a kernel is reported under in `kernels_by_kind`.

    Fusions: the backend's own kind when backend_config names one (`__triton_gemm`,
    `__ynn_fusion`, ...), else `kLoop`/`kInput`/`kOutput`/`kCustom`. Custom calls:
    `custom-call:<target>`. Collectives: their opcode without `-start` (a TPU's
    `all-gather-done` keeps its name). Unfused instructions: `unfused:<opcode>`.
    """
    cls = classify(inst, platform)
    if cls == FUSION:
        return backend_fusion_kind(inst) or inst.fusion_kind or "fusion"
    if cls == CUSTOM_CALL:
        return f"custom-call:{inst.custom_call_target}"
    if cls == COLLECTIVE:
        return inst.opcode.removesuffix("-start")
    return unfused_kind(inst.opcode)


def unfused_kind(opcode: str) -> str:
    """`kernel_kind` of an unfused instruction: `unfused:<opcode>`."""
    kind = _UNFUSED_KINDS.get(opcode)
    if kind is None:
        kind = sys.intern(f"unfused:{opcode}")  # one string per opcode, not per kernel
        if len(_UNFUSED_KINDS) < 4096:
            _UNFUSED_KINDS[opcode] = kind
    return kind


_UNFUSED_KINDS: dict[str, str] = {}  # `unfused:<opcode>` by opcode


def platform(module: HloModule) -> str | None:
    """The runtime a module was compiled for (see `_platform`), found once per module:
    the analyses and the walks of provenance all ask."""
    return _platforms(module)


def _platform(module: HloModule) -> str | None:
    """The runtime a module was compiled for, read from the module itself.

    GPU: a cuBLAS/cuDNN/`__gpu$` custom call, or a GPU backend config (XLA's
    `GpuBackendConfig` carries `operation_queue_id`, `fusion_backend_config`,
    `collective_backend_config`). CPU: a CPU backend config (`fusion_config`,
    `outer_dimension_partitions`) or a call marked `xla_cpu_small_call`. TPU: a TPU
    backend config (`scoped_memory_configs`, as every op of a TPU module carries).
    Otherwise the dump's file name (`sm_9.0_gpu_after_optimizations`,
    `cpu_after_optimizations`, `tpu_after_optimizations`).

    Returns:
        `GPU`, `CPU`, `TPU`, or None when nothing says (before optimization, most often).
    """
    for _, inst in module.instructions():
        attributes = inst.attributes
        if type(attributes) is Attributes:  # most instructions: answered by their text
            text = attributes.text
            if not (_BACKEND in text or _TARGET in text or _SMALL_CALL in text):
                continue
        raw = attributes.get("backend_config")
        if raw is not None:
            if any(key in raw for key in _GPU_CONFIG_KEYS):
                return GPU
            if any(key in raw for key in _CPU_CONFIG_KEYS):
                return CPU
            if any(key in raw for key in _TPU_CONFIG_KEYS):
                return TPU
        target = inst.custom_call_target
        if target is not None and target.startswith(_GPU_TARGETS):
            return GPU
        if _SMALL_CALL in attributes.get("frontend_attributes", ""):
            return CPU
    name = (module.path or "").rsplit("/", 1)[-1]
    if "gpu_after_optimizations" in name:
        return GPU
    if "cpu_after_optimizations" in name:
        return CPU
    if "tpu_after_optimizations" in name:
        return TPU
    return None


# What `_platform` reads, as an instruction's attributes print it. Without any (before
# optimization, a CPU module without backend configs) a module is read to its end:
# looked for in the text, not through three lookups per instruction (0.33 s to 0.18 s
# for 934k instructions).
_BACKEND, _TARGET, _SMALL_CALL = "backend_config", "custom_call_target", "xla_cpu_small_call"

_GPU_CONFIG_KEYS = (
    "operation_queue_id", "fusion_backend_config", "collective_backend_config",
    "gemm_backend_config", "cudnn_conv_backend_config",
)  # fmt: skip
_CPU_CONFIG_KEYS = ('"fusion_config"', "outer_dimension_partitions")
_TPU_CONFIG_KEYS = ('"scoped_memory_configs"',)
_GPU_TARGETS = ("__cublas", "__cudnn", "__gpu$", "__triton")


def backend_fusion_kind(inst: Instruction) -> str | None:
    """The backend's fusion kind from backend_config, if it gives one.

    GPU: `{"fusion_backend_config": {"kind": "__triton_gemm", ...}}`;
    CPU: `{"fusion_config": {"kind": "__ynn_fusion"}}`.
    """
    config = inst.backend_config
    if not isinstance(config, dict):
        return None
    for key in ("fusion_backend_config", "fusion_config"):
        sub = config.get(key)
        if isinstance(sub, dict) and isinstance(sub.get("kind"), str) and sub["kind"]:
            return str(sub["kind"])
    return None


def is_library_kernel(inst: Instruction) -> bool:
    """Whether the kernel is a library call rather than code XLA generated.

    True for custom calls and for fusions whose backend kind names a library
    (cuBLAS/cuDNN/oneDNN/XNNPACK/YNNPACK custom fusions).
    """
    cls = classify(inst)
    if cls == CUSTOM_CALL:
        return True
    if cls == FUSION:
        kind = backend_fusion_kind(inst) or ""
        return any(lib in kind for lib in ("cudnn", "cublas", "onednn", "xnn", "ynn"))
    return False


# platform() by module (`memo.ByModule`).
_platforms = ByModule(_platform)
