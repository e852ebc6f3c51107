"""Measured timings: profiler traces -> per-module and per-kernel times; eager vs XLA.

`xplane` reads profiles without any framework, `attribution` turns their events into
`ProfileTimings`, `bench` times a function eagerly and under XLA, `profiler` holds the
hooks the dump child calls, and `render` builds their JSON documents and tables.
"""
