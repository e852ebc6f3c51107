"""The user's output cache (`hloscope.cli.output_cache`): a later command on unchanged
files prints and writes what `--no-cache` does, byte for byte, without parsing; any
change to the files, the options or the terminal computes again; an entry of another
shape, under another key or not a regular file is computed again; the folder stays
within its size, least recently used out first."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hloscope import user_cache
from hloscope.cli import app
from hloscope.cli import output_cache as oc
from hloscope.store import signature
from tests.conftest import DATA, dump_file

runner = CliRunner()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An output cache of its own, on (the suite runs with it off: conftest)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("HLOSCOPE_CACHE_DIR", str(folder))
    monkeypatch.setenv(oc.CACHE_MB_VARIABLE, "64")
    monkeypatch.chdir(tmp_path)
    return folder / "outputs"


def _signed(path: Path) -> Any:
    """A kept file's JSON (its signature line left out)."""
    return json.loads(path.read_bytes().partition(b"\n")[2])


def _sign(path: Path, text: str, key: str | None = None) -> None:
    """Write `text` as this user's hloscope would sign it under `key` (the entry's own by
    default): what a forger who had the secret could write, so that the shape checks
    after the signature are what is tested."""
    data = text.encode()
    mac = signature(key or path.stem, data)
    assert mac is not None
    path.write_bytes(mac.encode() + b"\n" + data)


def _entries(cache: Path) -> list[Path]:
    """The kept outputs (not the digest indexes beside them)."""
    return [p for p in cache.glob("*.json") if not p.name.startswith("digests-")]


def _invoke(args: list[str]) -> tuple[str, str]:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return result.stdout, result.stderr


