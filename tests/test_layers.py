"""The package's imports flow one way, along the pipeline, and never in a circle.

The one written order (`LAYERS`; README.md and `hloscope/__init__.py` state the same):

    errors, frameworks, files, store, user_cache, status -> hlo -> manifest, runs, unpack, passes,
    pass_log -> capture -> analysis -> timing -> inspection -> render -> notebook, cli, __main__

A module may import its own layer and the layers before it, never after; display hooks
(`_repr_html_`) reach `render` only through `hloscope.render.display.repr_html`. Imports
inside functions count as much as those at the top: a lazy import is still a
dependency. README.md's layout names every module.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import networkx as nx

PACKAGE = Path(__file__).resolve().parents[1] / "hloscope"

# Lowest first. A module's layer is the longest prefix listed here.
LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "hloscope.errors",
        "hloscope.frameworks",
        "hloscope.files",
        "hloscope.store",
        "hloscope.user_cache",
        "hloscope.status",
    ),
    ("hloscope.hlo",),
    (
        "hloscope.manifest",
        "hloscope.runs",
        "hloscope.unpack",
        "hloscope.passes",
        "hloscope.pass_log",
    ),
    ("hloscope.capture",),
    ("hloscope.analysis",),
    ("hloscope.timing",),
    ("hloscope.inspection",),
    ("hloscope.render",),
    ("hloscope.notebook", "hloscope.cli", "hloscope.__main__"),
)
# (importer, imported): the one sanctioned upward reach, for notebook display.
ALLOWED_UPWARD = {("hloscope.analysis.fusion", "hloscope.render.display")}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Every hloscope module a file imports, anywhere in it."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            # `from hloscope.render import diagram` imports hloscope.render.diagram
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return {name for name in found if name.startswith("hloscope.")}


def _layer(name: str) -> int:
    for rank, prefixes in enumerate(LAYERS):
        if any(name == p or name.startswith(p + ".") for p in prefixes):
            return rank
    raise AssertionError(f"{name} is in no layer; add it to LAYERS")


def _graph() -> nx.DiGraph:
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    g = nx.DiGraph()
    for name, path in files.items():
        if name == "hloscope":  # the lazy public API sees everything, by design
            continue
        g.add_node(name)
        for imported in _imports(path):
            if imported in files:
                g.add_edge(name, imported)
    return g


def test_every_module_is_in_a_layer() -> None:
    for name in _graph().nodes:
        _layer(name)


def test_imports_flow_down_the_pipeline() -> None:
    upward = [
        f"{a} (layer {_layer(a)}) imports {b} (layer {_layer(b)})"
        for a, b in _graph().edges
        if _layer(b) > _layer(a) and (a, b) not in ALLOWED_UPWARD
    ]
    assert not upward, "\n".join(upward)


def test_no_import_cycles() -> None:
    g = _graph()
    g.remove_edges_from(ALLOWED_UPWARD)
    cycles = [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1]
    assert not cycles, cycles


def test_the_guard_sees_lazy_imports() -> None:
    # the display hook is a lazy import inside a method: the walk must find it
    assert ("hloscope.analysis.fusion", "hloscope.render.display") in _graph().edges


def _order() -> str:
    """`LAYERS` written as the docs write it: `a, b -> c -> ...`."""
    return " -> ".join(", ".join(p.removeprefix("hloscope.") for p in layer) for layer in LAYERS)


def _words(text: str) -> str:
    return " ".join(text.split())


def test_the_readme_and_the_package_state_the_enforced_order() -> None:
    readme = (PACKAGE.parent / "README.md").read_text(encoding="utf-8")
    package = ast.get_docstring(ast.parse((PACKAGE / "__init__.py").read_text("utf-8"))) or ""
    here = ast.get_docstring(ast.parse(Path(__file__).read_text(encoding="utf-8"))) or ""
    for name, text in (("README.md", readme), ("hloscope/__init__.py", package), ("here", here)):
        assert _order() in _words(text), f"{name} does not state {_order()!r}"


def _layout() -> str:
    readme = (PACKAGE.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## How the code is laid out", 1)[1]
    return next(b for b in section.split("```")[1::2] if b.lstrip().startswith("hloscope/"))


def test_the_readme_layout_names_every_module() -> None:
    """Each module file is named in the layout, in the entry of its folder."""
    entries: dict[str, str] = {}
    current = ""
    for line in _layout().splitlines()[1:]:
        head = line[2:].split(" ", 1)[0] if line.startswith("  ") and line[2] != " " else ""
        if head:
            current = head.rstrip("/") if head.endswith("/") else ""
        entries[current] = entries.get(current, "") + " " + line
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        if parts[-1] == "__init__.py" and len(parts) > 1:
            continue
        folder = parts[0] if len(parts) > 1 else ""
        if not re.search(rf"(?<![\w.]){re.escape(parts[-1])}", entries.get(folder, "")):
            missing.append("/".join(parts))
    assert not missing, f"README.md's layout leaves out {missing}"
