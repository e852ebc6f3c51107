"""`report --json` kept in the run folder (`hloscope.cli.cached`): read back byte for byte
equal to a fresh computation, computed again when anything it depends on changes, never
trusted when the kept file is garbage, a FIFO, a link or too big, and never in the way
where it cannot be written.

The run is the captured JAX MLP profile with its dump (tests/data/jax_mlp_profile, see its
HOW.md), copied into a run folder with the run.json `hloscope dump` writes. To tell a
read-back from a computation, a test changes the kept text ("poisons" it): only a
read-back prints the poison.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hloscope.capture import run as capture_run
from hloscope.capture.run import plan_dump
from hloscope.cli import app
from hloscope.cli.cached import _MAX_BYTES
from hloscope.store import PEAKS_FILE, REPORT_CACHE, TIMINGS_CACHE, keep, user_cache_dir
from tests.timing.helpers import JAX_PROFILE

ROOT = Path(__file__).resolve().parents[2]
PEAKS = ["--peak-bandwidth", "12", "--peak-tflops", "0.2"]
POISON = '{"poisoned": true}\n'
MANIFEST = {  # as `hloscope dump --profile` writes it (hloscope.manifest.RunManifest)
    "source": "dump",
    "target": {"kind": "script", "name": "samples/jax_mlp.py", "args": []},
    "platform": "cpu",
    "device": "CPU (2 cores)",
    "exit_code": 0,
    "dump_dir": "hlo",
}


@pytest.fixture
def run(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    shutil.copytree(JAX_PROFILE, folder)
    (folder / "run.json").write_text(json.dumps(MANIFEST), encoding="utf-8")
    for path in folder.rglob("*"):
        aged(path)
    return folder


def aged(path: Path) -> None:
    """Date a file an hour back: output from a file written within the last second is
    not kept (its size and time could stay the same through a change)."""
    old = time.time_ns() - 3600 * 10**9
    os.utime(path, ns=(old, old))


def report(path: Path, *options: str) -> tuple[str, str]:
    """`hloscope report PATH --json OPTIONS`: its stdout and stderr."""
    result = CliRunner().invoke(app, ["report", str(path), "--json", *options])
    assert result.exit_code == 0, result.output
    return result.stdout, result.stderr


def fresh(path: Path, *options: str) -> str:
    """The report computed now: with the run's report cache out of the way."""
    (path / REPORT_CACHE).unlink(missing_ok=True)
    out, _ = report(path, *options)
    (path / REPORT_CACHE).unlink(missing_ok=True)
    return out


def entries(path: Path) -> dict[str, dict[str, object]]:
    doc = json.loads((path / REPORT_CACHE).read_text(encoding="utf-8"))
    return {key: entry["value"] for key, entry in doc["entries"].items()}


def poison(path: Path, stdout: str = POISON, warnings: tuple[str, ...] = ()) -> None:
    """Make every kept report print POISON, kept as hloscope keeps (signed with this
    user's secret): only a read-back shows it."""
    for key in entries(path):
        value = {"stdout": stdout, "warnings": list(warnings)}
        keep(path / REPORT_CACHE, key, value, limit=_MAX_BYTES, max_entries=4)


def touch(path: Path) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))


def test_a_later_report_is_read_back_equal_to_a_fresh_one(run: Path) -> None:
    first, _ = report(run, *PEAKS)
    assert (run / REPORT_CACHE).is_file() and (run / TIMINGS_CACHE).is_file()
    doc = json.loads(first)
    assert any(m.get("timing") for m in doc["modules"])  # profiled: timings and roofline in it
    again, _ = report(run, *PEAKS)
    assert again == first == fresh(run, *PEAKS)
    report(run, *PEAKS)
    poison(run)
    assert report(run, *PEAKS)[0] == POISON  # it was read back, not computed


def test_the_default_cpu_roofs_are_part_of_the_key(run: Path) -> None:
    # No flags: the roofs of this CPU, probed once and kept in the user cache dir
    # (timing.roofline.cpu_peaks). The first report may probe; a later one must not
    # miss because of it.
    first, _ = report(run)
    poison(run)
    assert report(run)[0] == POISON
    probe = user_cache_dir() / PEAKS_FILE
    assert probe.is_file()
    touch(probe)  # other kept roofs: the roofline may differ
    assert report(run)[0] == first


