"""Fuzz cases in a worker process under a time and a memory limit (issue 25).

The parent (`Campaign`) sends case numbers to a worker (`python -m tests.fuzz.harness
--worker`) that runs with `RLIMIT_AS` set (2 GB by default); the worker builds each
case from its seed, says it started, runs it, and reports what happened, how long it
took and its peak resident memory (the kernel's high-water mark, reset per case through
`/proc/self/clear_refs`). A case that does not answer within the time limit is a hang:
the worker is killed and started again. A worker that dies (the limit hit inside C code,
a crash) is a blow-up. Each case is named by `(reader, seed, index)` and replays alone.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import resource
import select
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT_S = 60.0
MEMORY_BYTES = 2 << 30
# Building a case (a bomb is gigabytes through a compressor, once per worker) is not
# the reader's time.
_MAKE_LIMIT_S = 600.0
# A worker is replaced after this many cases (its memory drifts up with each).
_CASES_PER_WORKER = 50


@dataclass
class Result:
    """One case: what it did (`read`, `rejected`, `traceback`, `hang`, `blow-up`,
    `contract`), seconds in the reader, peak resident bytes, input bytes on disk."""

    reader: str
    index: int
    kind: str
    seconds: float = 0.0
    peak_bytes: int = 0
    input_bytes: int = 0
    detail: str = ""


@dataclass
class Summary:
    """The figures of one reader's campaign."""

    reader: str
    counts: Counter[str] = field(default_factory=Counter)
    slowest: Result | None = None
    biggest: Result | None = None
    violations: list[Result] = field(default_factory=list)

    def add(self, r: Result) -> None:
        self.counts[r.kind] += 1
        if self.slowest is None or r.seconds > self.slowest.seconds:
            self.slowest = r
        if self.biggest is None or r.peak_bytes > self.biggest.peak_bytes:
            self.biggest = r
        if r.kind in ("traceback", "hang", "blow-up", "contract"):
            self.violations.append(r)

    @property
    def cases(self) -> int:
        return sum(self.counts.values())

    def line(self) -> str:
        c = self.counts
        slow = self.slowest
        big = self.biggest
        unbuilt = f" ({c['unbuilt']} could not be built)" if c["unbuilt"] else ""
        return (
            f"{self.reader}: {self.cases - c['unbuilt']} cases{unbuilt}, {c['read']} read, "
            f"{c['rejected']} clean errors, "
            f"violations: {c['traceback']} tracebacks, {c['hang']} hangs, "
            f"{c['blow-up']} blow-ups, {c['contract']} contract; "
            f"slowest {slow.seconds:.2f} s (case {slow.index})"
            * (slow is not None)
            + f"; peak {big.peak_bytes / 2**20:.0f} MiB (case {big.index})" * (big is not None)
        )


class Worker:
    """One worker process and the pipe to it."""

    def __init__(self, memory: int, tmp: Path) -> None:
        # FUZZ_CODE: another copy of the package to fuzz (the same generators on an
        # older hloscope, for a before/after figure).
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "TMPDIR": str(tmp),
            "HLOSCOPE_CACHE_DIR": str(tmp / "user-cache"),
            "PYTHONHASHSEED": "0",
        }
        # What the worker says on stderr goes to a file: a pipe nobody reads would fill
        # and block it, which would read as a hang.
        self.log = (tmp / f"worker-{time.monotonic_ns()}.log").open("w+")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.fuzz.harness", "--worker", "--memory", str(memory)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
            stderr=self.log,
            cwd=ROOT,
            env=env,
        )
        self.pending = b""

    def send(self, request: dict[str, object]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(request) + "\n").encode())
        self.proc.stdin.flush()

    def receive(self, timeout: float) -> dict[str, object] | None:
        """The next message, or None when none came in time or the worker died.

        Read from the pipe's descriptor with a buffer of our own: `select` on a buffered
        file object misses a second line already read into its buffer."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return json.loads(line)

    def stop(self) -> str:
        """Kill the worker; its stderr's end (what it said before dying)."""
        with contextlib.suppress(OSError):
            self.proc.kill()
        self.proc.wait()
        self.log.seek(0)
        err = self.log.read()
        self.log.close()
        return err[-2000:]


