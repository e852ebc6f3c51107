"""The public API (`import hloscope`) is typed and whole: every name it exports resolves
at run time, every type its functions and classes return, take or raise is exported too,
renderer internals are not, each public name is documented with an example, and the
package ships `py.typed` so that users' type checkers read its hints."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import hloscope
from tests.conftest import DATA

ROOT = Path(__file__).resolve().parents[1]
INTERNALS = ("timings_doc", "diff_doc", "bench_doc", "run_doc", "module_doc", "dumps")


def _public() -> dict[str, Any]:
    return {name: getattr(hloscope, name) for name in hloscope.__all__ if name != "__version__"}


def _namespace() -> dict[str, Any]:
    """Every class of the package by name, to resolve annotations written under
    `TYPE_CHECKING` (they name types the module does not import at run time)."""
    import importlib
    import pkgutil

    names: dict[str, Any] = dict(vars(typing))
    for info in pkgutil.walk_packages(hloscope.__path__, "hloscope."):
        if info.name.endswith(("__main__", ".runner", ".profiler", ".compile_watch")):
            continue
        module = importlib.import_module(info.name)
        names.update({k: v for k, v in vars(module).items() if isinstance(v, type)})
    return names


@functools.cache
def _hints(obj: Any) -> dict[str, Any]:
    return typing.get_type_hints(obj, localns=_namespace())


def _classes(tp: Any) -> Iterator[type]:
    """The hloscope classes an annotation names, at any depth (`tuple[Kernel, ...] |
    None` names `Kernel`)."""
    if isinstance(tp, type) and tp.__module__.startswith("hloscope"):
        yield tp
    for arg in typing.get_args(tp):
        yield from _classes(arg)


def _members(cls: type) -> Iterator[Any]:
    """The functions of a class's public surface: methods, properties, cached
    properties, and its dataclass fields' annotation."""
    for name, member in vars(cls).items():
        if name.startswith("_") and name != "__init__":
            continue
        if isinstance(member, property) and member.fget is not None:
            yield member.fget
        elif isinstance(member, functools.cached_property):
            yield member.func
        elif isinstance(member, staticmethod | classmethod):
            yield member.__func__
        elif inspect.isfunction(member):
            yield member


def _referenced(obj: Any) -> set[type]:
    found: set[type] = set()
    if inspect.isclass(obj):
        if dataclasses.is_dataclass(obj):
            for name, tp in _hints(obj).items():
                if not name.startswith("_"):
                    found.update(_classes(tp))
        for member in _members(obj):
            for tp in _hints(member).values():
                found.update(_classes(tp))
        found.update(b for b in obj.__mro__[1:] if b.__module__.startswith("hloscope"))
    elif callable(obj):
        for tp in _hints(obj).values():
            found.update(_classes(tp))
    return found


def _raised(obj: Any) -> set[str]:
    """Error names in the `Raises:` sections of an object's docstrings (its methods')."""
    docs = [inspect.getdoc(obj) or ""]
    if inspect.isclass(obj):
        docs += [inspect.getdoc(m) or "" for m in _members(obj)]
    found = set()
    for doc in docs:
        section = re.search(r"^Raises:\n((?:[ \t]+.*\n?|\n)+)", doc, re.M)
        if section:
            found.update(re.findall(r"^[ \t]{4}(\w+):", section.group(1), re.M))
    return found


def test_every_exported_name_resolves_at_run_time() -> None:
    for name in hloscope.__all__:
        assert getattr(hloscope, name) is not None, name
    assert callable(hloscope.run_timings)  # declared for type checkers, and there
    assert sorted(dir(hloscope)) == sorted(hloscope.__all__)
    with pytest.raises(AttributeError):
        hloscope.no_such_name  # noqa: B018


def test_the_type_checking_imports_match_the_exports() -> None:
    source = (ROOT / "hloscope" / "__init__.py").read_text(encoding="utf-8")
    block = source.split("if TYPE_CHECKING:", 1)[1].split("\ndef ", 1)[0]
    declared = set(re.findall(r"\b(\w+),?\n", block)) | set(
        re.findall(r"import (\w+)$", block, re.M)
    )
    declared |= {
        n
        for line in block.splitlines()
        for n in re.findall(r"import (.+)$", line)
        for n in n.replace(",", " ").split()
    }
    assert set(hloscope.__all__) - {"__version__"} <= declared