@pytest.mark.parametrize(
    "change",
    ["swap a dump file", "replace the profile", "edit run.json", "add bench.json", "rm"],
)
def test_a_change_in_the_run_folder_computes_it_again(run: Path, change: str) -> None:
    report(run, *PEAKS)
    poison(run)
    xplane = next(run.rglob("*.xplane.pb"))
    if change == "swap a dump file":
        # other content of the same size and time: a key of names, sizes and times
        # would serve the stale report
        dump = next(run.glob("hlo/*jit_mlp.cpu_after_optimizations.txt"))
        st = dump.stat()
        dump.write_text(dump.read_text().replace("HloModule jit_mlp", "HloModule jit_mlq", 1))
        os.utime(dump, ns=(st.st_atime_ns, st.st_mtime_ns))
    elif change == "replace the profile":
        xplane.write_bytes(b"not a profile")
    elif change == "edit run.json":
        (run / "run.json").write_text(json.dumps({**MANIFEST, "device": "CPU (3 cores)"}))
    elif change == "add bench.json":
        (run / "bench.json").write_text("{}")
    else:
        xplane.unlink()
    out, err = report(run, *PEAKS)
    assert out != POISON and out == fresh(run, *PEAKS)
    timed = any(m.get("timing") for m in json.loads(out)["modules"])
    if change == "replace the profile":
        assert not timed and "warning: no timings" in err
    elif change == "edit run.json":
        assert json.loads(out)["run"]["device"] == "CPU (3 cores)"


def test_warnings_are_kept_with_the_output(run: Path) -> None:
    xplane = next(run.rglob("*.xplane.pb"))
    xplane.write_bytes(b"not a profile")
    aged(xplane)
    out, err = report(run, *PEAKS)
    assert "warning: no timings" in err
    assert report(run, *PEAKS) == (out, err)
    assert next(iter(entries(run).values()))["warnings"] == [err.strip()]


def test_other_options_are_other_entries(run: Path) -> None:
    choices = [PEAKS, ["--peak-bandwidth", "13", "--peak-tflops", "0.2"], ["-M", "jit_mlp"]]
    outs = [fresh(run, *c) for c in choices]
    assert len(set(outs)) == 3
    assert [report(run, *c)[0] for c in choices] == outs and len(entries(run)) == 3
    assert [report(run, *c)[0] for c in choices] == outs
    poison(run)
    assert all(report(run, *c)[0] == POISON for c in choices)
    # --all changes only the terminal table, not the document: the same entry
    assert report(run, *PEAKS, "--all")[0] == POISON
    assert fresh(run, *PEAKS, "--all") == outs[0]


def test_old_entries_go_beyond_four(run: Path) -> None:
    for gbs in range(10, 16):
        report(run, "--peak-bandwidth", str(gbs), "--peak-tflops", "0.2")
    assert len(entries(run)) == 4


@pytest.mark.parametrize(
    "kind", ["garbage", "another version", "entries of another shape", "fifo", "huge"]
)
def test_a_kept_file_that_is_not_a_store_is_recomputed(run: Path, kind: str) -> None:
    expected = fresh(run, *PEAKS)
    cache = run / REPORT_CACHE
    if kind == "garbage":
        cache.write_bytes(b"\x00\xff{not json")
    elif kind == "another version":
        cache.write_text(json.dumps({"version": 999, "entries": {}}))
    elif kind == "entries of another shape":
        report(run, *PEAKS)
        doc = json.loads(cache.read_text())
        doc["entries"] = {key: {"stdout": 1} for key in doc["entries"]}
        cache.write_text(json.dumps(doc))
    elif kind == "fifo":
        os.mkfifo(cache)  # a reader that waited for a writer would hang here
    else:
        with cache.open("wb") as f:  # sparse: over the size cap without writing it
            f.truncate(_MAX_BYTES + 1)
    assert report(run, *PEAKS)[0] == expected
    assert cache.is_file() and cache.stat().st_size < 10**6  # replaced by a real store
    poison(run)
    assert report(run, *PEAKS)[0] == POISON


