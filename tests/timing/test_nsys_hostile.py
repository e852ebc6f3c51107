"""nsys-jax archives built to break the reader (issue 25): columns of the wrong type,
NaN and infinite times, thunk ranges nested thousands deep or in a cycle, row bombs,
encrypted members or unknown compression, unpacks past their budget. Each is read (bad
rows left out and counted) or refused with an `HloscopeError`; nothing is left behind
in the temp folder.

Traces are written here in nsys-jax's column layout (`_Trace` of test_nsys.py); the
archive seed is the real MaxText one in ../shared/gpu (see its README.md), read in place.
"""

from __future__ import annotations

import math
import struct
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

from hloscope.errors import HloscopeError, ProfileReadError, UsageError
from hloscope.runs import load_run
from hloscope.timing.nsys import nsys_timings, read_nsys
from tests.conftest import GPU
from tests.timing.helpers import needs
from tests.timing.test_nsys import _Trace, _two_executions

ARCHIVE = GPU / "maxtext_fsdp4_h100.nsys-jax.zip"


def _write(tmp_path: Path, rows: list[dict[str, Any]], types: dict[str, Any] | None = None) -> Path:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    columns = {k: [r.get(k) for r in rows] for k in rows[0]}
    arrays = {k: pa.array(v, type=(types or {}).get(k)) for k, v in columns.items()}
    target = tmp_path / "nvtx_gpu_proj_trace" / "trace.parquet"
    target.parent.mkdir(parents=True)
    pq.write_table(pa.table(arrays), target)
    return tmp_path


def _rows() -> list[dict[str, Any]]:
    t = _Trace()
    _two_executions(t)
    return t.rows


@pytest.mark.parametrize(
    ("column", "values", "kind"),
    [
        ("Name", [7] * 10, "int64"),
        ("PID", [[1, 2]] * 10, "list<"),
        ("Projected Start", ["soon"] * 10, "string"),
        ("NumGPUOps", ["many"] * 10, "string"),
    ],
)
def test_a_column_of_another_type_is_refused(
    tmp_path: Path, column: str, values: list[Any], kind: str
) -> None:
    needs("pyarrow")
    rows = _rows()
    for r, v in zip(rows, values, strict=False):
        r[column] = v
    for r in rows[len(values) :]:
        r[column] = values[0]
    with pytest.raises(ProfileReadError, match=f"column '{column}' holds {kind}"):
        read_nsys(_write(tmp_path, rows))


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("Projected Start", math.nan),
        ("Projected Duration", math.inf),
        ("Projected Duration", -1000.0),
        ("NumGPUOps", -3.0),
        ("NumGPUOps", math.nan),
        ("RangeId", math.nan),
        ("Orig Start", math.inf),
    ],
)
def test_rows_that_are_no_measurement_are_left_out_and_counted(
    tmp_path: Path, column: str, value: float
) -> None:
    needs("pyarrow")
    rows = _rows()
    thunk = next(r for r in rows if r["Name"].startswith("TSL:Thunk:") and r["ParentId"] == 1.0)
    thunk[column] = value
    float_types = {c: pytest.importorskip("pyarrow").float64() for c in rows[0] if c != "Name"}
    timings = nsys_timings(_write(tmp_path, rows, float_types), skip_first=0)
    for m in timings.modules.values():
        figures = [m.total_us, m.kernel_us, m.unattributed_us, *(k.total_us for k in m.kernels)]
        assert all(math.isfinite(x) and x >= 0 for x in figures)
    if column in ("Projected Duration", "NumGPUOps", "Projected Start"):
        assert any("negative or non-finite" in p for p in timings.problems)


@pytest.mark.parametrize("depth", [3_000, 30_000])
def test_thunks_nested_thousands_deep_read_without_recursion(tmp_path: Path, depth: int) -> None:
    needs("pyarrow")
    t = _Trace()
    m = t.module("m", 0, 100)
    parent = m
    for _ in range(depth):
        parent = t.thunk("fusion.1", parent, 0, 10)
    archive = read_nsys(t.write(tmp_path))
    (ex,) = archive.executions
    assert [c.op for c in ex.thunks] == ["fusion.1"]  # the innermost, once


def test_parent_links_in_a_cycle_end(tmp_path: Path) -> None:
    needs("pyarrow")
    rows = _rows()
    thunks = [r for r in rows if r["Name"].startswith("TSL:Thunk:")]
    a, b = thunks[0], thunks[1]
    a["ParentId"], b["ParentId"] = b["RangeId"], a["RangeId"]  # a under b under a
    thunks[2]["ParentId"] = thunks[2]["RangeId"]  # its own parent
    archive = read_nsys(_write(tmp_path, rows))
    assert archive.executions
    assert any("not directly below an XlaModule" in p for p in archive.problems)


