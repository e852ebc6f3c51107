"""Browser fixtures: Debian's Chromium, driven headless from pytest by Playwright.

Playwright is only the driver here: the browser is the system's `chromium` (`make
browser` installs it), never one Playwright downloads. Tests skip, with the reason, when
either is missing. Reports are built once per session from the captured dumps in
tests/data.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from hloscope.inspection import BENCH_FILE, inspect_run
from hloscope.render.html import write_html
from tests.conftest import DATA
from tests.render.xss_probe import make_xss_run

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
VIEWPORT = {"width": 1440, "height": 900}


def chromium_executable() -> str | None:
    """The system Chromium: $HLOSCOPE_CHROMIUM, else `chromium` or `chromium-browser`."""
    configured = os.environ.get("HLOSCOPE_CHROMIUM")
    if configured:
        return shutil.which(configured)
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def browser_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One headless Chromium with a fresh profile (--user-data-dir) for the session."""
    exe = chromium_executable()
    if exe is None:
        pytest.skip(
            "Debian's chromium is not installed (`make browser` or apt-get install chromium)"
        )
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')"
    )
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_api.sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile),
            executable_path=exe,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport=VIEWPORT,
            offline=True,
        )
        try:
            yield context
        finally:
            context.close()


@dataclass
class ReportTab:
    """A browser tab with everything the page said: console messages, errors, dialogs."""

    page: Any
    console: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def open(self, path: Path) -> float:
        """Load a report from disk and wait until its script says it is ready.

        Returns:
            Seconds from navigation to ready, as the test sees it.
        """
        started = time.perf_counter()
        self.page.goto(path.as_uri())
        self.wait_for("document.documentElement.dataset.ready", timeout=60)
        return time.perf_counter() - started

    def wait_for(self, expression: str, timeout: float = 10) -> Any:
        """Poll a JS expression until it is truthy; return its value.

        `page.wait_for_function` polls by evaluating a string inside the page, which the
        report's Content-Security-Policy forbids (no 'unsafe-eval'); `page.evaluate`
        runs from outside, so poll with that.
        """
        deadline = time.monotonic() + timeout
        while True:
            value = self.page.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"still false after {timeout} s: {expression}")
            self.page.wait_for_timeout(20)

    def problems(self) -> list[str]:
        """Console errors and warnings, uncaught exceptions, dialogs, requests off disk."""
        out = [
            f"console.{kind}: {text}" for kind, text in self.console if kind in ("error", "warning")
        ]
        out += [f"uncaught: {e}" for e in self.errors]
        out += [f"dialog: {d}" for d in self.dialogs]
        out += [f"request: {r}" for r in self.requests if not r.startswith("file:")]
        return out


@pytest.fixture
def tab(browser_context: Any) -> Iterator[ReportTab]:
    """A fresh tab that records what the page logs; closed after the test."""
    page = browser_context.new_page()
    t = ReportTab(page)
    page.on("console", lambda m: t.console.append((m.type, m.text)))
    page.on("pageerror", lambda e: t.errors.append(str(e)))
    page.on("request", lambda r: t.requests.append(r.url))

    def dialog(d: Any) -> None:
        t.dialogs.append(d.message)
        d.dismiss()

    page.on("dialog", dialog)
    yield t
    page.close()


BENCH = {
    "schema_version": 1,
    "framework": "jax",
    "device": "CPU (2 cores)",
    "target": "samples/jax_mlp.py:bench",
    "baseline": "op-by-op",
    "notes": ["timed on a shared CPU"],
    "modes": [
        {"name": "op-by-op", "label": "op by op (jax.disable_jit)", "first_call_s": 0.9,
         "median_s": 0.0121, "p10_s": 0.0118, "p90_s": 0.0130, "repeats": 80, "speedup": None,
         "peak_memory_bytes": None, "memory_note": None, "error": None},
        {"name": "jit", "label": "jax.jit", "first_call_s": 0.21, "median_s": 0.000262,
         "p10_s": 0.000255, "p90_s": 0.000280, "repeats": 3800, "speedup": 46.2,
         "peak_memory_bytes": None, "memory_note": None, "error": None},
    ],
}  # fmt: skip


@pytest.fixture(scope="session")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """HTML reports of the captured samples (and of the XSS probe), by name."""
    root = tmp_path_factory.mktemp("reports")
    # jax_mlp with its profile, as a run folder with a manifest and bench results
    run_dir = root / "jax_mlp_run"
    shutil.copytree(DATA / "jax_mlp_profile", run_dir)
    manifest = {  # as `hloscope dump` writes it (hloscope.manifest.RunManifest)
        "source": "dump",
        "target": {"kind": "script", "name": "samples/jax_mlp.py", "args": []},
        "command": ["hloscope", "dump", "--profile", "samples/jax_mlp.py"],
        "started_at": "2026-12-02T18:30:00+00:00",
        "framework": "jax",
        "versions": {"jax": "0.10.2", "jaxlib": "0.10.2", "python": "3.11.7"},
        "platform": "cpu",
        "device": "CPU (2 cores)",
        "wall_time_s": 4.2,
        "exit_code": 0,
        "dump_dir": "hlo",
    }
    (run_dir / "run.json").write_text(json.dumps(manifest), encoding="utf-8")
    (run_dir / BENCH_FILE).write_text(json.dumps(BENCH), encoding="utf-8")
    sources = {
        "tf_dense_relu": DATA / "tf_dense_relu",
        "jax_mlp": run_dir,
        "jax_transformer_block": DATA / "jax_transformer_block",
        "xss": make_xss_run(root / "xss_run"),
    }
    out = {}
    for name, source in sources.items():
        out[name] = write_html(inspect_run(source), root / f"{name}.html")
    return out
