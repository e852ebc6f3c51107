"""The nsys-jax reader: on small NVTX traces written here, and on the real MaxText archive
in ../shared/gpu checked against maxtext_truth.json (computed from the trace alone)."""

from __future__ import annotations

import json
import lzma
import statistics
import sys
import zipfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from hloscope.errors import MissingDependencyError, ProfileReadError
from hloscope.timing.nsys import (
    NsysArchive,
    is_nsys_archive,
    module_timing,
    nsys_timings,
    read_nsys,
)
from tests.conftest import GPU
from tests.timing.helpers import needs

ARCHIVE = GPU / "maxtext_fsdp4_h100.nsys-jax.zip"
TRUTH = GPU / "maxtext_truth.json"


# --------------------------------------------------------------------------------------
# Small traces written here


class _Trace:
    """Rows of an NVTX projection trace, in nsys-jax's column layout."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.next_id = 1

    def add(
        self,
        name: str,
        start: int,
        duration: int,
        *,
        parent: int | None = None,
        tid: int = 10,
        gpu_ops: int = 1,
    ) -> int:
        rid = self.next_id
        self.next_id += 1
        self.rows.append(
            {
                "Name": name,
                "Projected Start": start,
                "Projected Duration": duration,
                "Orig Start": float(start),
                "PID": 1,
                "TID": tid,
                "NumGPUOps": gpu_ops,
                "RangeId": float(rid),
                "ParentId": None if parent is None else float(parent),
            }
        )
        return rid

    def module(self, name: str, start: int, duration: int, *, tid: int = 10, ops: int = 1) -> int:
        return self.add(
            f"TSL:XlaModule:#hlo_module={name},program_id=7#", start, duration, tid=tid, gpu_ops=ops
        )

    def thunk(self, op: str, parent: int, start: int, duration: int, **kw: Any) -> int:
        return self.add(
            f"TSL:Thunk:#name=a/b[x=(1, 2)],hlo_op={op}#", start, duration, parent=parent, **kw
        )

    def write(self, folder: Path) -> Path:
        pa = pytest.importorskip("pyarrow")
        pq = pytest.importorskip("pyarrow.parquet")
        target = folder / "nvtx_gpu_proj_trace" / "trace.parquet"
        target.parent.mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(self.rows), target)
        return folder


def _two_executions(t: _Trace, tid: int = 10) -> None:
    """Two executions of `m` on a thread: a gemm (2 GPU ops) inside a custom fusion that
    launches one more op itself, and an async collective overlapping a fusion."""
    for base in (0, 1000):
        m = t.module("m", base, 100, tid=tid, ops=5)
        outer = t.thunk("custom-call.1", m, base, 30, tid=tid, gpu_ops=3)
        t.thunk("custom-call.1", outer, base + 5, 20, tid=tid, gpu_ops=2)
        t.thunk("all-gather-start", m, base + 40, 50, tid=tid)
        t.thunk("fusion.2", m, base + 50, 20, tid=tid)


def test_small_trace_executions_thunks_and_overlap(tmp_path: Path) -> None:
    needs("pyarrow")
    t = _Trace()
    _two_executions(t)
    p = nsys_timings(t.write(tmp_path))
    m = p.modules["m"]
    assert (m.executions, m.skipped) == (1, 1)
    assert m.source == p.source == "nsys"
    # Leaf thunks only: the enclosing custom-call range is not a second call.
    assert m.launches_by_execution == (3,)
    assert m.device_ops_by_execution == (5,)
    assert {k.name: (k.calls, k.device_ops) for k in m.kernels} == {
        "custom-call.1": (1, 2),
        "all-gather-start": (1, 1),
        "fusion.2": (1, 1),
    }
    # 20 + 50 + 20 summed, but the collective overlaps the fusion: busy is 20 + 50.
    assert m.kernel_us == pytest.approx(0.090)
    assert m.busy_us == pytest.approx(0.070)
    assert m.unattributed_us == pytest.approx(0.100 - 0.070)
    assert any("overlap" in line for line in p.problems)
    assert any(
        "1 GPU operations per execution launched by thunks that enclose" in x for x in p.problems
    )


def test_skip_first_is_per_thread(tmp_path: Path) -> None:
    needs("pyarrow")
    t = _Trace()
    _two_executions(t, tid=10)
    _two_executions(t, tid=11)
    archive = read_nsys(t.write(tmp_path))
    # per thread (one GPU each): 1 steady execution on each of 2, then 2 on each
    steady = module_timing(archive.executions, skip_first=1)
    assert (steady.executions, steady.device_count, steady.skipped) == (1, 2, 1)
    assert [(d.device, d.executions) for d in steady.per_device] == [
        ("pid 1 tid 10", 1),
        ("pid 1 tid 11", 1),
    ]
    assert module_timing(archive.executions, skip_first=0).executions == 2
    # every thread ran it only as warm-up: timed from those runs, marked cold
    cold = module_timing(archive.executions, skip_first=2)
    assert (cold.executions, cold.skipped, cold.cold, cold.device_count) == (2, 0, True, 2)


def test_join_maps_ops_to_kernels_and_keeps_the_unmapped(tmp_path: Path) -> None:
    needs("pyarrow")
    t = _Trace()
    _two_executions(t)
    archive = read_nsys(t.write(tmp_path))
    plain = module_timing(archive.executions)
    joined = module_timing(
        archive.executions,
        kernel_of={"all-gather-start": "ag-pair", "custom-call.1": "custom-fusion.1"},
    )
    names = {k.name: k for k in joined.kernels}
    assert set(names) == {"ag-pair", "custom-fusion.1", "fusion.2"}
    assert names["ag-pair"].hlo_ops == ("all-gather-start",)
    assert joined.unknown_ops == ("fusion.2",)
    assert joined.kernel_us == plain.kernel_us
    assert sum(k.calls for k in joined.kernels) == sum(k.calls for k in plain.kernels)


def test_two_ops_joined_into_one_kernel(tmp_path: Path) -> None:
    needs("pyarrow")
    t = _Trace()
    _two_executions(t)
    archive = read_nsys(t.write(tmp_path))
    joined = module_timing(archive.executions, kernel_of={"all-gather-start": "k", "fusion.2": "k"})
    k = joined.kernel("k")
    assert k is not None
    assert (k.calls, k.hlo_ops) == (2, ("all-gather-start", "fusion.2"))
    assert k.total_us == pytest.approx(0.070)


def test_folder_and_zip_read_alike(tmp_path: Path) -> None:
    needs("pyarrow")
    t = _Trace()
    _two_executions(t)
    folder = t.write(tmp_path / "run")
    config = folder / "dump" / "module_0007.m.gpu_target_config.pbtxt.xz"
    config.parent.mkdir()
    config.write_bytes(
        lzma.compress(
            b"gpu_device_info {\n  cuda_compute_capability {\n    major: 8\n    minor: 6\n  }\n}\n"
            b'platform_name: "CUDA"\ndevice_description_str: "NVIDIA RTX A6000"\n'
        )
    )
    zipped = tmp_path / "run.zip"
    with zipfile.ZipFile(zipped, "w") as z:
        for f in folder.rglob("*"):
            if f.is_file():
                z.write(f, f.relative_to(folder))
    assert is_nsys_archive(folder) and is_nsys_archive(zipped)
    a, b = read_nsys(folder), read_nsys(zipped)
    assert (a.platform, a.device, a.platform_name) == ("sm_86", "NVIDIA RTX A6000", "CUDA")
    assert (b.platform, b.device) == (a.platform, a.device)
    assert a.executions == b.executions


def test_an_archive_folder_is_read_only_inside_itself(tmp_path: Path) -> None:
    """Links out of an unpacked archive are never followed: not to its trace, not to a
    target config (whose device string would be quoted in every report)."""
    needs("pyarrow")
    t = _Trace()
    _two_executions(t)
    elsewhere = t.write(tmp_path / "elsewhere") / "nvtx_gpu_proj_trace" / "trace.parquet"
    secret = tmp_path / "secret.pbtxt"
    secret.write_text('device_description_str: "SECRET"\nplatform_name: "CUDA"\n')
    folder = tmp_path / "archive"
    (folder / "nvtx_gpu_proj_trace").mkdir(parents=True)
    trace = folder / "nvtx_gpu_proj_trace" / "trace.parquet"
    trace.symlink_to(elsewhere)
    with pytest.raises(ProfileReadError, match=r"trace\.parquet is a link out of the archive"):
        read_nsys(folder)
    trace.unlink()
    trace.write_bytes(elsewhere.read_bytes())
    (folder / "dump").mkdir()
    config = folder / "dump" / "module_0007.m.gpu_target_config.pbtxt"
    config.symlink_to(secret)
    a = read_nsys(folder)
    assert (a.device, a.platform_name) == (None, None) and len(a.executions) == 2
    # a link that stays inside the folder is read
    config.unlink()
    (folder / "kept.pbtxt").write_bytes(secret.read_bytes())
    config.symlink_to(folder / "kept.pbtxt")
    assert read_nsys(folder).device == "SECRET"


def test_a_member_past_the_size_cap_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A zip member's declared size bounds what reading it yields: past the cap (here
    1 kB; the trace is bigger), it is refused before a byte is decompressed."""
    needs("pyarrow")
    from hloscope.timing import nsys

    t = _Trace()
    _two_executions(t)
    folder = t.write(tmp_path / "archive")
    zipped = tmp_path / "run.zip"
    with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(
            folder / "nvtx_gpu_proj_trace" / "trace.parquet", "nvtx_gpu_proj_trace/trace.parquet"
        )
    monkeypatch.setattr(nsys, "MAX_MEMBER_BYTES", 1000)
    for archive in (zipped, folder):
        with pytest.raises(ProfileReadError, match="more than the 1,000 allowed"):
            read_nsys(archive)


