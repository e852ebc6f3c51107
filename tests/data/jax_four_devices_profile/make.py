"""Remake this folder's profile: samples/jax_four_devices.py's three modules on four CPU
devices, compiled and warmed up outside the trace, then 3 profiled steps (see HOW.md).

Usage (from the repository root): python tests/data/jax_four_devices_profile/make.py OUT
"""

import os
import sys

out = os.path.abspath(sys.argv[1])
os.environ["XLA_FLAGS"] = f"--xla_dump_to={out}/dump --xla_dump_hlo_as_text"
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "samples"))
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import jax_four_devices as sample  # noqa: E402  (adds the device count to XLA_FLAGS)

m = sample.mesh()
x, w, x_cols, w_rows = sample.make_inputs(64, 256, m)
matmul = sample.row_parallel(m)
rows = jnp.arange(32, dtype=jnp.float32).reshape(4, 8)


def step() -> None:
    sample.jit_dense(x, w).block_until_ready()
    matmul(x_cols, w_rows).block_until_ready()
    s = sample.pmapped(rows).block_until_ready()
    s[0].block_until_ready()  # a jit_gather of its own


step()  # compile and warm up outside the trace
options = jax.profiler.ProfileOptions()
options.python_tracer_level = 0  # no Python calls, and no HLO protos: a small file
options.enable_hlo_proto = False
jax.profiler.start_trace(f"{out}/profile", profiler_options=options)
for _ in range(3):
    step()
jax.profiler.stop_trace()
print("profiled", len(jax.devices()), "devices")
