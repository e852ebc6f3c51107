"""The user's output cache (`hloscope.cli.output_cache`): a later command on unchanged
files prints and writes what `--no-cache` does, byte for byte, without parsing; any
change to the files, the options or the terminal computes again; an entry of another
shape, under another key or not a regular file is computed again; the folder stays
within its size, least recently used out first."""

from __future__ import annotations

import io
import json
import mmap
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hloscope import user_cache
from hloscope.cli import app
from hloscope.cli import output_cache as oc
from hloscope.store import signature, signer
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
    """A kept digest index's JSON (its signature line left out)."""
    return json.loads(_data(path))


def _data(path: Path) -> bytes:
    """A kept file's bytes, its signature line left out."""
    return path.read_bytes().partition(b"\n")[2]


def _sign(path: Path, data: str | bytes, key: str | None = None) -> None:
    """Write `data` as this user's hloscope would sign it under `key` (the entry's own by
    default): what a forger who had the secret could write, so that the shape checks
    after the signature are what is tested."""
    data = data.encode() if isinstance(data, str) else data
    mac = signature(key or path.stem, data)
    assert mac is not None
    path.write_bytes(mac.encode() + b"\n" + data)


def _entries(cache: Path) -> list[Path]:
    """The kept outputs (not the digest indexes beside them)."""
    return list(cache.glob("*.out"))


def _records(*records: tuple[list[Any], bytes]) -> bytes:
    """An entry's records, as `output_cache.Entry` reads them: each a line of JSON, then
    its bytes."""
    return b"".join(json.dumps(head).encode() + b"\n" + body for head, body in records)


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
    kept = _data(entry)
    head = ["hloscope output", 2]
    assert kept == _records((head, b""), ([1, len(plain[0])], plain[0].encode()))
    forged = [
        _records((["hloscope output", 1], b""), ([1, 7], b"forged\n")),  # another version
        _records(([1, 7], b"forged\n")),  # no first record
        _records((head, b""), ([3, 7], b"forged\n")),  # no such stream
        _records((head, b""), ([True, 7], b"forged\n")),
        _records((head, b""), ([1, -1], b"")),
        _records((head, b""), ([1, "7"], b"forged\n")),
        _records((head, b""), (["file", 1, 5], b"x")),  # a file named by a number
        _records((head, b""), (["file", 1], b"x")),
        _records((head, b""), ([1, 7, "name"], b"forged\n")),
        _records((head, b""), ([1, 9], b"forged\n")),  # past the end
        _records((head, b""), ([1, 7], b"forged\n")) + b"[1, 2]",  # a line cut short
        _records((head, b""), ([1, 7], b"forged\n")) + b"\xff\n",
        _records((head, b""), ({"kind": 1}, b"")),
        b"",
        b"{}",
    ]
    for bad in forged:
        _sign(entry, bad)
        assert _invoke(args) == plain
        assert _data(entry) == kept  # recomputed and kept again
    # what a forger with the secret could write, read as an entry: the check is the key
    _sign(entry, _records((head, b""), ([1, 7], b"forged\n")))
    assert _invoke(args) == ("forged\n", "")
    # an entry of the right shape with another output, not signed by this user's key
    mine = _records((head, b""), ([1, 7], b"forged\n"))
    for mac in (b"", b"0" * 64, (signature("another key", mine) or "").encode()):
        entry.write_bytes(mac + b"\n" + mine)
        assert _invoke(args) == plain
    entry.write_bytes(b"\xff garbage")
    assert _invoke(args) == plain
    target = cache / "elsewhere.txt"
    target.write_bytes(entry.read_bytes())
    entry.unlink()
    entry.symlink_to(target)  # never read through a link
    _sign(target, mine, entry.stem)
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
    total = sum(p.stat().st_size for p in cache.glob("*"))
    monkeypatch.setattr(oc, "cache_limit", lambda: total + 1)  # full: the next one evicts
    _invoke(["ops", str(BARE), "--unfused"])
    left = set(cache.glob("*"))
    assert by_age[0] not in left  # the least recently used went first
    assert by_age[-1] in left  # the one just read stays
    assert sum(p.stat().st_size for p in left) <= total + 1
    monkeypatch.setattr(oc, "cache_limit", lambda: 0)  # 0: keeps nothing
    before = set(cache.glob("*"))
    _invoke(["ops", str(BARE), "--op", "dot"])
    assert set(cache.glob("*")) == before


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


def _settled_folder(tmp_path: Path) -> Path:
    """A folder of one file, its times long past (not racy: it may be kept)."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text("a")
    os.utime(folder / "a.txt", (1_000_000_000, 1_000_000_000))
    return folder


def test_an_output_is_written_to_its_entry_as_it_is_printed(
    cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What a command prints goes to a temporary file in the cache folder as it is
    printed (never held whole: a 341 MB document would be); the entry kept is it,
    signed, and reads back as printed, stdout and stderr in their order."""
    folder = _settled_folder(tmp_path)
    line = "x" * 1023 + "\n"
    sizes = []

    def body() -> list[Path]:
        for i in range(3 * 1024):  # 3 MB, in 1 kB writes
            sys.stdout.write(line)
            if i % 1024 == 1023:
                sizes.append(sum(p.stat().st_size for p in cache.glob(".*.tmp")))
        sys.stderr.write("done\n")
        return []

    oc.cached_command(folder, "test", {}, body)
    printed = capsys.readouterr()
    assert printed.out == line * 3 * 1024 and printed.err == "done\n"
    assert sizes[0] > 1 << 19 and sizes[1] > sizes[0] + (1 << 19)  # on disk while printing
    assert not list(cache.glob(".*.tmp"))
    (entry,) = _entries(cache)
    found = oc.Entry.read(_data(entry))
    assert found is not None
    assert b"".join(t for n, t in found.chunks if n == 1) == printed.out.encode()
    assert found.chunks[-1] == (2, b"done\n")

    oc.cached_command(folder, "test", {}, lambda: pytest.fail("computed again"))
    assert capsys.readouterr() == printed