def _no_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any parse from here on fails the test: a hit must print back, not compute."""

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("parsed on a cache hit")

    import hloscope.hlo.parser
    import hloscope.inspection

    monkeypatch.setattr(hloscope.hlo.parser._Parser, "parse", fail)
    monkeypatch.setattr(hloscope.inspection, "inspect_run", fail)


RUN_FOLDER = DATA / "tf_retrace"  # a run folder: run.json, dump/
BARE = DATA / "jax_mlp"  # a bare dump folder
ONE_FILE = ("tf_dense_relu", "*.cpu_after_optimizations.txt")
COMMANDS = [
    ["report", str(BARE)],
    ["report", str(BARE), "--json"],
    ["report", str(BARE), "--format", "tsv", "--all"],
    ["report", str(RUN_FOLDER)],
    ["ops", str(BARE)],
    ["ops", str(BARE), "--json", "--unfused"],
    ["ops", str(RUN_FOLDER), "--json"],
    ["graph", str(BARE), "-o", "g.svg"],
    ["graph", str(RUN_FOLDER), "--stage", "before", "-o", "b.dot"],
    ["report", str(BARE), "--html", "page.html"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:1] + a[2:]) or a[0])
def test_hit_is_byte_identical_to_no_cache(
    args: list[str], cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written = [Path(a) for a in args if a.endswith((".svg", ".dot", ".html"))]
    if "-o" in args and written[0].suffix == ".svg":
        written.append(written[0].with_suffix(".dot"))
    plain = _invoke([*args, "--no-cache"])
    plain_files = [p.read_bytes() for p in written]
    assert not cache.exists() or not list(cache.iterdir())  # --no-cache keeps nothing
    first = _invoke(args)
    assert len(list(_entries(cache))) == 1
    for p in written:
        p.unlink()
    _no_parsing(monkeypatch)
    again = _invoke(args)
    assert first == plain
    assert again == plain
    assert [p.read_bytes() for p in written] == plain_files


def test_one_file_and_parse(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = dump_file(*ONE_FILE)
    runs = [["report", str(path)], ["parse", str(path), "--json"], ["ops", str(path)]]
    plain = [_invoke([*a, "--no-cache"]) for a in runs]
    assert [_invoke(a) for a in runs] == plain
    _no_parsing(monkeypatch)
    assert [_invoke(a) for a in runs] == plain
    assert len(list(_entries(cache))) == 3


def test_a_change_computes_again(cache: Path, tmp_path: Path) -> None:
    """Another file content, another option, another stdout width: another key."""
    folder = tmp_path / "dump"
    shutil.copytree(BARE, folder)
    old = 1_000_000_000  # not racy: files changed just now are never kept
    for p in folder.iterdir():
        os.utime(p, (old, old))
    first = _invoke(["report", str(folder), "--json"])
    assert len(list(_entries(cache))) == 1
    _invoke(["report", str(folder), "--json", "--all"])  # --all: the same document
    assert len(list(_entries(cache))) == 2
    after = next(folder.glob("module_0030.*after_optimizations.txt"))
    text = after.read_text()
    after.write_text(text.replace("ROOT", "ROOT ", 1))  # the same module, other bytes
    os.utime(after, (old, old))
    assert _invoke(["report", str(folder), "--json"]) == first
    assert len(list(_entries(cache))) == 3
    # same size and time, other content: content is the key, not the stamp
    edited = text.replace(" multiply(", " subtract(")
    assert edited != text and len(edited) == len(text)
    after.write_text(edited)
    os.utime(after, (old, old))
    changed = _invoke(["report", str(folder), "--json"])
    assert len(list(_entries(cache))) == 4  # a key of its own
    assert changed == _invoke(["report", str(folder), "--json", "--no-cache"])


def test_entries_read_as_untrusted(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    args = ["report", str(BARE), "--json"]
    plain = _invoke(args)
    (entry,) = _entries(cache)
    doc = _signed(entry)
    forged: list[Any] = [
        {**doc, "version": 99},
        {**doc, "key": "0" * 64},
        {**doc, "chunks": [[3, "x"]]},
        {**doc, "chunks": [[1, 5]]},
        {**doc, "files": [["a", "not base64!"]]},
        {**doc, "files": "x"},
        ["not", "an", "entry"],
    ]
    for bad in forged:
        _sign(entry, json.dumps(bad))
        assert _invoke(args) == plain
        assert _signed(entry) == doc  # recomputed and kept again
    # an entry of the right shape with another output, not signed by this user's key
    for mac in (b"", b"0" * 64, (signature("another key", b"{}") or "").encode()):
        entry.write_bytes(mac + b"\n" + json.dumps({**doc, "chunks": [[1, "forged\n"]]}).encode())
        assert _invoke(args) == plain
    entry.write_bytes(b"\xff garbage")
    assert _invoke(args) == plain
    target = cache / "elsewhere.txt"
    target.write_text(json.dumps(doc))
    entry.unlink()
    entry.symlink_to(target)  # never read through a link
    json.loads(target.read_text())["chunks"][0][1] = "forged"
    target.write_text(json.dumps({**doc, "chunks": [[1, "forged\n"]]}))
    assert _invoke(args) == plain


def test_bounded_least_recently_used_out(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    args = [["report", str(BARE)], ["report", str(BARE), "--json"], ["ops", str(BARE)]]
    for a in args:
        _invoke(a)
    assert len(_entries(cache)) == 3
    time.sleep(0.01)
    _invoke(args[0])  # a hit: now the most recently used
    by_age = sorted(_entries(cache), key=lambda p: p.stat().st_mtime_ns)
    assert by_age[-1] != by_age[0]
    total = sum(p.stat().st_size for p in cache.glob("*.json"))
    monkeypatch.setattr(oc, "cache_limit", lambda: total + 1)  # full: the next one evicts
    _invoke(["ops", str(BARE), "--unfused"])
    left = set(cache.glob("*.json"))
    assert by_age[0] not in left  # the least recently used went first
    assert by_age[-1] in left  # the one just read stays
    assert sum(p.stat().st_size for p in left) <= total + 1
    monkeypatch.setattr(oc, "cache_limit", lambda: 0)  # 0: keeps nothing
    before = set(cache.glob("*.json"))
    _invoke(["ops", str(BARE), "--op", "dot"])
    assert set(cache.glob("*.json")) == before


def test_too_big_is_printed_not_kept(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(oc, "_MAX_ENTRY_BYTES", 1000)
    plain = _invoke(["report", str(BARE), "--json", "--no-cache"])
    assert _invoke(["report", str(BARE), "--json"]) == plain
    assert not list(_entries(cache))


def test_digests_taken_again_only_while_unchanged(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The digest index gives a file's digest back only while its stat fields are those
    it had; an index of another shape is empty, one naming another digest is not
    believed for a file that changed since."""
    monkeypatch.setattr(user_cache, "RACY_NS", 0)  # the copies' change times are now
    folder = tmp_path / "dump"
    shutil.copytree(BARE, folder)
    old = 1_000_000_000
    for p in folder.iterdir():
        os.utime(p, (old, old))
    first = oc.input_digests(folder)
    assert first is not None
    (index,) = cache.glob("digests-*.json")
    kept = _signed(index)
    assert len(kept["files"]) == len(first)  # every file of the folder
    assert oc.input_digests(folder) == first
    # a forged digest under stamps that no longer match is not used
    after = next(folder.glob("module_0030.*after_optimizations.txt"))
    after.write_text(after.read_text().replace(" multiply(", " subtract("))
    os.utime(after, (old, old))  # same size and mtime; the change time moved
    changed = oc.input_digests(folder)
    assert changed is not None and changed != first
    name = after.name
    assert [d for d in changed if d[0] == name] != [d for d in first if d[0] == name]
    for bad in ("{", json.dumps({**kept, "version": 9}), json.dumps({**kept, "files": []})):
        _sign(index, bad, index.name)
        assert oc.input_digests(folder) == changed
    # an index naming the old digest under the new stamps, unsigned, is not believed
    st = after.stat()
    stale = {**kept, "files": {**kept["files"]}}
    old_sha = next(d[2] for d in first if d[0] == name)
    stale["files"][name] = [
        st.st_dev,
        st.st_ino,
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
        old_sha,
    ]
    index.write_bytes(b"0" * 64 + b"\n" + json.dumps(stale).encode())
    assert oc.input_digests(folder) == changed


