"""Memory and time at scale (issues 14 and 27): a generated before/after pair of about
`--mb` MB each (benchmarks/big_module.py: one huge ENTRY computation before, one kLoop
fusion per 12 ops after), through the real CLI, each command in its own process.

`parse` and `report` of one side read a folder holding that file only; `graph` of the
before file reads the pair (a file is loaded with its partner, whose kernels colour the
ops), `graph` of the after file reads that file only (the kernel graph needs nothing of
the before side), and `report` of the folder reads both, as do `graph --side-by-side` of
the before file and `ops`, `check` and `report --html` of the folder; `diff` of the
folder with itself reads them once, and `diff` of the folder with its twin (another run
folder of the same files, hard links) reads them twice. Every ratio is against the text
that command reads (for `graph`, also against the one file it draws), and the size of
what it writes against the same text. Prints, per command: wall seconds, the CPU seconds
of its processes (and that over the machine's cores: the least wall time any split of
that work across them could take), peak resident memory (`wait4`'s ru_maxrss), and the
peak over the text it reads, raw and less the interpreter's baseline (Python with
hloscope, networkx and rich imported, measured the same way), each against issue 27's
goals: at most 15 s and at most 8x the text read. First it prints how fast the machine
is now (it is shared, and its speed varies by half from day to day): the time XLA's own
C++ parser (`jaxlib`) takes to read the before file, against its time in the run of the
README's fast-day figures. A command that reads a big module in two processes
(`hloscope.analysis.pool.beside`, `elsewhere`) is charged the most its processes held at
once, their resident sizes summed (pages a forked worker still shares with its parent
count twice).

    python benchmarks/scale_bench.py [--mb 105] [--dir /tmp/hloscope-scale] [--only graph]

Figures (2-core shared VM, `--mb 105`: before 106.9 MB, after 153.0 MB), issue 14's
slimmer model then, and issue 27's record parser and budgeted diagrams now: see the
README's "Measured here" table for the latest run.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import NamedTuple

# Each command computed, never printed back from the user's output cache
# (hloscope.cli.output_cache).
os.environ["HLOSCOPE_CACHE_MB"] = "0"

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "import hloscope.cli, hloscope.hlo.parser, networkx, rich.console"


class Measured(NamedTuple):
    """One command, run once."""

    seconds: float
    """Wall time."""
    peak: int
    """Peak resident memory in bytes, of the process and the workers it forks: the larger
    of its own peak (`wait4`'s ru_maxrss) and the most the process tree held at once
    (summed over its processes, sampled every 20 ms from /proc)."""
    cpu: float
    """CPU seconds, user and system, of the process and of every process it waited for
    (its workers, `dot`): `wait4`'s rusage counts those."""


def measure(argv: list[str], out: Path | None = None) -> Measured:
    """Run one command (in this checkout) and measure it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    with open(out or os.devnull, "wb") as sink:
        # in this checkout: `python -m` puts the working folder first on the path, so
        # another checkout's bench run from here would measure this one's code
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.PIPE, env=env, cwd=ROOT)
        tree = _TreePeak(proc.pid)
        assert proc.stderr is not None
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        tree.stop()
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {err.decode()[-2000:]}")
    cpu = usage.ru_utime + usage.ru_stime
    return Measured(seconds, max(usage.ru_maxrss * 1024, tree.peak), cpu)


class _TreePeak(threading.Thread):
    """The most resident memory a process and its descendants held at once."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = 0
        self._done = threading.Event()
        self.start()

    def run(self) -> None:
        while not self._done.wait(0.02):
            self.peak = max(self.peak, _tree_rss(self.pid))

    def stop(self) -> None:
        self._done.set()
        self.join()


def _tree_rss(root: int) -> int:
    """The resident memory of `root` and its descendants now, found through each
    process's `children` lists (a few reads, not a scan of every process: the sampler
    shares the cores with what it measures).

    A child that shares its parent's memory is counted once: one that `subprocess` has
    started with `vfork` and that has not yet run its program (`dot`). Summed, it would
    show a 1 GB process as 2 GB for the moment a sample can catch it in.
    """
    total, todo = 0, [(root, 0, "")]
    while todo:
        pid, parent, parent_size = todo.pop()
        try:
            size, resident = _statm(pid)
            if size == parent_size:
                if _same_memory(pid, parent):  # counted with its parent
                    continue
                size, resident = _statm(pid)  # it may have run its program meanwhile
            total += int(resident) * PAGE
            for task in os.scandir(f"/proc/{pid}/task"):
                with open(f"{task.path}/children") as f:
                    todo.extend((int(child), pid, size) for child in f.read().split())
        except OSError:  # gone meanwhile
            continue
    return total


_KCMP = {"x86_64": 312, "aarch64": 272}.get(platform.machine())  # kcmp(2)'s number
_KCMP_VM = 1
_LIBC = ctypes.CDLL(None)


def _statm(pid: int) -> tuple[str, str]:
    """A process's size and resident size, in pages (`/proc/PID/statm`)."""
    with open(f"/proc/{pid}/statm") as f:
        size, resident = f.read().split()[:2]
    return size, resident


def _same_memory(a: int, b: int) -> bool:
    """Whether processes `a` and `b` share one address space (`kcmp(2)`; False where
    it cannot be asked)."""
    if _KCMP is None:
        return False
    return bool(_LIBC.syscall(_KCMP, a, b, _KCMP_VM, 0, 0) == 0)


PAGE = os.sysconf("SC_PAGE_SIZE")


def main() -> None:
    """Generate the pair (cached) and measure each command."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=105.0, help="each file's size, about")
    ap.add_argument(
        "--dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "hloscope-scale",
        help="where the pair is generated and kept, in a folder of its size (DIR/105mb)",
    )
    ap.add_argument("--only", default="", help="comma-separated parts of the labels to run")
    args = ap.parse_args()
    folder = args.dir.resolve() / f"{args.mb:g}mb"  # the CLI runs in this checkout
    before = folder / "module_0001.jit_train.before_optimizations.txt"
    after = folder / "module_0001.jit_train.cpu_after_optimizations.txt"
    if not after.exists():  # in a process of its own: a child's ru_maxrss can start
        # from the parent's resident size
        gen = Path(__file__).with_name("big_module.py")
        subprocess.run([sys.executable, str(gen), str(folder), "--mb", str(args.mb)], check=True)
    # A single file is read with its partner from the same folder: each side alone
    # lives in a folder of its own (hard links, no copy).
    alone = {}
    for side in (before, after):
        lone = folder / side.name.split(".")[-2] / side.name
        lone.parent.mkdir(exist_ok=True)
        if not lone.exists():
            os.link(side, lone)
        alone[side] = lone
    # Another run of the same program for `diff` (its files hard links: no copy)
    twin = folder / "twin"
    twin.mkdir(exist_ok=True)
    for side in (before, after):
        if not (twin / side.name).exists():
            os.link(side, twin / side.name)
    sizes = {p: p.stat().st_size for p in (before, after)}
    print(f"before {sizes[before] / 1e6:.1f} MB, after {sizes[after] / 1e6:.1f} MB", flush=True)
    py = [sys.executable]
    base = measure([*py, "-c", BASELINE]).peak
    print(f"baseline (interpreter + imports): {base / 1e6:.0f} MB", flush=True)
    print(_yardstick(before, args.mb == 105.0), flush=True)
    cli = [*py, "-m", "hloscope"]
    json_out = folder / "report.json"
    page = folder / "report.html"
    pair = [before, after]
    runs = [
        ("parse before", [*cli, "parse", str(before)], [before], None),
        ("report before (one side)", [*cli, "report", str(alone[before])], [before], None),
        ("graph before", [*cli, "graph", str(before), "-o", str(folder / "b.svg")], pair, before),
        ("graph after", [*cli, "graph", str(after), "-o", str(folder / "g.svg")], [after], after),
        ("graph side by side", [*cli, "graph", str(before), "--side-by-side", "-o", str(folder / "s.svg")], pair, before),
        ("parse after", [*cli, "parse", str(after)], [after], None),
        ("report after (one side)", [*cli, "report", str(alone[after])], [after], None),
        ("report pair", [*cli, "report", str(folder)], pair, None),
        ("report pair --json", [*cli, "report", str(folder), "--json"], pair, None),
        ("ops pair", [*cli, "ops", str(folder)], pair, None),
        ("ops pair --json", [*cli, "ops", str(folder), "--json"], pair, None),
        ("check pair", [*cli, "check", str(folder), "--max-kernels", "1000000"], pair, None),
        ("report pair --html", [*cli, "report", str(folder), "--html", str(page)], pair, None),
        ("diff pair pair", [*cli, "diff", str(folder), str(folder)], pair, None),
        ("diff pair twin", [*cli, "diff", str(folder), str(twin)], pair * 2, None),
    ]  # fmt: skip
    wanted = [w for w in args.only.split(",") if w]
    for label, argv, inputs, drawn in runs:
        if wanted and not any(w in label for w in wanted):
            continue
        out = json_out if "--json" in argv else folder / "out.txt"
        seconds, peak, cpu = measure(argv, out)
        out = page if "--html" in argv else out
        text = sum(sizes[p] for p in inputs)
        ratio = peak / text
        # no schedule of that much work on the machine's cores ends sooner
        least = cpu / CORES
        line = (
            f"{label:26s} {seconds:6.1f} s ({_goal(seconds <= SECONDS)}; CPU {cpu:5.1f} s, "
            f"at least {least:4.1f} s on {CORES} cores)  peak {peak / 1e6:6.0f} MB"
            f"  {ratio:5.1f}x the text read ({_goal(ratio <= RATIO)}; "
            f"{(peak - base) / text:4.1f}x less baseline)"
        )
        if drawn is not None:
            line += f"  {peak / sizes[drawn]:5.1f}x the file drawn"
        if out is not None:
            size = out.stat().st_size
            line += f"  output {size / 1e6:.1f} MB = {size / text:.2f}x text"
        print(line, flush=True)


SECONDS = 15.0  # issue 27: any command on the 107 MB module
CORES = len(os.sched_getaffinity(0))
RATIO = 8.0  # issue 27: peak memory over the text the command reads


# XLA's own parser on the before file, timed inside its process, for the speed of the
# machine now: this shared machine's speed varies by half from day to day.
_XLA_PARSE = """
import sys, time
from jaxlib import _hlo
text = open(sys.argv[1]).read()
started = time.perf_counter()
_hlo.hlo_module_from_text(text)
print(time.perf_counter() - started)
"""
XLA_PARSE_THEN = 3.8  # seconds, `--mb 105`, in the run of the README's fast-day figures (987e96b)


def _yardstick(before: Path, default_size: bool) -> str:
    """How fast this machine is now: XLA's C++ parser (`jaxlib`) on the before file (a
    rough yardstick, not a correction), against the README's fast-day run for the default
    size."""
    found = subprocess.run(
        [sys.executable, "-c", _XLA_PARSE, str(before)], capture_output=True, text=True
    )
    if found.returncode != 0:
        return "machine speed: not measured (XLA's parser, from jaxlib, did not run)"
    seconds = float(found.stdout.split()[-1])
    line = f"machine speed: XLA's own parser read the before file in {seconds:.1f} s"
    if default_size:
        line += f" ({seconds / XLA_PARSE_THEN:.2f}x its {XLA_PARSE_THEN} s in the README's fast-day run)"
    return line


def _goal(met: bool) -> str:
    return "goal met" if met else "over goal"


if __name__ == "__main__":
    main()