def test_not_an_archive(tmp_path: Path) -> None:
    text = tmp_path / "x.txt"
    text.write_text("hello")
    with pytest.raises(ProfileReadError, match="not an nsys-jax archive"):
        read_nsys(text)
    empty = tmp_path / "empty.zip"
    with zipfile.ZipFile(empty, "w") as z:
        z.writestr("dump/readme", "nothing")
    with pytest.raises(ProfileReadError, match=r"no nvtx_gpu_proj_trace/trace\.parquet"):
        read_nsys(empty)
    assert not is_nsys_archive(text) and not is_nsys_archive(empty)


def test_corrupt_parquet_is_a_read_error(tmp_path: Path) -> None:
    needs("pyarrow")
    bad = tmp_path / "nvtx_gpu_proj_trace" / "trace.parquet"
    bad.parent.mkdir()
    bad.write_bytes(b"PAR1 not really")
    with pytest.raises(ProfileReadError, match="not the nsys-jax NVTX trace"):
        read_nsys(tmp_path)


def test_missing_pyarrow_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tmp_path / "nvtx_gpu_proj_trace" / "trace.parquet"
    trace.parent.mkdir()
    trace.write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'hloscope\[nsys\]'"):
        read_nsys(tmp_path)


# --------------------------------------------------------------------------------------
# The real MaxText archive against the truth file


