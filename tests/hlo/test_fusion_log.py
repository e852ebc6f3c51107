"""XLA's priority-fusion log: read as text proto, joined to the ops that run alone."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from hloscope.analysis.provenance import ALONE, FUSED
from hloscope.analysis.report import analyze_run
from hloscope.errors import HloParseError
from hloscope.hlo.fusion_log import find_log, parse_textproto, read_decisions
from hloscope.runs import load_run
from tests.conftest import DATA, GPU

LOG = DATA / "gpu_fusion_log" / "module_0004.jit_f.priority_fusion_dump.txt"


def test_textproto_keeps_every_step_kind() -> None:
    doc = parse_textproto('a { b: "x\\"y" c: 1.5 d: ENUM } a { e { f: 2 } } # note\n')
    assert doc == {"a": [{"b": ['x"y'], "c": [1.5], "d": ["ENUM"]}, {"e": [{"f": [2]}]}]}
    with pytest.raises(HloParseError, match="unclosed"):
        parse_textproto("a { b: 1")
    with pytest.raises(HloParseError, match="unbalanced"):
        parse_textproto("}")


def test_read_decisions() -> None:
    decisions = read_decisions(LOG)
    assert decisions.ineligible["custom-call.1"] == ("not fusible",)
    assert decisions.fused == (("tanh.1", "add.1", "loop_add_fusion"),)
    assert decisions.step_kinds == {"producer_ineligible": 2, "update_priority": 1, "fusion": 1}
    assert decisions.reasons(["nothing", "transpose.1"]) == [
        "the fusion would result in an overly large code duplication"
    ]


def test_log_is_found_beside_the_after_dump_and_joined_to_lone_ops() -> None:
    run = load_run(DATA / "gpu_fusion_log")
    (dump,) = run.modules
    assert dump.platform == "sm_90"
    assert find_log(dump.after) == LOG
    (module,) = analyze_run(run).modules
    assert module.provenance is not None
    by = {p.op.name: p for p in module.provenance.placements}
    assert by["jit(f)/transpose"].status == ALONE
    assert "overly large code duplication" in by["jit(f)/transpose"].evidence
    assert "not fusible" in by["jit(f)/dot_general"].evidence
    assert "library call" in by["jit(f)/dot_general"].evidence
    assert by["jit(f)/add"].status == FUSED and by["jit(f)/add"].evidence == ""


# --- current XLA's file names: `sm_9.0_gpu`, binary dumps (issue 25) --------------------

ARCHIVE = GPU / "maxtext_fsdp4_h100.nsys-jax.zip"


def _archive_after_names() -> list[str]:
    if not ARCHIVE.is_file():
        pytest.skip(f"real GPU data absent: {ARCHIVE} (see ../shared/gpu/README.md)")
    with zipfile.ZipFile(ARCHIVE) as z:
        return [Path(n).name for n in z.namelist() if "_after_optimizations." in n]


def test_the_log_is_found_beside_every_after_dump_of_the_maxtext_archive(tmp_path: Path) -> None:
    """The archive's after files are `module_0016.jit_train_step.sm_9.0_gpu_after_
    optimizations.hlo.pb.xz`: the log beside each is `module_0016.jit_train_step.
    priority_fusion_dump.txt`, as XLA writes it."""
    names = _archive_after_names()
    assert len(names) == 13 and all(".sm_9.0_gpu_after_optimizations.hlo.pb.xz" in n for n in names)
    for name in names:
        after = tmp_path / name
        after.write_bytes(b"")
        log = tmp_path / (".".join(name.split(".")[:2]) + ".priority_fusion_dump.txt")
        log.write_text("")
        assert find_log(after) == log
        # a text dump of the same module names its log alike
        text = tmp_path / name.replace(".hlo.pb.xz", ".txt")
        assert find_log(text) == log


def test_sm_9_0_names_join_the_reasons_as_sm_90_names_do(tmp_path: Path) -> None:
    for f in (DATA / "gpu_fusion_log").glob("module_*"):
        shutil.copy(f, tmp_path / f.name.replace("sm_90_gpu", "sm_9.0_gpu"))
    run = load_run(tmp_path)
    (dump,) = run.modules
    assert dump.after is not None and "sm_9.0_gpu" in dump.after.name
    (module,) = analyze_run(run).modules
    assert module.provenance is not None
    by = {p.op.name: p for p in module.provenance.placements}
    assert "overly large code duplication" in by["jit(f)/transpose"].evidence


def test_a_fusion_log_in_an_nsys_archive_is_joined(tmp_path: Path) -> None:
    """The MaxText archive with a priority-fusion log added beside jit_multiply's dump:
    unpacked with it, and its reason shown for the multiply that runs alone."""
    if not ARCHIVE.is_file():
        pytest.skip(f"real GPU data absent: {ARCHIVE} (see ../shared/gpu/README.md)")
    pytest.importorskip("google.protobuf")
    archive = tmp_path / "with_log.nsys-jax.zip"
    shutil.copy(ARCHIVE, archive)
    after = load_run(ARCHIVE).module("jit_multiply").load_after()
    assert after is not None
    (mul,) = [i.name for _, i in after.instructions() if i.opcode == "multiply"]
    log = f'fusion_steps {{ producer_ineligible {{ producer_name: "{mul}" reason: "a test reason" }} }}\n'
    with zipfile.ZipFile(archive, "a") as z:
        z.writestr("dump/module_0035.jit_multiply.priority_fusion_dump.txt", log)
    (module,) = analyze_run(load_run(archive), ["jit_multiply"]).modules
    assert module.provenance is not None
    assert any("a test reason" in p.evidence for p in module.provenance.placements)


def test_a_log_linked_out_of_the_dump_folder_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text('fusion_steps { producer_ineligible { producer_name: "x" reason: "leak" } }')
    dump = tmp_path / "dump"
    dump.mkdir()
    for f in (DATA / "gpu_fusion_log").glob("module_*"):
        if not f.name.endswith(".priority_fusion_dump.txt"):
            shutil.copy(f, dump / f.name)
    (dump / LOG.name).symlink_to(outside)
    (after,) = dump.glob("*after_optimizations.txt")
    assert find_log(after) is None