def test_every_type_the_api_takes_returns_or_holds_is_exported() -> None:
    """Walk the API: the signatures of exported functions, and of exported classes'
    methods, properties and fields, transitively; each hloscope class met is exported."""
    public = _public()
    exported = {v for v in public.values() if isinstance(v, type)}
    seen: set[int] = set()
    todo = list(public.values())
    missing: dict[str, str] = {}
    walked = 0
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        walked += 1
        for cls in _referenced(obj):
            if cls not in exported:
                missing[f"{cls.__module__}.{cls.__qualname__}"] = getattr(obj, "__qualname__", "")
            todo.append(cls)
    assert not missing, "\n".join(f"{k} (from {v})" for k, v in sorted(missing.items()))
    assert walked >= len(public)


def test_every_error_the_api_raises_is_exported() -> None:
    errors = {n for n, v in _public().items() if isinstance(v, type) and issubclass(v, Exception)}
    builtin = {
        n for n in dir(__builtins__ if isinstance(__builtins__, dict) else vars(__builtins__))
    }
    builtin |= set(vars(types.SimpleNamespace).keys()) | {
        n for n in dir(__import__("builtins")) if n.endswith(("Error", "Exception"))
    }
    unexported = {
        f"{name} (in {qualname})"
        for qualname, obj in _public().items()
        for name in _raised(obj)
        if name not in errors and name not in builtin
    }
    assert not unexported, sorted(unexported)
    assert {"MissingDependencyError", "ProfileReadError", "DocumentError"} <= errors


def test_renderer_internals_are_not_public() -> None:
    for name in INTERNALS:
        assert name not in hloscope.__all__
        assert not hasattr(hloscope, name)


def test_every_public_name_is_documented_with_an_example() -> None:
    """The API reference (`make docs`) shows each public name's docstring: each has one,
    with an example (an `Example:` section)."""
    missing = []
    for name, obj in _public().items():
        doc = inspect.getdoc(obj) or ""
        if not doc.strip() or not re.search(r"^Examples?:$", doc, re.M):
            missing.append(name)
    assert not missing, f"{len(missing)} public names lack an example: {missing}"


def test_the_examples_run_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each public name's example is a doctest over the repository's test data; the
    ones that need a framework are marked to skip."""
    import doctest

    monkeypatch.chdir(ROOT)
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    ran = 0
    for name, obj in _public().items():
        module = inspect.getmodule(obj)
        globs = {**vars(module), "hloscope": hloscope} if module else {"hloscope": hloscope}
        for test in finder.find(obj, name, globs=globs):
            runner.run(test)
            ran += 1
    result = runner.summarize(verbose=False)
    assert result.failed == 0
    assert ran >= len(_public())


def test_the_api_reference_builds_without_a_warning(tmp_path: Path) -> None:
    """What `make docs` runs (pdoc over `hloscope`, warnings as errors)."""
    import subprocess
    import sys

    pytest.importorskip("pdoc")
    command = [sys.executable, "-W", "error::UserWarning", "-m", "pdoc"]
    command += ["--docformat", "google", "-o", str(tmp_path), "hloscope"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    page = (tmp_path / "hloscope.html").read_text(encoding="utf-8")
    for name in hloscope.__all__:
        assert f'id="{name}"' in page, name
    assert "Example" in page and "load_run" in page


def test_py_typed_is_shipped() -> None:
    assert (ROOT / "hloscope" / "py.typed").is_file()
    config = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^"hloscope" = \[.*"py\.typed".*\]$', config, re.M)
    mypy = config.split("[tool.mypy]", 1)[1].split("\n[", 1)[0]
    assert re.search(r"^strict = true$", mypy, re.M) and 'files = ["hloscope"]' in mypy


def test_load_run_then_inspect_run_and_the_notebook_view_agree() -> None:
    run = hloscope.load_run(DATA / "jax_mlp")
    assert isinstance(run, hloscope.Run)
    inspection = hloscope.inspect_run(run)
    assert isinstance(inspection, hloscope.Inspection)
    view = hloscope.open_run(DATA / "jax_mlp")
    assert isinstance(view, hloscope.RunView)
    assert [m.key for m in view.inspection.modules] == [m.key for m in inspection.modules]
    assert hloscope.RunView(run).main().key == view.main().key == "0030.jit_mlp"


def test_a_run_is_inspected_once_for_all_its_module_views() -> None:
    view = hloscope.open_run(DATA / "jax_mlp")
    main = view.main()
    assert main.report is view.inspection.module(main.key)  # the run's analysis, not a new one
    assert [m.key for m in main.inspection.modules] == [main.key]
