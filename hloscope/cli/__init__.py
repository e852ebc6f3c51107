"""The `hloscope` command: a thin typer layer over the library.

Each command parses its options, calls the library (load with `inspect_run`, or capture
with `run_dump`), and hands the result to a renderer. One module per panel of
`hloscope --help`; heavy modules are imported inside the commands that need them, so
`hloscope --help` starts fast and never imports TensorFlow or JAX.
"""

from __future__ import annotations

from hloscope.cli.app import app, main

# Importing a command module registers its commands; this order is `hloscope --help`'s,
# the pipeline's: capture, inspect, time, compare.
# isort: off
from hloscope.cli import capture  # noqa: F401
from hloscope.cli import inspect  # noqa: F401
from hloscope.cli import passes  # noqa: F401
from hloscope.cli import timing  # noqa: F401
from hloscope.cli import compare  # noqa: F401
# isort: on

__all__ = ["app", "main"]
