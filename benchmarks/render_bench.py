"""Diagram speed: `hloscope graph`'s default render against XLA's own DOT export.

For two modules after optimization, in one run:
  - Keras ResNet-50 inference (tests/data/tf_resnet50, with its before-optimization file,
    as `hloscope graph` reads it), and
  - a generated JAX module of about 30k instructions (85 unrolled layers of x@w+b, GELU,
    a layer-norm-like normalisation and softmax, and the gradient: `jax.jit(jax.grad(f))
    .lower(...).compile().as_text()`, cached in the temp dir),
it times hloscope (parse, analyse, build the kernel graph with the default budget, write
DOT, `dot -Tsvg`) and XLA's export (`jaxlib._hlo.hlo_module_to_dot_graph(
hlo_module_from_text(text))` piped through the same `dot -Tsvg`). Each side is capped at
120 s and reported as "did not finish" past it. Target: every hloscope render < 10 s.

    python benchmarks/render_bench.py [--layers 85] [--cap 120] [--keep DIR]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
from parse_bench import big_module_file  # noqa: E402  (the shared 27k-instruction module)

RESNET = ROOT / "tests" / "data" / "tf_resnet50"


def run_dot(source: Path, out: Path, cap: float) -> float | None:
    """Seconds `dot -Tsvg` took, or None when it ran past `cap`."""
    started = time.perf_counter()
    try:
        subprocess.run(
            ["dot", "-Tsvg", "-o", str(out), str(source)],
            check=True,
            capture_output=True,
            timeout=max(1.0, cap),
        )
    except subprocess.TimeoutExpired:
        return None
    return time.perf_counter() - started


def ours(after: Path, before: Path | None, out: Path, cap: float) -> dict[str, object]:
    from hloscope.inspection import inspect_run
    from hloscope.render.diagram import module_diagram
    from hloscope.render.dot import to_dot

    started = time.perf_counter()
    (module,) = inspect_run(after, timings=False, bench=False).modules  # with its before file
    parsed = time.perf_counter()
    spec = module_diagram(module)
    source = out.with_suffix(".dot")
    source.write_text(to_dot(spec), encoding="utf-8")
    built = time.perf_counter()
    laid = run_dot(source, out.with_suffix(".svg"), cap - (built - started))
    return {
        "nodes": len(spec.nodes),
        "what": f"{spec.units} kernels" + (", collapsed" if spec.collapsed else ""),
        "parse": parsed - started,
        "build": built - parsed,
        "dot": laid,
        "total": None if laid is None else built - started + laid,
    }


def theirs(after: Path, out: Path, cap: float) -> dict[str, object]:
    from jaxlib import _hlo as xla

    started = time.perf_counter()
    module = xla.hlo_module_from_text(after.read_text())
    parsed = time.perf_counter()
    source = out.with_suffix(".dot")
    source.write_text(xla.hlo_module_to_dot_graph(module))
    built = time.perf_counter()
    nodes = len(re.findall(r"^\s*\d+ \[", source.read_text(), flags=re.M))
    laid = run_dot(source, out.with_suffix(".svg"), cap - (built - started))
    return {
        "nodes": nodes,
        "what": "XLA DOT export",
        "parse": parsed - started,
        "build": built - parsed,
        "dot": laid,
        "total": None if laid is None else built - started + laid,
    }


def fmt(seconds: object, cap: float) -> str:
    return f"did not finish in {cap:g} s" if seconds is None else f"{seconds:.2f} s"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=85)
    ap.add_argument("--cap", type=float, default=120.0, help="seconds per render")
    ap.add_argument("--keep", type=Path, help="write the .dot and .svg files here")
    args = ap.parse_args()
    if shutil.which("dot") is None:
        raise SystemExit("Graphviz `dot` is not installed (apt-get install graphviz)")

    from hloscope.hlo.parser import parse_file

    big = big_module_file(args.layers)
    cases = [
        (
            "ResNet-50 (Keras, TF)",
            next(RESNET.glob("*after_optimizations.txt")),
            next(RESNET.glob("*before_optimizations.txt")),
        ),
        (f"JAX {args.layers} layers + grad", big, None),
    ]
    work = args.keep or Path(tempfile.mkdtemp(prefix="hloscope-render-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"dot: {subprocess.run(['dot', '-V'], capture_output=True, text=True).stderr.strip()}")
    for i, (title, after, before) in enumerate(cases):
        size = parse_file(after).instruction_count
        print(f"\n{title}: {size} instructions after optimization ({after.name[:60]})")
        for label, result in (
            ("hloscope graph", ours(after, before, work / f"ours{i}.svg", args.cap)),
            ("XLA to_dot   ", theirs(after, work / f"xla{i}.svg", args.cap)),
        ):
            print(
                f"  {label}  {result['nodes']:>6} nodes ({result['what']}): "
                f"parse {result['parse']:.2f} s, graph+DOT {result['build']:.2f} s, "
                f"dot -Tsvg {fmt(result['dot'], args.cap)}; total {fmt(result['total'], args.cap)}"
            )
    print(f"\nfiles in {work}")


if __name__ == "__main__":
    main()