@pytest.fixture(scope="module")
def archive() -> NsysArchive:
    if not ARCHIVE.is_file() or not TRUTH.is_file():
        pytest.skip(f"real GPU data not found at {GPU} (see ../shared/gpu/README.md)")
    needs("pyarrow")
    return read_nsys(ARCHIVE)


@pytest.fixture(scope="module")
def truth() -> dict[str, Any]:
    if not TRUTH.is_file():
        pytest.skip(f"{TRUTH} not found")
    modules: dict[str, Any] = json.loads(TRUTH.read_text())["modules"]
    return modules


def _by_name(archive: NsysArchive) -> dict[str, list[Any]]:
    runs: dict[str, list[Any]] = defaultdict(list)
    for ex in archive.executions:
        runs[ex.module].append(ex)
    return runs


def test_every_module_agrees_with_the_truth(archive: NsysArchive, truth: dict[str, Any]) -> None:
    """The truth groups executions by `hlo_module` name and takes the median per
    execution of thunks, GPU operations and module time, and the mean per execution of
    each hlo_op's figures; `module_timing` over the same executions gives the same."""
    runs = _by_name(archive)
    compared = 0
    for name, want in truth.items():
        m = module_timing(runs[name], skip_first=1)
        # the truth counts every thread's executions; hloscope's figures are per thread
        # (one GPU each): executions per device, and calls and times the mean over them
        assert len(m.execution_us) == want["executions"], name
        assert m.executions * m.device_count == want["executions"], name
        n = m.device_executions
        assert statistics.median(m.launches_by_execution) == want["thunks_per_execution"], name
        assert statistics.median(m.device_ops_by_execution) == want["gpu_ops_per_execution"], name
        assert statistics.median(m.execution_us) * 1e3 == pytest.approx(
            want["module_ns_per_execution"], rel=1e-12
        ), name
        got = {k.name: k for k in m.kernels}
        assert set(got) == set(want["ops"]), name
        for op, w in want["ops"].items():
            k = got[op]
            assert k.calls / n == pytest.approx(w["thunks_per_execution"], rel=1e-12), (name, op)
            assert k.device_ops is not None
            assert k.device_ops / n == pytest.approx(w["gpu_ops_per_execution"], rel=1e-12), op
            assert k.total_us * 1e3 / n == pytest.approx(w["ns_per_execution"], rel=1e-12), op
            compared += 1
    assert compared == sum(len(w["ops"]) for w in truth.values()) > 690


