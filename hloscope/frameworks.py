"""The machine-learning frameworks hloscope captures, by one name each.

A framework is a `Framework`; every spelling a user or a file may use (`tf`,
`TensorFlow`, `jax`) goes through `Framework.parse`, the one alias table. A run that
compiled with several frameworks (Keras on JAX with TensorFlow imported) records them
as a sorted tuple, written `jax+tensorflow` in `run.json` and in reports
(`join_frameworks`, `split_frameworks`). Another framework joins by adding a member and its
aliases here; nothing else spells framework names. This module sits at the bottom of the
pipeline: it imports nothing from hloscope but `errors`.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from hloscope.errors import UsageError

__all__ = ["Framework", "join_frameworks", "split_frameworks"]


class Framework(str, enum.Enum):
    """A framework whose XLA compiles hloscope reads.

    The value is the framework's package name, as `run.json`, `--json` documents and the
    child's report write it.

    Example:
        >>> Framework.parse("TF")
        <Framework.TENSORFLOW: 'tensorflow'>
        >>> join_frameworks([Framework.TENSORFLOW, Framework.JAX])
        'jax+tensorflow'
    """

    TENSORFLOW = "tensorflow"
    JAX = "jax"
    TORCH_XLA = "torch_xla"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, name: str) -> Framework:
        """The framework a name means: `tf`/`tensorflow`, `jax`, or `torch`/`torch_xla`
        (PyTorch/XLA), any case.

        Raises:
            UsageError: The name is no framework hloscope knows; the message lists them.
        """
        found = _ALIASES.get(name.strip().lower())
        if found is None:
            names = [repr(f.value) for f in cls]
            known = ", ".join(names[:-1]) + " or " + names[-1]
            raise UsageError(f"unknown framework {name!r}; expected {known}")
        return found

    @classmethod
    def lookup(cls, name: str) -> Framework | None:
        """Like `parse`, but None for a name hloscope does not know (a newer hloscope's
        run, a package that is no framework)."""
        return _ALIASES.get(name.strip().lower())


# Every spelling of every framework: the one alias table.
_ALIASES: dict[str, Framework] = {
    "tf": Framework.TENSORFLOW,
    "tensorflow": Framework.TENSORFLOW,
    "jax": Framework.JAX,
    "torch": Framework.TORCH_XLA,
    "torch_xla": Framework.TORCH_XLA,
    "torch-xla": Framework.TORCH_XLA,
    "pytorch": Framework.TORCH_XLA,
}


def split_frameworks(text: str | None) -> tuple[Framework, ...]:
    """The frameworks of a joined name (`jax+tensorflow`): the known ones, sorted.

    Example:
        >>> split_frameworks("tensorflow+jax")
        (<Framework.JAX: 'jax'>, <Framework.TENSORFLOW: 'tensorflow'>)
    """
    found = {f for part in (text or "").split("+") if (f := Framework.lookup(part)) is not None}
    return tuple(sorted(found, key=lambda f: f.value))


def join_frameworks(frameworks: Iterable[Framework]) -> str:
    """The joined name of several frameworks (`jax+tensorflow`), sorted; "" for none.

    Example:
        >>> join_frameworks([Framework.JAX])
        'jax'
    """
    return "+".join(sorted({f.value for f in frameworks}))