def test_a_row_bomb_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """Three million rows that zstd packs into a few MB: past the budget of one row per
    16 bytes beyond the first 250,000."""
    needs("pyarrow")
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(_rows())
    big = table.take(pa.array(np.arange(1_000_000) % table.num_rows))
    target = tmp_path / "nvtx_gpu_proj_trace" / "trace.parquet"
    target.parent.mkdir(parents=True)
    with pq.ParquetWriter(target, big.schema, compression="zstd") as w:
        for _ in range(3):
            w.write_table(big)
    assert target.stat().st_size < 3_000_000 * 16
    with pytest.raises(ProfileReadError, match="3,000,000 rows"):
        read_nsys(tmp_path)


# --- damaged zips -----------------------------------------------------------------------


def _zip(tmp_path: Path, members: dict[str, bytes]) -> Path:
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / "run.nsys-jax.zip"
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data, compress_type=zipfile.ZIP_DEFLATED)
    return path


def _damage(path: Path, member: str, *, flags: int = 0, method: int | None = None) -> None:
    """Set flag bits or a compression method on a member's local and central headers."""
    data = bytearray(path.read_bytes())
    name = member.encode()
    for signature, flag_at, method_at, name_at in ((b"PK\x03\x04", 6, 8, 30), (b"PK\x01\x02", 8, 10, 46)):  # fmt: skip
        at = data.find(signature)
        while at >= 0:
            if data[at + name_at : at + name_at + len(name)] == name:
                struct.pack_into("<H", data, at + flag_at, struct.unpack_from("<H", data, at + flag_at)[0] | flags)  # fmt: skip
                if method is not None:
                    struct.pack_into("<H", data, at + method_at, method)
            at = data.find(signature, at + 4)
    path.write_bytes(bytes(data))


def _archive_members() -> dict[str, bytes]:
    if not ARCHIVE.is_file():
        pytest.skip(f"real GPU data absent: {ARCHIVE} (see ../shared/gpu/README.md)")
    with zipfile.ZipFile(ARCHIVE) as z:
        wanted = ("nvtx_gpu_proj_trace/trace.parquet", ".jit_add.", ".jit_cos.")
        return {n: z.read(n) for n in z.namelist() if any(w in n for w in wanted)}


@pytest.mark.parametrize(
    ("damage", "message"),
    [({"flags": 0x1}, "encrypted"), ({"method": 99}, "compression method")],
    ids=["encrypted", "unknown-method"],
)
@pytest.mark.parametrize("member", ["trace", "dump"])
def test_encrypted_or_unknown_members_are_a_clean_error(
    tmp_path: Path, damage: dict[str, int], message: str, member: str
) -> None:
    needs("pyarrow")
    members = _archive_members()
    name = next(n for n in members if (member in n) or (member == "dump" and n.startswith("dump/")))
    path = _zip(tmp_path, members)
    _damage(path, name, **damage)
    before = set(Path(tempfile.gettempdir()).iterdir())
    with pytest.raises(HloscopeError, match=message) as error:
        nsys_timings(path) if member == "trace" else load_run(path)
    assert isinstance(error.value, ProfileReadError | UsageError)
    left = [p for p in set(Path(tempfile.gettempdir()).iterdir()) - before]
    assert left == []  # a failed unpack leaves no partial folder


def test_an_unpack_past_its_budget_is_refused_and_cleaned_up(tmp_path: Path) -> None:
    """A dump member that inflates to 300 MB of zeros from a 300 KB zip: past 64 times
    the archive (64 MiB for a small one), the unpack stops, and removes what it wrote."""
    needs("pyarrow")
    members = _archive_members()
    path = _zip(tmp_path, members)
    with (
        zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as z,
        z.open("dump/module_0099.bomb.before_optimizations.txt", "w", force_zip64=True) as f,
    ):
        chunk = b"\0" * (1 << 20)
        for _ in range(300):
            f.write(chunk)
    assert path.stat().st_size < 2 << 20
    before = set(Path(tempfile.gettempdir()).iterdir())
    with pytest.raises(UsageError, match="budget"):
        load_run(path)
    assert set(Path(tempfile.gettempdir()).iterdir()) == before


def test_the_unpacked_dump_is_keyed_by_the_archive_content(tmp_path: Path) -> None:
    """Another archive of the same size and time at the same path is unpacked anew."""
    needs("pyarrow")
    import os

    members = _archive_members()
    path = _zip(tmp_path, members)
    first = load_run(path)
    st = path.stat()
    other = {k: v for k, v in members.items() if ".jit_cos." not in k}
    smaller = _zip(tmp_path / "other", other).stat().st_size
    with zipfile.ZipFile(tmp_path / "other" / path.name, "a") as z:
        z.comment = b"x" * (st.st_size - smaller)  # the same size as the first
    (tmp_path / "other" / path.name).replace(path)
    assert path.stat().st_size == st.st_size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    second = load_run(path)
    assert {m.name for m in first.modules} == {"jit_add", "jit_cos"}
    assert {m.name for m in second.modules} == {"jit_add"}
