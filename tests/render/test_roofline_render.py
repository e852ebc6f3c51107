"""`report` shows cost, planned memory and the roofline (terminal and JSON), and says
which flag writes XLA's memory files when a dump lacks them."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from hloscope.cli import app
from tests.conftest import DATA

ENV = {"COLUMNS": "250", "NO_COLOR": "1", "TERM": "dumb"}


def _report(*args: str) -> str:
    result = CliRunner().invoke(app, ["report", *args], env=ENV)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_json_memory_equals_xla_reports_and_cost_is_there() -> None:
    doc = json.loads(_report(str(DATA / "memory_reports"), "--json"))
    assert len(doc["modules"]) == 4  # ResNet-50 has its memory files only
    for m in doc["modules"]:
        (report,) = (DATA / "memory_reports").glob(f"*{m['name']}*memory-usage-report.txt")
        total = int(re.search(r"^Total bytes(?: used)?:\s+(\d+)", report.read_text(), re.M)[1])  # type: ignore[index]
        assert m["memory"]["peak_bytes"] == total
        assert sum(m["memory"]["by_kind"].values()) == total
        assert m["cost"]["flops"] > 0 and m["cost"]["bytes_read"] > 0
        assert len(m["cost"]["kernels"]) == m["after"]["kernels"]
        assert m["roofline"] is None  # not profiled


def test_missing_memory_files_name_the_flag() -> None:
    doc = json.loads(_report(str(DATA / "jax_mlp"), "--json"))
    missing = {m["memory"].get("missing") for m in doc["modules"]}
    assert len(missing) == 1 and "--xla_dump_hlo_as_text" in missing.pop()  # type: ignore[operator]
    text = _report(str(DATA / "jax_mlp"))
    assert "memory: not in the dump" in text and "--xla_dump_hlo_as_text" in text


def test_terminal_shows_cost_and_planned_peak() -> None:
    text = _report(str(DATA / "memory_reports"), "--module", "jit_block")
    assert "cost per execution:" in text and "fusion kept" in text
    assert "memory planned by XLA: peak 1.4 MiB" in text  # 1512012 bytes
