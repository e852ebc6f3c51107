"""Build the SYNTHETIC GPU profile in this folder with TensorFlow's XPlane protobuf API.

Not captured on hardware: the structure follows what XLA's GPU profiler writes
(xla/backends/profiler/gpu/cupti_collector.cc, xla/tsl/profiler/utils/xplane_schema.cc)
and, for `derived/`, what xprof's derived timeline adds (tensorflow/core/profiler/utils/
derived_timeline.cc). See HOW.md. Run from the repository root:

    .venv/bin/python tests/data/gpu_synthetic_profile/build.py [OUT_DIR]

Deterministic: the same bytes every time (tests compare them).
"""

from __future__ import annotations

import sys
from pathlib import Path

from tensorflow.tsl.profiler.protobuf import xplane_pb2

MODULE = "jit_gpu_mlp"
PROGRAM_ID = 7
HOST = "gpuhost"
SESSION = "2026_01_01_00_00_00"
T0_NS = 1_767_225_600_000_000_000  # 2026-01-01, the profile's clock origin
TID = 4242  # the Python thread that launches
STREAM = 7
US = 1_000_000  # picoseconds per microsecond

CUBLAS_GEMM = (
    "sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_"
    "aligna4_alignc4_execute_kernel__5x_cublas"
)
CUBLAS_SPLITK = (
    "void splitKreduce_kernel<32, 16, int, float, float, float, float, true, false, false>"
    "(cublasSplitKParams<float>, float const*, float const*, float*, float const*, "
    "float const*, float const*, float const*, float*, void*, long, float*, int*)"
)

# (hlo_op, kernel name, duration us per execution: warm-up first, then 3 steady ones)
KERNELS = [
    ("gemm_fusion", "gemm_fusion", (61.0, 40.0, 41.0, 39.5)),
    ("custom-call.1", CUBLAS_GEMM, (45.0, 30.0, 30.5, 29.0)),
    ("custom-call.1", CUBLAS_SPLITK, (7.0, 5.0, 5.0, 5.5)),
    ("loop_add_fusion", "loop_add_fusion", (12.0, 8.0, 8.5, 8.0)),
    ("input_reduce_fusion.1", "input_reduce_fusion_1", (15.0, 12.0, 11.0, 12.5)),
]
EXECUTIONS = 4  # the first is the warm-up
PERIOD_US = 1000.0  # one execution per millisecond
GAP_US = 2.0  # idle between two kernels on the stream


class Plane:
    """A thin XPlaneBuilder: event and stat metadata created on first use."""

    def __init__(self, space: xplane_pb2.XSpace, plane_id: int, name: str) -> None:
        self.p = space.planes.add()
        self.p.id = plane_id
        self.p.name = name
        self._events: dict[str, int] = {}
        self._stats: dict[str, int] = {}

    def event_md(self, name: str, display_name: str = "") -> int:
        if name not in self._events:
            i = len(self._events) + 1
            self._events[name] = i
            md = self.p.event_metadata[i]
            md.id = i
            md.name = name
            if display_name:
                md.display_name = display_name
        return self._events[name]

    def stat_md(self, name: str) -> int:
        if name not in self._stats:
            i = len(self._stats) + 1
            self._stats[name] = i
            md = self.p.stat_metadata[i]
            md.id = i
            md.name = name
        return self._stats[name]

    def set_stats(self, owner, stats: dict) -> None:
        for name, value in stats.items():
            st = owner.stats.add()
            st.metadata_id = self.stat_md(name)
            if isinstance(value, tuple):  # ("ref", text) / ("uint64", n) / ("bytes", b)
                kind, v = value
                if kind == "ref":
                    st.ref_value = self.stat_md(v)
                elif kind == "uint64":
                    st.uint64_value = v
                elif kind == "bytes":
                    st.bytes_value = v
            elif isinstance(value, bool):
                st.int64_value = int(value)
            elif isinstance(value, int):
                st.int64_value = value
            elif isinstance(value, float):
                st.double_value = value
            else:
                st.str_value = value

    def line(self, line_id: int, name: str, timestamp_ns: int = T0_NS):
        ln = self.p.lines.add()
        ln.id = line_id
        ln.display_id = line_id
        ln.name = name
        ln.timestamp_ns = timestamp_ns
        return ln

    def event(self, line, name: str, start_ps: int, dur_ps: int, stats: dict | None = None,
              display_name: str = ""):
        ev = line.events.add()
        ev.metadata_id = self.event_md(name, display_name)
        ev.offset_ps = start_ps
        ev.duration_ps = dur_ps
        if stats:
            self.set_stats(ev, stats)
        return ev