def test_a_file_changed_while_it_ran_keeps_nothing(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The files are stat'ed once before the command and again after it: one changed in
    between (the output may be of either state) keeps nothing; unchanged, it is kept."""
    import hloscope.inspection

    folder = tmp_path / "dump"
    shutil.copytree(BARE, folder)
    old = 1_000_000_000  # not racy
    for p in folder.iterdir():
        os.utime(p, (old, old))
    after = next(folder.glob("module_0030.*after_optimizations.txt"))
    inspect_run = hloscope.inspection.inspect_run

    def touching(*args: Any, **kwargs: Any) -> Any:
        os.utime(after, (old + 5, old + 5))  # the same bytes, another time
        return inspect_run(*args, **kwargs)

    monkeypatch.setattr(hloscope.inspection, "inspect_run", touching)
    args = ["report", str(folder), "--json"]
    plain = _invoke(args)
    assert not _entries(cache)
    monkeypatch.setattr(hloscope.inspection, "inspect_run", inspect_run)
    assert _invoke(args) == plain
    assert len(_entries(cache)) == 1


def test_a_module_file_linked_out_of_its_folder_is_never_opened(tmp_path: Path) -> None:
    """For one module file, the files of its module beside it are hashed too; one that
    links out of the folder counts by its kind alone, whatever it names."""
    import stat

    folder = tmp_path / "dump"
    folder.mkdir()
    before = dump_file(BARE, "module_0030.*before_optimizations.txt")
    shutil.copy(before, folder / before.name)
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("HloModule secret\n")
    linked = folder / before.name.replace("before_optimizations", "cpu_after_optimizations")
    linked.symlink_to(elsewhere)
    digests = oc.input_digests(folder / before.name)
    assert digests is not None
    assert [d for d in digests if d[0] == linked.name] == [[linked.name, stat.S_IFLNK, ""]]
    elsewhere.write_text("HloModule other\n")
    assert oc.input_digests(folder / before.name) == digests