def test_an_output_not_kept_leaves_nothing_behind(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command that fails, is interrupted or prints more than an entry holds keeps
    nothing and leaves no temporary file; one left by a process killed a day ago goes
    when the folder is next trimmed, one being written now stays."""
    folder = _settled_folder(tmp_path)

    def failing() -> list[Path]:
        print("half an output")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        oc.cached_command(folder, "test", {}, failing)
    assert not list(cache.iterdir())
    monkeypatch.setattr(oc, "_MAX_ENTRY_BYTES", 100)
    oc.cached_command(folder, "test", {}, lambda: print("y" * 200) or [])
    assert not list(cache.iterdir())
    monkeypatch.setattr(oc, "_MAX_ENTRY_BYTES", 1 << 20)
    abandoned, writing = cache / ".entry.1.a.tmp", cache / ".entry.2.b.tmp"
    for p in (abandoned, writing):
        p.write_bytes(b"part of an entry")
    day_ago = time.time() - 25 * 3600
    os.utime(abandoned, (day_ago, day_ago))
    oc.cached_command(folder, "test", {}, lambda: print("kept") or [])
    assert len(_entries(cache)) == 1
    assert not abandoned.exists() and writing.exists()


def test_printed_back_to_a_pipe_byte_for_byte(cache: Path, tmp_path: Path) -> None:
    """In a process of its own, stdout a pipe: what is printed back (as the bytes kept,
    not decoded and encoded again) equals what was computed, stderr's lines included,
    and `--no-cache`'s; under another encoding of stdout, it is printed as text."""
    import subprocess

    env = {**os.environ, "HLOSCOPE_CACHE_DIR": str(cache.parent), oc.CACHE_MB_VARIABLE: "64"}
    args = [sys.executable, "-m", "hloscope", "report", str(BARE)]

    def run(*more: str, **extra: str) -> tuple[bytes, bytes]:
        done = subprocess.run(
            [*args, *more], env={**env, **extra}, capture_output=True, check=True, cwd=tmp_path
        )
        return done.stdout, done.stderr

    plain = run("--no-cache")
    assert run() == plain  # computed and kept
    (entry,) = _entries(cache)
    kept = entry.stat().st_ino  # a new entry would be a new file (renamed into place)
    assert run() == plain  # printed back
    assert "→".encode() in plain[0]  # not ASCII: printed as UTF-8 bytes
    wide = run("--no-cache", PYTHONIOENCODING="utf-16")
    assert wide[0] != plain[0] and wide[0].decode("utf-16") == plain[0].decode()
    assert run(PYTHONIOENCODING="utf-16") == wide  # the UTF-8 run's entry, as text
    assert [p.stat().st_ino for p in _entries(cache)] == [kept]


@pytest.mark.parametrize("mapped", [False, True])
def test_a_big_entry_is_checked_whole_as_it_is_read(
    mapped: bool, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry of several blocks reads back whole (`mapped`: read by a thread into
    memory of its own while this one checks it, a block at a time); one byte changed
    anywhere, or the file cut short, and it is not there."""
    monkeypatch.setattr(user_cache, "_MAPPED_BYTES", 1 << 20)
    monkeypatch.setattr(user_cache, "_MAPPED_BLOCK", 3 << 20)

    def read(key: str, max_bytes: int) -> Any:
        if mapped:
            return user_cache.read_entry(path, key, max_bytes, mapped=True)
        return user_cache.read_entry(path, key, max_bytes)

    key = "0" * 64
    path = cache / f"{key}.out"
    data = os.urandom(1 << 20) * 20 + b"tail"  # 20 MB: seven blocks
    assert user_cache.write_entry(path, key, data, 64 << 20)
    found = read(key, 64 << 20)
    assert found is not None and found[:] == data
    assert type(found) is (mmap.mmap if mapped else bytes)
    assert read("1" * 64, 64 << 20) is None  # another key
    kept = path.read_bytes()
    for at in (70, len(kept) // 2, len(kept) - 1):
        path.write_bytes(kept[:at] + bytes([kept[at] ^ 1]) + kept[at + 1 :])
        assert read(key, 64 << 20) is None
    path.write_bytes(kept[:-1])
    assert read(key, 64 << 20) is None
    path.write_bytes(kept)
    assert read(key, 20 << 20) is None  # over the size asked


def test_a_file_that_ends_while_it_is_read_is_not_there() -> None:
    """The reading thread stops where the file ends (it shrank after its size was
    taken): what falls short is not returned, whatever its signature."""
    mac = signer("key")
    assert mac is not None
    short = io.BufferedReader(io.BytesIO(b"x" * 1000))  # type: ignore[arg-type]
    assert user_cache._read_signing(short, 5000, mac) is None
    whole = io.BufferedReader(io.BytesIO(b"x" * 5000))  # type: ignore[arg-type]
    found = user_cache._read_signing(whole, 5000, mac)
    assert found is not None and found[:] == b"x" * 5000