def test_programs_sharing_a_name_are_timed_apart(
    archive: NsysArchive, truth: dict[str, Any]
) -> None:
    """Two compiled programs are both named jit_add: the truth merges them (one first
    execution left out), nsys_timings keys them `jit_add(34)`, `jit_add(37)` and leaves
    out the first execution of each, which includes its own autotuning."""
    p = nsys_timings(archive)
    programs = {ex.program_id for ex in archive.executions if ex.module == "jit_add"}
    keys = [f"jit_add({i})" for i in sorted(programs)]
    assert len(keys) == 2 and all(k in p.modules for k in keys)
    split = sum(len(p.modules[k].execution_us) for k in keys)
    assert split == truth["jit_add"]["executions"] - (len(keys) - 1)
    # Every other module is one program: keyed by its name, timed as the truth times it.
    single = [name for name in truth if name != "jit_add"]
    assert len(single) == 7
    for name in single:
        m = p.modules[name]
        assert m.executions * m.device_count == truth[name]["executions"], name
        assert statistics.median(m.execution_us) * 1e3 == pytest.approx(
            truth[name]["module_ns_per_execution"], rel=1e-12
        ), name


def test_train_step_overlap_and_enclosing_ops(archive: NsysArchive, truth: dict[str, Any]) -> None:
    p = nsys_timings(archive)
    m = p.modules["jit_train_step"]
    assert (p.platform, p.device, p.source) == ("sm_90", "NVIDIA H100 80GB HBM3", "nsys")
    assert m.busy_us is not None
    # Async collectives run beside compute: summed thunk time passes the module's time,
    # their union does not.
    assert m.kernel_us > m.total_us >= m.busy_us
    assert any(line.startswith("jit_train_step: kernels overlap") for line in p.problems)
    # The module range counts 1177 GPU operations, the truth's leaf hlo_ops 1165: the
    # difference is launched by the enclosing `__custom_fusion` thunks themselves.
    t = truth["jit_train_step"]
    leaf = sum(w["gpu_ops_per_execution"] for w in t["ops"].values())
    extra = t["gpu_ops_per_execution"] - leaf
    assert extra == 12
    assert m.device_ops_per_execution == t["gpu_ops_per_execution"]
    assert any(f"{extra:g} GPU operations per execution launched by" in x for x in p.problems)


def test_platform_is_what_the_archive_records(archive: NsysArchive) -> None:
    with zipfile.ZipFile(ARCHIVE) as z:
        names = z.namelist()
        config = next(n for n in names if n.endswith("jit_train_step.gpu_target_config.pbtxt.xz"))
        text = lzma.decompress(z.read(config)).decode()
    assert f'device_description_str: "{archive.device}"' in text
    assert any(".sm_9.0_gpu_after_optimizations." in n for n in names)
    assert archive.platform == "sm_90"


