"""What launches a kernel: the one classification table hloscope uses everywhere.

Every instruction the compiled program executes falls in one of these classes:

| class        | what                                                         | a kernel? |
|--------------|--------------------------------------------------------------|-----------|
| `fusion`     | a `fusion` instruction; kind = `kLoop`/`kInput`/`kOutput`/`kCustom`, or the backend's own kind from backend_config (`__triton_gemm`, `__cudnn$fusion`, `__ynn_fusion`, ...) | yes |
| `custom-call`| a library call (cuBLAS, cuDNN, oneDNN, ...), by `custom_call_target` | yes, unless the target is compile-time only (`Sharding`, ...) |
| `collective` | all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute, ... (an async `*-start`/`*-done` pair counts once, at the start) | yes |
| `unfused`    | any other compute instruction left on its own (dot, copy, sort, convolution, ...) | yes |
| `control`    | `call`, `while`, `conditional`, `async-start` with a wrapped computation: not kernels themselves, their callees are walked | no |
| `free`       | parameter, constant, tuple, get-tuple-element, bitcast, after-all, opt-barrier, add-dependency, domain, the `*-done`/`*-update` half of async pairs | no |

Before optimization the same table says which instructions are "ops": what eager
execution would launch one by one (every `unfused`-class instruction, and fusions,
custom calls and collectives as one op each).
"""

from __future__ import annotations

from hloscope.hlo.model import Instruction

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
        "partition-id",
        "replica-id",
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


def classify(inst: Instruction) -> str:
    """The class of an instruction in the table above.

    Args:
        inst: Any instruction of an executed computation (not of a fused one).

    Returns:
        One of `FUSION`, `CUSTOM_CALL`, `COLLECTIVE`, `UNFUSED`, `CONTROL`, `FREE`.
    """
    op = inst.opcode
    if op == "fusion":
        return FUSION
    if op in FREE_OPCODES:
        return FREE
    if op in CONTROL_OPCODES:
        if op == "async-start" and not inst.called:
            return FREE
        return CONTROL
    if op == "custom-call":
        return FREE if inst.custom_call_target in FREE_CUSTOM_CALL_TARGETS else CUSTOM_CALL
    if op in COLLECTIVE_OPCODES:
        return COLLECTIVE
    return UNFUSED


def kernel_kind(inst: Instruction) -> str:
    """The kind a kernel is reported under in `kernels_by_kind`.

    Fusions: the backend's own kind when backend_config names one (`__triton_gemm`,
    `__ynn_fusion`, ...), else `kLoop`/`kInput`/`kOutput`/`kCustom`. Custom calls:
    `custom-call:<target>`. Collectives: their opcode without `-start`. Unfused
    instructions: `unfused:<opcode>`.
    """
    cls = classify(inst)
    if cls == FUSION:
        return backend_fusion_kind(inst) or inst.fusion_kind or "fusion"
    if cls == CUSTOM_CALL:
        return f"custom-call:{inst.custom_call_target}"
    if cls == COLLECTIVE:
        return inst.opcode.removesuffix("-start")
    return f"unfused:{inst.opcode}"


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