def test_a_kept_file_linked_out_of_the_run_folder_is_not_read(run: Path, tmp_path: Path) -> None:
    expected = fresh(run, *PEAKS)
    report(run, *PEAKS)
    poison(run)  # the right key, but read only through the link
    outside = tmp_path / "elsewhere.json"
    (run / REPORT_CACHE).rename(outside)
    (run / REPORT_CACHE).symlink_to(outside)
    kept = outside.read_bytes()
    assert report(run, *PEAKS)[0] == expected
    assert outside.read_bytes() == kept  # what the link names is left alone
    assert not (run / REPORT_CACHE).is_symlink()  # the link was replaced by a store


def test_where_nothing_can_be_written_the_report_is_computed(run: Path) -> None:
    expected = fresh(run, *PEAKS)
    (run / REPORT_CACHE).mkdir()  # in the way of every write, as a read-only folder is
    assert report(run, *PEAKS)[0] == expected
    assert report(run, *PEAKS)[0] == expected
    assert (run / REPORT_CACHE).is_dir() and not list(run.glob(".hloscope-report*.tmp"))


def test_a_read_only_run_folder_is_reported(run: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("running as root: a folder's mode does not stop root's writes")
    expected = fresh(run, *PEAKS)
    run.chmod(0o555)
    try:
        assert report(run, *PEAKS)[0] == expected
        assert report(run, *PEAKS)[0] == expected
        assert not (run / REPORT_CACHE).exists()
    finally:
        run.chmod(0o755)


def test_outside_a_run_folder_nothing_is_kept(tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    shutil.copytree(JAX_PROFILE, bare)  # a dump and a profile, but no run.json
    one = next(bare.glob("hlo/*jit_mlp.cpu_after_optimizations.txt"))
    for path in (bare, one):
        first, _ = report(path, *PEAKS)
        assert report(path, *PEAKS)[0] == first
    assert not list(tmp_path.rglob(REPORT_CACHE))


def test_a_read_back_imports_no_parser_analysis_or_timing(run: Path) -> None:
    # checked as the process ends (a command that kept big objects ends in `main`)
    code = (
        "import atexit, sys\n"
        "from hloscope.cli import main\n"
        "atexit.register(lambda: print("
        "' '.join(sorted(m for m in sys.modules if m.startswith('hloscope'))), file=sys.stderr))\n"
        f"sys.argv = ['hloscope', 'report', {str(run)!r}, '--json', *{PEAKS!r}]\n"
        "main()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def loaded() -> tuple[str, set[str]]:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return done.stdout, set(done.stderr.split())

    first, computed = loaded()
    again, read_back = loaded()
    assert first == again
    assert {"hloscope.hlo.parser", "hloscope.analysis.report"} <= computed
    pipeline = (
        "hloscope.hlo.parser",
        "hloscope.analysis",
        "hloscope.timing",
        "hloscope.inspection",
    )
    assert not [m for m in read_back if m.startswith(pipeline)]


def test_dump_force_removes_the_kept_reports(run: Path, tmp_path: Path) -> None:
    report(run, *PEAKS)
    (run / "notes.txt").write_text("mine")
    (tmp_path / "s.py").write_text("pass\n")
    plan = plan_dump(tmp_path / "s.py", out=run, force=True, environ={})
    removed = capture_run._prepare_run_dir(plan)
    assert REPORT_CACHE in removed and TIMINGS_CACHE in removed
    assert not (run / REPORT_CACHE).exists() and (run / "notes.txt").read_text() == "mine"


def test_a_file_written_within_the_last_second_keeps_nothing(run: Path) -> None:
    (run / "bench.json").write_text("{}")
    first, _ = report(run, *PEAKS)
    assert not (run / REPORT_CACHE).exists()
    aged(run / "bench.json")
    assert report(run, *PEAKS)[0] == first and (run / REPORT_CACHE).is_file()


def test_a_file_changed_while_computing_keeps_nothing(run: Path) -> None:
    from hloscope.cli.cached import Output, cached_output

    def compute() -> Output:  # as if the dump was rewritten during the analysis
        touch(next(run.glob("hlo/*jit_mlp.cpu_after_optimizations.txt")))
        return Output("computed\n")

    assert cached_output(run, "report --json", {}, compute).stdout == "computed\n"
    assert not (run / REPORT_CACHE).exists()
    assert cached_output(run, "report --json", {}, lambda: Output("again\n")).stdout == "again\n"
    assert cached_output(run, "report --json", {}, compute).stdout == "again\n"


def test_a_kept_report_is_found_without_hashing_the_run_again(
    run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's files are hashed once: a later command takes each file's digest from
    the user's digest index while its stat fields are unchanged, and a file rewritten to
    the same size and time (only its change time moves) is hashed and computed again."""
    from hloscope import user_cache
    from hloscope.cli.cached import Output, cached_output

    monkeypatch.setenv("HLOSCOPE_CACHE_MB", "64")  # the digest index is kept
    monkeypatch.setattr(user_cache, "RACY_NS", 0)  # the copies' change times are now
    hashed: list[str] = []
    real = user_cache.content_digest

    def counted(path: Path, limit: int) -> str:
        hashed.append(path.name)
        return real(path, limit)

    monkeypatch.setattr(user_cache, "content_digest", counted)
    files = [p for p in run.rglob("*") if p.is_file() and p.name != REPORT_CACHE]
    assert cached_output(run, "report --json", {}, lambda: Output("computed\n")).stdout == (
        "computed\n"
    )
    assert sorted(hashed) == sorted(p.name for p in files)
    hashed.clear()
    user_cache._TAKEN.clear()  # as a new process: only the index on disk remembers
    assert cached_output(run, "report --json", {}, lambda: Output("again\n")).stdout == (
        "computed\n"
    )
    assert hashed == []
    after = next(run.glob("hlo/*jit_mlp.cpu_after_optimizations.txt"))
    st = after.stat()
    after.write_text(after.read_text().replace(" add(", " sub("))
    os.utime(after, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert after.stat().st_size == st.st_size
    assert cached_output(run, "report --json", {}, lambda: Output("again\n")).stdout == "again\n"
    assert hashed == [after.name]


def test_links_out_of_the_run_folder_are_not_walked(run: Path, tmp_path: Path) -> None:
    """A link to `/` in a run folder is stamped as a link: the key is not a walk of the
    disk, and a change outside does not matter (no reader of the run follows it)."""
    from hloscope.store import tree_stats

    def stamps_of(run: Path) -> list[list[object]]:
        return [
            [n, stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns] for n, st in tree_stats(run)
        ]

    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "f.txt").write_text("x", encoding="utf-8")
    (run / "to_root").symlink_to("/")
    (run / "to_outside").symlink_to(outside)
    (run / "how_again").symlink_to(run / "HOW.md")  # inside: followed, as readers do
    stamps = stamps_of(run)
    names = [s[0] for s in stamps]
    assert "to_root" in names and "to_outside" in names
    assert not any(n.startswith(("to_root/", "to_outside/")) for n in names)
    again = next(s for s in stamps if s[0] == "how_again")
    assert again[1:3] == [stat.S_IFREG, (run / "HOW.md").stat().st_size]
    (outside / "deep" / "f.txt").write_text("changed", encoding="utf-8")
    assert stamps_of(run) == stamps


def test_a_kept_report_with_terminal_escapes_prints_them_escaped(run: Path) -> None:
    """The kept file is input like any other in a run folder: a forged entry cannot send
    control sequences to the terminal (a clear screen, an OSC 52 clipboard write)."""
    report(run, *PEAKS)
    poison(run, '{"x": "\x1b[2J\x1b]52;c;aGk=\x07\x9b5m"}\n', ("hloscope: warning: \x1b[31mred",))
    out, err = report(run, *PEAKS)
    assert "\\x1b[2J" in out and "\\x9b" in out and "\\x1b[31m" in err
    assert not any(c in out + err for c in "\x1b\x07\x9b")


def test_a_kept_report_edited_in_place_is_computed_again(run: Path) -> None:
    """Issue 25: a forged entry (the right key, another value) is never shown; nor is
    one kept by another user (another secret), as in a run folder copied from them."""
    expected = fresh(run, *PEAKS)
    report(run, *PEAKS)
    doc = json.loads((run / REPORT_CACHE).read_text(encoding="utf-8"))
    for entry in doc["entries"].values():
        entry["value"]["stdout"] = POISON  # the signature no longer matches
    (run / REPORT_CACHE).write_text(json.dumps(doc), encoding="utf-8")
    assert report(run, *PEAKS)[0] == expected
    poison(run)
    assert report(run, *PEAKS)[0] == POISON
    other = run.parent / "other-user-cache"
    with pytest.MonkeyPatch.context() as m:
        m.setenv("HLOSCOPE_CACHE_DIR", str(other))  # another user: another secret
        assert report(run, *PEAKS)[0] == expected
