"""Is `hloscope graph` byte-identical to another checkout's? (issue 27: a faster graph
must draw the same DOT, hence the same SVG).

Runs `graph ... -o X.dot` with this checkout and with `--old` (a `git archive` of main,
say) over every module folder in tests/data, every corpus module (../shared/corpus/hlo)
and the generated scale pairs (benchmarks/scale_bench.py's folders that exist), drawn
several ways: each stage, side by side, tiny and large node budgets, --around a node of
the default picture. Each checkout runs in one process of its own (the CLI through
typer's test runner); the DOT files and each command's output (or error) are compared
byte for byte. Prints the cases that differ and exits 1 when any does.

    git archive main | tar -x -C /tmp/hloscope-main
    python benchmarks/graph_identity.py --old /tmp/hloscope-main [--big 5,25] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCALE = Path(tempfile.gettempdir()) / "hloscope-scale"


def cases(big: list[str], quick: bool) -> list[tuple[str, list[str]]]:
    """(case id, arguments after `graph`) of every drawing compared."""
    small = [p for p in sorted((ROOT / "tests" / "data").iterdir()) if p.is_dir()]
    small += sorted((ROOT.parent / "shared" / "corpus" / "hlo").glob("*.hlo"))
    ways = [
        ("default", []),
        ("before", ["--stage", "before"]),
        ("after", ["--stage", "after"]),
        ("sbs", ["--side-by-side"]),
        ("n4", ["--max-nodes", "4"]),
        ("before-n4", ["--stage", "before", "--max-nodes", "4"]),
        ("n2000", ["--max-nodes", "2000"]),
        ("before-n2000", ["--stage", "before", "--max-nodes", "2000"]),
        ("around", ["--around", "@", "--depth", "1"]),
        ("before-around", ["--stage", "before", "--around", "@"]),
    ]
    if quick:
        ways = ways[:4]
    out = [(f"{p.name}.{w}", [str(p), *args]) for p in small for w, args in ways]
    for mb in big:
        folder = SCALE / f"{mb}mb"
        before = folder / "module_0001.jit_train.before_optimizations.txt"
        after = folder / "module_0001.jit_train.cpu_after_optimizations.txt"
        if not after.exists():
            print(f"skipped {folder}: not generated (benchmarks/scale_bench.py --mb {mb})")
            continue
        out += [
            (f"{mb}mb.before", [str(before)]),
            (f"{mb}mb.after", [str(after)]),
            (f"{mb}mb.before-n400", [str(before), "--max-nodes", "400"]),
            (f"{mb}mb.after-n400", [str(after), "--max-nodes", "400"]),
            (f"{mb}mb.before-n3", [str(before), "--max-nodes", "3"]),
            (f"{mb}mb.before-around", [str(before), "--around", "@"]),
            (f"{mb}mb.after-around", [str(after), "--around", "@"]),
        ]
        if not quick:
            out.append((f"{mb}mb.sbs", [str(before), "--side-by-side", "--max-nodes", "120"]))
    return out


def worker(spec: Path, folder: Path) -> None:
    """Draw every case of `spec` (JSON) into `folder` with the hloscope on sys.path."""
    from typer.testing import CliRunner

    from hloscope.cli import app

    runner = CliRunner()
    defaults: dict[str, str] = {}
    for case, args in json.loads(spec.read_text()):
        if "@" in args:
            # The around name: the first kernel or op drawn in the default picture
            args = [_centre(defaults, case, args) if a == "@" else a for a in args]
            if "@" in args:
                (folder / f"{case}.out").write_text("no centre")
                continue
        dot = folder / f"{case}.dot"
        result = runner.invoke(app, ["graph", *args, "-o", str(dot)])
        text = result.output.replace(str(folder), "OUT")
        (folder / f"{case}.out").write_text(f"exit {result.exit_code}\n{text}")
        if dot.exists():
            defaults[case] = dot.read_text()
        print(case, result.exit_code, flush=True)


def _centre(defaults: dict[str, str], case: str, args: list[str]) -> str:
    """A kernel or op drawn alone in a picture of the same module already drawn."""
    stem = case.rsplit(".", 1)[0]
    before = "before" in case.rsplit(".", 1)[1]
    side = "before" if before else "after"
    ways = (side, f"{side}-n400", f"{side}-n2000", "n2000" if not before else "", "default")
    dot = "".join(defaults.get(f"{stem}.{w}", "") for w in ways)
    for node in re.findall(r'^\s*"([^"]+)" \[', dot, flags=re.M):
        if node.startswith("k/"):
            return node[2:]
        if node.startswith("b/") and not node.startswith(("b/p/", "b/g/", "b/r/", "b/out")):
            return node[2:]
    return "@"


def main() -> None:
    """Draw each case with both checkouts and compare."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", type=Path, required=True, help="the other checkout's root")
    ap.add_argument("--big", default="5,25", help="scale pairs (MB) to draw too; '' for none")
    ap.add_argument("--quick", action="store_true", help="four ways per small module")
    ap.add_argument("--worker", nargs=2, type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    todo = cases([b for b in args.big.split(",") if b], args.quick)
    work = Path(tempfile.mkdtemp(prefix="graph-identity-"))
    spec = work / "cases.json"
    spec.write_text(json.dumps(todo))
    env = {**os.environ, "HLOSCOPE_CACHE_MB": "0"}
    for label, root in (("old", args.old.resolve()), ("new", ROOT)):
        (work / label).mkdir()
        script = [sys.executable, str(Path(__file__).resolve()), "--old", str(args.old)]
        cmd = [*script, "--worker", str(spec), str(work / label)]
        subprocess.run(cmd, check=True, cwd=ROOT, env={**env, "PYTHONPATH": str(root)})
    differ = []
    for case, _ in todo:
        for ext in (".dot", ".out"):
            a, b = work / "old" / (case + ext), work / "new" / (case + ext)
            if (a.read_bytes() if a.exists() else None) != (b.read_bytes() if b.exists() else None):
                differ.append(case + ext)
    drawn = sum(1 for case, _ in todo if (work / "new" / f"{case}.dot").exists())
    print(f"{len(todo)} cases ({drawn} drawn), {len(differ)} differ; files in {work}")
    for d in differ:
        print(f"  differs: {d}")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
