"""The one small error hierarchy of hloscope.

Library code raises these; only the CLI catches them, prints `str(error)` on one line and
exits with `error.exit_code`. Messages say what went wrong and what to do next.
"""

from __future__ import annotations


class HloscopeError(Exception):
    """Base class of every error hloscope raises on purpose.

    Example:
        >>> try:
        ...     hloscope.load_run('no/such/run')
        ... except hloscope.HloscopeError as e:
        ...     print(e.exit_code)
        ...
        2
    """

    exit_code = 1


class UsageError(HloscopeError):
    """The user asked for something that cannot be done as asked (bad path, option).

    Example:
        >>> try:
        ...     hloscope.load_run("tests/data/jax_mlp").module('nothing-like-this')
        ... except hloscope.UsageError as e:
        ...     print(str(e)[:37])
        ...
        no module matches 'nothing-like-this'
    """

    exit_code = 2


class HloParseError(HloscopeError):
    """HLO text that hloscope cannot read.

    Attributes:
        message: What is wrong.
        path: The file, or None for text passed in directly.
        line: 1-based line of the problem.
        column: 1-based column of the problem.
        text: The offending text (shortened).

    Example:
        >>> try:
        ...     hloscope.parse_module('HloModule m\\nENTRY e {\\n  ROOT x = f32[] bogus(\\n}')
        ... except hloscope.HloParseError as e:
        ...     print(e.line, e.column > 0)
        ...
        3 True
    """

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int = 0,
        column: int = 0,
        text: str = "",
    ) -> None:
        self.message = message
        self.path = path
        self.line = line
        self.column = column
        self.text = text
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.path or "<text>"
        if self.line:
            where += f":{self.line}:{self.column}" if self.column else f":{self.line}"
        shown = self.text.strip()
        if len(shown) > 80:
            shown = shown[:77] + "..."
        return f"{where}: {self.message}" + (f": {shown!r}" if shown else "")


class ProfileReadError(HloscopeError):
    """A profile file that cannot be read, or a folder that holds none.

    Attributes:
        path: The file or folder.
        offset: Byte offset of the problem in a protobuf file (0 when not relevant).

    Example:
        >>> try:
        ...     hloscope.read_trace('tests/data/jax_mlp/HOW.md')
        ... except hloscope.ProfileReadError as e:
        ...     print(type(e).__name__, e.exit_code)
        ...
        ProfileReadError 2
    """

    exit_code = 2

    def __init__(self, message: str, *, path: str | None = None, offset: int = 0) -> None:
        self.message = message
        self.path = path
        self.offset = offset
        where = path or "<bytes>"
        if offset:
            where += f" (byte {offset})"
        super().__init__(f"{where}: {message}")


class MissingDependencyError(HloscopeError):
    """An optional dependency (TensorFlow, JAX, the `dot` binary, a browser) is missing.

    Example:
        >>> try:
        ...     rows = hloscope.to_dataframe([{'a': 1}])
        ... except hloscope.MissingDependencyError as e:
        ...     print('pip install pandas' in str(e))
        ...
        True
    """

    exit_code = 3


class DocumentError(UsageError):
    """A document hloscope saved or passed between processes that cannot be read back:
    `run.json` or one of its sections, a run's `bench.json`, the dump child's report, a
    cache entry. Each typed document's `from_json` raises it instead of returning a
    sentinel; a reader that can go on without the document catches it and says why.

    Attributes:
        where: The file or the part of it that is wrong.

    Example:
        >>> try:
        ...     hloscope.RunManifest.loads('{"status": "exploded"}')
        ... except hloscope.DocumentError as e:
        ...     print(e.where, isinstance(e, hloscope.UsageError))
        ...
        run.json True
    """

    def __init__(self, message: str, *, where: str = "") -> None:
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)
