"""Measured timings: profiler traces -> per-module and per-kernel times; eager vs XLA.

`xplane` reads profiles without any framework, `attribution` turns their events into
`ProfileTimings`, `nsys` reads nsys-jax archives (GPU thunk ranges) into the same,
`bench` times a function eagerly and under XLA, and `render` builds their JSON
documents and tables. (The hooks that start the profiler in the dump child
are `hloscope.capture.profiler`.)
"""
