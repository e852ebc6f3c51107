"""The words every view uses, defined once: `hloscope --help` and the README print them.

Kept free of imports, so that `hloscope --help` can show it without loading anything.
"""

from __future__ import annotations

__all__ = ["GLOSSARY", "glossary_text"]

GLOSSARY: tuple[tuple[str, str], ...] = (
    (
        "op",
        "an operation of your program as its framework names it (TensorFlow `dense/MatMul`, "
        "JAX `jit(f)/dot_general`, PyTorch/XLA `aten::addmm`), read from the HLO's "
        "metadata; `hloscope ops` lists one per line. An HLO op is one HLO instruction that does work: before optimization, "
        "HLO ops count what running the HLO op by op would launch.",
    ),
    (
        "kernel",
        "what XLA's runtime launches after optimization: a fusion, a library call, a "
        "collective, or one HLO op left on its own; named by its HLO instruction.",
    ),
    ("launch", "one run of a kernel; a loop's body launches once per trip."),
    (
        "fusion",
        "a kernel XLA built from several HLO ops (a `fusion` instruction that launches).",
    ),
    (
        "alone",
        "an op that shares no kernel with another op: it runs in a kernel of its own, or "
        "in several where XLA split it (`alone in 4 kernels`).",
    ),
    (
        "per execution",
        "for one run of the module (one step); launches, FLOPs, bytes and times are per "
        "execution unless marked total.",
    ),
    (
        "per device",
        "a module that runs on several devices shows one device's figures (the mean over "
        "the devices that ran it).",
    ),
    ("total", "summed over every profiled execution (`total`, `over N executions`)."),
)
"""The words every view uses, defined once (README.md, `hloscope --help`)."""


def glossary_text() -> str:
    """The glossary as `--help` prints it: one paragraph per word."""
    return "\n\n".join(f"{word}: {meaning}" for word, meaning in GLOSSARY)
