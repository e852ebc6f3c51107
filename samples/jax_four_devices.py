"""One JAX model on four devices of one CPU: SPMD sharding, ``shard_map`` and ``pmap``.

The script asks XLA for four host devices itself
(``--xla_force_host_platform_device_count=4``, added to ``XLA_FLAGS`` before JAX is
imported), so it runs the same with ``python`` and under ``hloscope dump``. Three ways
to use them, each its own compiled module with ``num_partitions=4``:

- ``jit_dense``: a GELU layer under ``jax.jit`` on a batch sharded over the devices with
  ``NamedSharding`` (the weights replicated): XLA's SPMD partitioner gives each device
  a quarter of the batch and no collective.
- ``jit_row_parallel``: a ``shard_map`` matmul whose inner dimension is split over the
  devices; each computes a partial product and ``psum`` adds them: one all-reduce.
- ``pmap``: a per-device step with a ``psum`` across them; reading one device's row of
  its result back (``out[0]``) compiles a ``jit_gather`` helper of its own.

Run::

    python samples/jax_four_devices.py [--batch 64] [--width 256] [--calls 4]
"""

from __future__ import annotations

import os

# Before JAX is imported: four CPU devices, and the CPU even where a GPU is present.
os.environ["XLA_FLAGS"] = " ".join(
    [os.environ.get("XLA_FLAGS", ""), "--xla_force_host_platform_device_count=4"]
).strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import argparse
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

DEVICES = 4


def mesh() -> jax.sharding.Mesh:
    """A one-axis mesh over the four devices, axis `data`."""
    return jax.make_mesh((DEVICES,), ("data",))


def dense(x: jax.Array, w: jax.Array) -> jax.Array:
    """A GELU layer; under `jax.jit` on a batch-sharded `x` each device runs its rows."""
    with jax.named_scope("dense"):
        return jax.nn.gelu(x @ w)


jit_dense = jax.jit(dense)


def row_parallel_partial(x: jax.Array, w: jax.Array) -> jax.Array:
    """One device's share of `x @ w` with the inner dimension split: a partial product,
    summed over the devices with `psum`."""
    with jax.named_scope("row_parallel"):
        return jax.lax.psum(x @ w, "data")


def row_parallel(m: jax.sharding.Mesh) -> Callable[[jax.Array, jax.Array], jax.Array]:
    """`x @ w` as a `shard_map` over `m`: `x` split by columns, `w` by rows."""
    return jax.jit(
        jax.shard_map(
            row_parallel_partial,
            mesh=m,
            in_specs=(P(None, "data"), P("data", None)),
            out_specs=P(),
        )
    )


def scaled_sum(a: jax.Array) -> jax.Array:
    """A `pmap` step: each device scales its row, `psum` adds the rows of every device."""
    return jax.lax.psum(a * 2.0, "devices")


pmapped = jax.pmap(scaled_sum, axis_name="devices")


def make_inputs(
    batch: int = 64, width: int = 256, m: jax.sharding.Mesh | None = None
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """Deterministic `(x, w, x_cols, w_rows)`: `x` sharded by rows and `w` replicated for
    `jit_dense`; the same arrays sharded by columns and by rows for `row_parallel`."""
    m = m or mesh()
    kx, kw = jax.random.split(jax.random.PRNGKey(0))
    x = jax.random.normal(kx, (batch, width), jnp.float32)
    w = jax.random.normal(kw, (width, width), jnp.float32) / jnp.sqrt(width)
    return (
        jax.device_put(x, NamedSharding(m, P("data", None))),
        jax.device_put(w, NamedSharding(m, P(None, None))),
        jax.device_put(x, NamedSharding(m, P(None, "data"))),
        jax.device_put(w, NamedSharding(m, P("data", None))),
    )


def bench() -> tuple[Callable[[jax.Array, jax.Array], jax.Array], tuple[jax.Array, jax.Array]]:
    """Return ``(fn, args)``: the plain (non-jitted) layer and its sharded inputs."""
    x, w, _, _ = make_inputs()
    return dense, (x, w)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--calls", type=int, default=4)
    args = parser.parse_args()

    m = mesh()
    x, w, x_cols, w_rows = make_inputs(args.batch, args.width, m)
    matmul = row_parallel(m)
    rows = jnp.arange(DEVICES * 8, dtype=jnp.float32).reshape(DEVICES, 8)
    for _ in range(args.calls):
        y = jit_dense(x, w).block_until_ready()
        z = matmul(x_cols, w_rows).block_until_ready()
        s = pmapped(rows).block_until_ready()
    first_row = s[0]  # one device's row: a `jit_gather` of its own
    print(
        f"jax_four_devices: {len(jax.devices())} devices; dense {tuple(y.shape)} sharded "
        f"{len(y.sharding.device_set)} ways, row-parallel sum {float(z.sum()):.4f}, "
        f"pmap row {float(first_row.sum()):.1f}"
    )


if __name__ == "__main__":
    main()
