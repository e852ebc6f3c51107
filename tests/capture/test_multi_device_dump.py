"""`hloscope dump --profile` of samples/jax_four_devices.py, end to end: four CPU devices
that the script asks for itself, each module counted per device (no false launch
mismatch), its devices and collectives read from the HLO, the environment recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hloscope.cli import app
from tests.capture.test_dump import SAMPLES, _needs

SHARDED = ("jit_dense", "jit_row_parallel_partial", "jit__fun")


@pytest.mark.jax
@pytest.mark.slow
def test_four_devices_are_counted_per_device(tmp_path: Path) -> None:
    _needs("jax")
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        ["dump", "--profile", str(SAMPLES / "jax_four_devices.py"), "-o", str(out)],
        env={"XLA_FLAGS": None, "JAX_PLATFORMS": None},
    )
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "run.json").read_text())
    assert "--xla_force_host_platform_device_count=4" in manifest["framework_env"]["XLA_FLAGS"]
    assert len([d for d in manifest["devices"] if d["framework"] == "jax"]) == 4
    report = CliRunner().invoke(app, ["report", str(out), "--json", "--all"])
    assert report.exit_code == 0, report.output
    modules = {m["name"]: m for m in json.loads(report.stdout)["modules"]}
    for name in SHARDED:
        m = modules[name]
        timing = m["timing"]
        assert timing["device_count"] == 4 and len(timing["per_device"]) == 4, name
        assert timing["launch_mismatch"] is False, name
        assert timing["launches_per_execution"] == m["after"]["launches"], name
        assert m["parallel"]["partitions"] == 4, name
        for k in timing["kernels"]:
            assert k["device_count"] == 4 and k["calls"] == timing["executions"], (name, k)
    psums = [c for n in SHARDED[1:] for c in modules[n]["parallel"]["collectives"]]
    assert [(c["kind"], c["group_size"]) for c in psums] == [("all-reduce", 4)] * 2