def build(derived: bool) -> xplane_pb2.XSpace:
    space = xplane_pb2.XSpace()
    space.hostnames.append(HOST)

    meta = Plane(space, 0, "/host:metadata")
    md = meta.p.event_metadata[meta.event_md(f"{MODULE}({PROGRAM_ID})")]
    # The real one holds the serialized optimized HloProto; a placeholder here.
    meta.set_stats(md, {"Hlo Proto": ("bytes", b"\x0a\x0bjit_gpu_mlp" + bytes(200)),
                        "program_id": ("uint64", PROGRAM_ID)})
    meta.set_stats(meta.p, {"jax_version": "0.10.2", "jaxlib_version": "0.10.2"})

    host = Plane(space, 1, "/host:CPU")
    python = host.line(TID, "python")
    cupti = Plane(space, 2, "/host:CUPTI")
    launches = cupti.line(TID, f"Host Threads/{TID}")

    gpu = Plane(space, 3, "/device:GPU:0")
    gpu.set_stats(gpu.p, {
        "device_vendor": "Nvidia",
        "gpu_device_name": "NVIDIA H100 80GB HBM3 (synthetic)",
        "clock_rate": 1980000,
        "core_count": 132,
        "compute_cap_major": 9,
        "compute_cap_minor": 0,
        "memory_size": ("uint64", 85_520_809_984),
    })
    stream = gpu.line(STREAM, f"Stream #{STREAM}(Kernel)")
    copies = gpu.line(20, "Stream #20(MemcpyD2H)")
    if derived:
        xla_modules = gpu.line(1_000_000_003, "XLA Modules")
        xla_ops = gpu.line(1_000_000_002, "XLA Ops")

    correlation = 100
    for i in range(EXECUTIONS):
        t = round(i * PERIOD_US * US)
        host.event(python, f"PjitFunction({MODULE[4:]})", t, 400 * US)
        host.event(python, "CommonPjRtLoadedExecutable::ExecuteHelperOnSingleDevice",
                   t + 20 * US, 300 * US)
        host.event(python, f"{MODULE}:XLA GPU module", t + 50 * US, 100 * US)
        device_t = t + 200 * US
        first_start = device_t
        for k, (op, kernel, durations) in enumerate(KERNELS):
            launch_t = t + (60 + 15 * k) * US
            correlation += 1
            cupti.event(launches, "cuLaunchKernel", launch_t, 5 * US,
                        {"correlation_id": ("uint64", correlation), "device_id": ("uint64", 0)})
            dur = round(durations[i] * US)
            gpu.event(stream, kernel, device_t, dur, {
                "correlation_id": ("uint64", correlation),
                "context_id": "$$1",
                "theoretical_occupancy_pct": 100.0,
                "kernel_details": ("ref", "regs:32 static_shared:0 dynamic_shared:0 "
                                          "grid:128,1,1 block:256,1,1 occ_pct:100.0"),
                "tf_op": ("ref", "XlaModule"),
                "hlo_module": ("ref", MODULE),
                "program_id": PROGRAM_ID,
                "hlo_op": ("ref", op),
            })
            if derived:
                gpu.event(xla_ops, f"{PROGRAM_ID}/{op}", device_t, dur, {}, display_name=op)
            device_t += dur + round(GAP_US * US)
        last_end = device_t - round(GAP_US * US)
        if derived:
            gpu.event(xla_modules, f"{MODULE}({PROGRAM_ID})", first_start,
                      last_end - first_start, {"group_id": i})
        # the result copied back: not an HLO op, must be ignored
        correlation += 1
        gpu.event(copies, "MemcpyD2H", last_end + round(3 * US), round(4 * US), {
            "correlation_id": ("uint64", correlation),
            "memcpy_details": ("ref", "kind_src:device kind_dst:pinned size:256 dest:0 async:1"),
        })

    env = Plane(space, 4, "Task Environment")
    env.set_stats(env.p, {"profile_start_time": ("uint64", T0_NS),
                          "profile_stop_time": ("uint64", T0_NS + 5_000_000)})
    return space


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent
    for variant in ("raw", "derived"):
        folder = out / variant / "plugins" / "profile" / SESSION
        folder.mkdir(parents=True, exist_ok=True)
        data = build(derived=variant == "derived").SerializeToString(deterministic=True)
        (folder / f"{HOST}.xplane.pb").write_bytes(data)
        print(folder / f"{HOST}.xplane.pb", len(data), "bytes")


if __name__ == "__main__":
    main()
