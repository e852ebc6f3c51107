"""How frameworks mangle HLO module names, undone for people to read.

TensorFlow names a `jit_compile=True` function's module
`a_inference_attend_16__XlaMustCompile_true_config_proto_<hash>_executor_type_<hash>_.3`
and an auto-clustered one `cluster_0__XlaCompiledKernel_true__..._.3`: everything from
`__Xla` to the numeric suffix is configuration, not name. `analysis.compilations`
groups modules by function with it; renderers print names with it. A pure string
function, free of imports, so that printing a kept report loads nothing else.
"""

from __future__ import annotations

import re

__all__ = ["readable_name", "tf_mangled"]

SUFFIX = re.compile(r"(\.\d+)+$")
"""XLA's numeric suffixes (`.3`, `.1.2`) at the end of a module name."""


def tf_mangled(name: str) -> tuple[str, str] | None:
    """`(name before the mangling, numeric suffix)` of a name TensorFlow mangled
    (`a_inference_attend_16`, `.3`); None for any other name."""
    if "__Xla" not in name:
        return None
    head, _, mangled = name.partition("__Xla")
    suffix = SUFFIX.search(mangled)
    return head.rstrip("_"), suffix[0] if suffix else ""


def readable_name(name: str) -> str:
    """A module name (or key) without TensorFlow's mangling, the function name and
    counters kept: `0000.a_inference_attend_16__XlaMustCompile_true_config_proto_..._.3`
    -> `0000.a_inference_attend_16.3`, `cluster_0__XlaCompiledKernel_true__..._.3` ->
    `cluster_0.3`; any other name as it is."""
    found = tf_mangled(name)
    return name if found is None else found[0] + found[1]
