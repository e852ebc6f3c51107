"""What `hloscope dump` shows while the script runs, and how it ended.

`DumpProgress` hands `run_dump` the sinks for the child's output; on a terminal it keeps
a status line (elapsed time, modules compiled so far) under the streamed output.
`outcome` turns a `DumpResult` into rich renderables. The module table printed after the
run is the report's (`hloscope.render.text.modules_table`).
"""

from __future__ import annotations

import codecs
import re
import sys
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from hloscope.capture.child import Sink, std_sink
from hloscope.capture.hints import no_xla_hint
from hloscope.capture.run import DumpPlan, DumpResult, count_compiled
from hloscope.manifest import RunManifest
from hloscope.render.format import counted

__all__ = ["DumpProgress", "is_framework_noise", "outcome"]

# absl/glog INFO records (`I0000 00:00:1796285622.667975    3752 port.cc:153] ...`).
_ABSL_INFO = re.compile(r"^I\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ [\w.\-]+:\d+\] ")
_NOISE = (
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    # the second line of cpu_feature_guard's INFO record
    "To enable the following instructions:",
)


def is_framework_noise(line: str) -> bool:
    """Whether a stderr line is TensorFlow/XLA/absl INFO chatter (oneDNN, cpu_feature_guard,
    XLA service, profiler sessions) rather than the script's output, a warning or an
    error. Warnings (`W...`) and errors (`E...`, `F...`) are never noise."""
    return bool(_ABSL_INFO.match(line)) or line.startswith(_NOISE)