def test_thunks_outside_a_module_are_counted(tmp_path: Path) -> None:
    needs("pyarrow")
    t = _Trace()
    _two_executions(t)
    t.add("TSL:Thunk:#hlo_op=stray#", 5000, 10)
    p = nsys_timings(t.write(tmp_path))
    assert "1 thunk ranges not directly below an XlaModule range or a thunk left out" in p.problems
    assert all(k.name != "stray" for k in p.modules["m"].kernels)


def test_platform_from_dump_names_without_a_target_config(tmp_path: Path) -> None:
    needs("pyarrow")
    t = _Trace()
    _two_executions(t)
    folder = t.write(tmp_path)
    (folder / "dump").mkdir()
    (folder / "dump" / "module_0007.m.sm_8.0_gpu_after_optimizations.hlo.pb.xz").write_bytes(b"")
    a = read_nsys(folder)
    assert (a.platform, a.device) == ("sm_80", None)


def test_a_broken_target_config_is_a_read_error(tmp_path: Path) -> None:
    needs("pyarrow")
    t = _Trace()
    _two_executions(t)
    folder = t.write(tmp_path)
    (folder / "dump").mkdir()
    (folder / "dump" / "module_0007.m.gpu_target_config.pbtxt.xz").write_bytes(b"not xz")
    with pytest.raises(ProfileReadError, match="cannot read the nsys-jax archive"):
        read_nsys(folder)


def test_importing_the_reader_imports_no_pyarrow() -> None:
    import subprocess

    code = "import sys, hloscope.timing.nsys; print('pyarrow' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.stdout.strip() == "False"


def _module_ranges() -> dict[str, list[tuple[Any, Any, int]]]:
    """(pid, tid, projected ns) of every XlaModule range, by hlo_module, read from the
    archive's parquet here, without hloscope."""
    import io
    import re

    pq = pytest.importorskip("pyarrow.parquet")
    with zipfile.ZipFile(ARCHIVE) as z:
        member = next(n for n in z.namelist() if n.endswith("nvtx_gpu_proj_trace/trace.parquet"))
        table = pq.read_table(io.BytesIO(z.read(member))).to_pydict()
    out: dict[str, list[tuple[Any, Any, int]]] = defaultdict(list)
    for name, pid, tid, ns in zip(
        table["Name"], table["PID"], table["TID"], table["Projected Duration"], strict=True
    ):
        found = re.match(r"TSL:XlaModule:#(?:.*,)?hlo_module=([^,#]*)", name or "")
        if found:
            out[found.group(1)].append((pid, tid, int(ns or 0)))
    return out


def test_modules_that_ran_only_as_warm_up_are_shown_cold(
    archive: NsysArchive, truth: dict[str, Any]
) -> None:
    """The truth holds the modules with an execution after each thread's first; every
    other module ran once per thread at most. Those are timed from that cold first run
    (as XPlane profiles are), not shown as 0 executions."""
    ranges = _module_ranges()
    p = nsys_timings(archive)
    cold = {m.name: m for m in p.modules.values() if m.cold}
    assert set(cold) == set(ranges) - set(truth) and len(cold) == 4
    for name, m in cold.items():
        threads = [(pid, tid) for pid, tid, _ in ranges[name]]
        assert len(threads) == len(set(threads))  # once per thread: all warm-up
        assert (m.executions, m.skipped) == (1, 0), name  # one per device
        assert m.device_count == len(threads), name
        want = sorted(ns for _, _, ns in ranges[name])
        assert sorted(round(us * 1e3) for us in m.execution_us) == want, name
        assert m.total_us * m.device_count * 1e3 == pytest.approx(sum(want), rel=1e-12), name
    # a module with a steady state is not cold, and its first runs stay out of it
    for name, want in truth.items():
        for m in (m for m in p.modules.values() if m.name == name):
            assert not m.cold and m.skipped > 0, name
        assert sum(len(m.execution_us) for m in p.modules.values() if m.name == name) == (
            want["executions"] - (name == "jit_add")
        ), name
    (line,) = [x for x in p.problems if "cold first run" in x]
    assert line.startswith("4 module(s) ran only 1 time(s) or less, all warm-up")
    assert "no steady-state" not in " ".join(p.problems)