class Campaign:
    """Cases of one or more readers, each through a worker under the limits."""

    def __init__(self, *, limit: float = LIMIT_S, memory: int = MEMORY_BYTES) -> None:
        self.limit = limit
        self.memory = memory
        self.tmp = Path(tempfile.mkdtemp(prefix="hloscope-fuzz-"))
        self.worker: Worker | None = None
        self.served = 0

    def run(self, reader: str, seed: int, index: int) -> Result:
        """One case. A blow-up or a hang in a worker that ran other cases before is
        run again in a fresh one: memory the earlier cases left mapped (allocator
        caches) counts against the limit too, and only the fresh run says whether the
        case itself breaks it."""
        if self.worker is not None and self.served >= _CASES_PER_WORKER:
            self.worker.stop()
            self.worker = None
        fresh = self.worker is None
        result = self._run(reader, seed, index)
        if result.kind in ("blow-up", "hang") and not fresh:
            if self.worker is not None:
                self.worker.stop()
                self.worker = None
            result = self._run(reader, seed, index)
        return result

    def _run(self, reader: str, seed: int, index: int) -> Result:
        if self.worker is None:
            self.worker = Worker(self.memory, self.tmp)
            self.served = 0
        self.served += 1
        w = self.worker
        w.send({"reader": reader, "seed": seed, "index": index})
        started = w.receive(_MAKE_LIMIT_S)
        if started is not None and "unbuilt" in started:
            return Result(reader, index, "unbuilt", detail=str(started["unbuilt"]))
        if started is None or "started" not in started:
            # The generator's failure, not the reader's: counted apart.
            lost = self._lost(reader, index, "the worker died while building the case", None)
            return Result(reader, index, "unbuilt", detail=lost.detail)
        t0 = time.monotonic()
        done = w.receive(self.limit)
        if done is None:
            seconds = time.monotonic() - t0
            if seconds >= self.limit:
                self.worker = None
                w.stop()
                return Result(reader, index, "hang", seconds, 0, int(started["started"]))  # type: ignore[call-overload]
            return self._lost(reader, index, "the worker died", None)
        return Result(
            reader,
            index,
            str(done["kind"]),
            float(done["seconds"]),  # type: ignore[arg-type]
            int(done["peak"]),  # type: ignore[call-overload]
            int(started["started"]),  # type: ignore[call-overload]
            str(done["detail"]),
        )

    def _lost(self, reader: str, index: int, what: str, message: object) -> Result:
        assert self.worker is not None
        err = self.worker.stop()
        code = self.worker.proc.returncode
        self.worker = None
        return Result(reader, index, "blow-up", 0.0, self.memory, 0, f"{what} (exit {code}): {err}")

    def close(self) -> None:
        if self.worker is not None:
            self.worker.stop()
            self.worker = None
        shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> Campaign:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def campaign(readers: Iterable[str], cases: int, seed: int, **limits: float) -> Iterator[Result]:
    """Run `cases` cases of each reader; yield each result as it comes."""
    with Campaign(**limits) as c:  # type: ignore[arg-type]
        for reader in readers:
            for i in range(cases):
                yield c.run(reader, seed, i)


# --------------------------------------------------------------------------------------
# The worker


def _peak_bytes() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> None:
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _size(path: Path) -> int:
    """Bytes of the regular files of a case (links not followed, no recursion)."""
    if not path.is_dir():
        return path.lstat().st_size if path.is_file() and not path.is_symlink() else 0
    total = 0
    stack = [path]
    while stack:
        with contextlib.suppress(OSError), os.scandir(stack.pop()) as entries:
            for e in entries:
                if e.is_dir(follow_symlinks=False):
                    stack.append(Path(e.path))
                elif e.is_file(follow_symlinks=False):
                    total += e.stat(follow_symlinks=False).st_size
    return total


def worker_main(memory: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    code = os.environ.get("FUZZ_CODE")
    if code:  # before the working directory, which `python -m` puts first
        sys.path.insert(0, code)
    from tests.fuzz.readers import READERS, run_case

    out = sys.stdout
    sys.stdout = sys.stderr  # what a reader prints must not mix with the answers
    base = Path(tempfile.gettempdir())
    for line in sys.stdin:
        request = json.loads(line)
        reader = READERS[request["reader"]]
        rng = random.Random(f"{reader.name}:{request['seed']}:{request['index']}")
        folder = Path(tempfile.mkdtemp(prefix="case-", dir=base))
        try:
            try:
                path = reader.make(rng, folder)
            except Exception:  # the generator's own failure: said, not fatal
                out.write(json.dumps({"unbuilt": traceback.format_exc(limit=8)}) + "\n")
                out.flush()
                continue
            out.write(json.dumps({"started": _size(path)}) + "\n")
            out.flush()
            _reset_peak()
            t0 = time.perf_counter()
            outcome = run_case(reader, path)
            seconds = time.perf_counter() - t0
            peak = _peak_bytes()
        finally:
            _remove(folder)
        out.write(
            json.dumps(
                {"kind": outcome.kind, "seconds": seconds, "peak": peak, "detail": outcome.detail}
            )
            + "\n"
        )
        out.flush()


def _remove(folder: Path) -> None:
    """Remove a case folder, FIFOs, links and 1,200-deep nests included."""
    with contextlib.suppress(OSError):
        subprocess.run(["rm", "-rf", str(folder)], check=False, timeout=120)


def replay(reader_name: str, seed: int, index: int, keep: Path | None) -> None:
    """Build one case and run it in this process, printing what it did (to debug)."""
    from tests.fuzz.readers import READERS, run_case

    reader = READERS[reader_name]
    folder = Path(tempfile.mkdtemp(prefix="replay-")) if keep is None else keep
    folder.mkdir(parents=True, exist_ok=True)
    path = reader.make(random.Random(f"{reader.name}:{seed}:{index}"), folder)
    t0 = time.perf_counter()
    outcome = run_case(reader, path)
    print(f"{outcome.kind} in {time.perf_counter() - t0:.2f} s: {path}\n{outcome.detail}")
    if keep is None:
        _remove(folder)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--memory", type=int, default=MEMORY_BYTES)
    ap.add_argument("--replay", nargs=3, metavar=("READER", "SEED", "INDEX"))
    ap.add_argument("--keep", type=Path, help="with --replay: write the case here and keep it")
    a = ap.parse_args()
    if a.worker:
        worker_main(a.memory)
    elif a.replay:
        replay(a.replay[0], int(a.replay[1]), int(a.replay[2]), a.keep)