class DumpProgress:
    """Sinks for the child's output, with a live status line when stderr is a terminal.

    Use as a context manager around `run_dump(plan, out=p.out, err=p.err,
    on_interrupt=p.interrupting)`. Off a terminal, stdout is passed through byte for
    byte and nothing else is shown. The child's stderr goes on line by line, without
    the frameworks' INFO chatter (`is_framework_noise`) unless `verbose`; `stderr.log`
    keeps every line either way (`run_dump` writes it).

    Args:
        plan: The dump being run (for its name and dump folder).
        console: The stderr console (default: a new one on stderr).
        clock: Monotonic seconds, for the elapsed time.
        verbose: Show every stderr line, INFO chatter included.
    """

    def __init__(
        self,
        plan: DumpPlan,
        *,
        console: Console | None = None,
        clock: Callable[[], float] = time.monotonic,
        verbose: bool = False,
    ) -> None:
        self.plan = plan
        self.verbose = verbose
        self.hidden = 0  # stderr lines left out as framework chatter
        self._err_sink: Sink | None = None
        self.console = console or Console(stderr=True, highlight=False)
        self.clock = clock
        self.live: Live | None = None
        self._start = clock()
        self._stopping = False
        self._lock = threading.Lock()
        self._spinner = Spinner("dots", style="cyan")
        self._partial: dict[str, str] = {"out": "", "err": ""}
        self._decoders = {
            k: codecs.getincrementaldecoder("utf-8")("replace") for k in ("out", "err")
        }
        self._stdout_is_terminal = _is_terminal(sys.stdout)

    @property
    def is_live(self) -> bool:
        """Whether the status line is shown."""
        return self.live is not None

    def __enter__(self) -> DumpProgress:
        self._start = self.clock()
        if self.console.is_terminal:
            self.live = Live(
                self,
                console=self.console,
                transient=True,
                refresh_per_second=4,
                # the sinks route the child's output themselves; sys.stdout stays as is
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self.live.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.live is not None:
            for stream in ("out", "err"):
                self._emit(stream, "", final=True)
            self.live.stop()
            self.live = None
        else:
            self._flush_err()

    def status_text(self) -> str:
        """`running x.py · 12.3 s · 2 modules compiled`."""
        elapsed = self.clock() - self._start
        n = count_compiled(self.plan.dump_dir)
        verb = "stopping" if self._stopping else "running"
        text = (
            f"{verb} {self.plan.display_name} · {elapsed:.1f} s · {counted(n, 'module')} compiled"
        )
        return text + (" (Ctrl-C again to force)" if self._stopping else "")

    def __rich__(self) -> RenderableType:
        self._spinner.update(text=Text(self.status_text(), style="dim"))
        return self._spinner

    def interrupting(self) -> None:
        """Called when Ctrl-C starts stopping the child."""
        self._stopping = True
        if self.live is None:
            self.console.print(
                f"hloscope: stopping {self.plan.display_name} (Ctrl-C again to force)",
                style="yellow",
                soft_wrap=True,
                markup=False,
            )

    @property
    def out(self) -> Sink:
        """The sink for the child's stdout."""
        if self.live is None or not self._stdout_is_terminal:
            return std_sink(sys.stdout)
        return lambda data: self._write("out", data)

    @property
    def err(self) -> Sink:
        """The sink for the child's stderr: whole lines, framework INFO chatter left out
        unless `verbose`."""
        if self.live is None:
            if self.verbose:
                return std_sink(sys.stderr)
            plain = std_sink(sys.stderr)
            return lambda data: self._filter_err(data, plain)
        return lambda data: self._write("err", data)

    def _filter_err(self, data: bytes, sink: Sink) -> None:
        with self._lock:
            text = self._partial["err"] + self._decoders["err"].decode(data)
            *lines, self._partial["err"] = text.split("\n")
            kept = [line for line in lines if not self._hide("err", line)]
            if kept:
                sink(("\n".join(kept) + "\n").encode())
        self._err_sink = sink

    def _flush_err(self) -> None:
        rest, self._partial["err"] = self._partial["err"], ""
        if rest and self._err_sink is not None and not self._hide("err", rest):
            self._err_sink(rest.encode())

    def _hide(self, stream: str, line: str) -> bool:
        if stream != "err" or self.verbose or not is_framework_noise(line):
            return False
        self.hidden += 1
        return True

    def _write(self, stream: str, data: bytes) -> None:
        self._emit(stream, self._decoders[stream].decode(data))

    def _emit(self, stream: str, text: str, *, final: bool = False) -> None:
        # Whole lines go above the status line; a partial line waits for its end.
        with self._lock:
            *lines, rest = (self._partial[stream] + text).split("\n")
            if final and rest:
                lines.append(rest)
                rest = ""
            self._partial[stream] = rest
            for line in lines:
                if self._hide(stream, line):
                    continue
                self.console.print(
                    Text.from_ansi(line.rsplit("\r", 1)[-1]),
                    soft_wrap=True,
                    highlight=False,
                    markup=False,
                )


def outcome(result: DumpResult) -> RenderableType:
    """The lines after the table: how the script ended, where the run is, what next."""
    plan, run = result.plan, result.run
    n = len(run.modules)
    modules = counted(n, "module")
    where = _rel(plan.run_dir)
    parts: list[RenderableType] = []
    if result.status == "ok":
        platform = run.manifest.platform or "?"
        framework = _framework(run.manifest)
        parts.append(
            Text.assemble(
                ("✓ ", "green"),
                f"{plan.display_name} ran in {result.wall_time_s:.1f} s; "
                f"{modules} compiled for {platform}{framework}.",
            )
        )
    elif result.status == "no-modules":
        hint = "XLA compiled nothing. " + no_xla_hint(
            run.manifest.versions, run.manifest.devices, run.manifest.framework_env
        )
        if plan.module_re:
            hint += f" (--module {plan.module_re!r} also limits which modules are dumped.)"
        parts.append(Text(f"hloscope: {plan.display_name} ran, but {hint}", style="yellow"))
    elif result.status == "interrupted":
        parts.append(
            Text(
                f"hloscope: interrupted {plan.display_name} after "
                f"{result.wall_time_s:.1f} s; kept the {modules} dumped so far.",
                style="yellow",
            )
        )
    else:
        parts.append(
            Text(
                f"hloscope: {plan.display_name} failed with exit code {result.exit_code}"
                + (":" if result.traceback_tail else "."),
                style="bold red",
            )
        )
        if result.traceback_tail:
            parts.append(Text("\n".join("    " + s for s in result.traceback_tail)))
    if result.xla_errors and result.status != "ok":
        parts.append(Text("XLA could not compile:", style="bold red"))
        parts.append(Text("\n".join("  " + s for s in result.xla_errors), style="red"))
    parts.append(
        Text(
            f"run saved in {where}/ (dump/, stdout.log, stderr.log, run.json)\n"
            f"re-read it with: hloscope report {where}",
            style="dim",
        )
    )
    return Group(*parts)


def _framework(manifest: RunManifest) -> str:
    if not manifest.frameworks:
        return ""
    versions = manifest.versions
    named = [f"{fw} {versions.get(fw.value) or ''}".strip() for fw in manifest.frameworks]
    return f" ({', '.join(named)})"


def _rel(path: Any) -> str:
    from pathlib import Path

    p = Path(path)
    try:
        return str(p.relative_to(Path.cwd()))
    except ValueError:
        return str(p)


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
