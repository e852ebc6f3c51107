import os
os.environ["XLA_FLAGS"] = "--xla_dump_to=/tmp/pid/dump --xla_dump_hlo_as_text --xla_force_host_platform_device_count=2"
import jax, jax.numpy as jnp
from jax.sharding import Mesh, PartitionSpec as P
from jax.experimental.shard_map import shard_map
mesh = Mesh(jax.devices(), ("i",))
f = jax.jit(shard_map(lambda x: x * jax.lax.axis_index("i").astype(jnp.float32), mesh=mesh, in_specs=P("i"), out_specs=P("i")))
x = jnp.arange(8.0)
f(x).block_until_ready()
jax.profiler.start_trace("/tmp/pid/prof")
for _ in range(3): f(x).block_until_ready()
jax.profiler.stop_trace()
