"""Hostile and malformed run folders through the real CLI (issue 14): escapes, reads out
of the folder, devices and pipes given as runs, unwritable outputs.

Every command runs as a subprocess of `python -m hloscope` (real stdout and stderr, real
exit codes), each under a timeout so that a hang fails the test instead of the suite.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hloscope.frameworks import Framework
from hloscope.manifest import RunManifest
from hloscope.render.format import json_printable, printable
from tests.conftest import DATA

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 60

# Clear screen, an OSC 52 clipboard write, a cursor move, BEL, a lone C1 CSI, a bidi
# override, a line separator: what a hostile dump may carry in its names.
CLEAR = "\x1b[2J"
OSC52 = "\x1b]52;c;aGVsbG8=\x07"
PAYLOAD = CLEAR + OSC52 + "\x1b[5;5H" + "\x07" + "\x9b31m" + "\u202e" + "\u2028"
SGR = re.compile(r"\x1b\[[0-9;]*m")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def hloscope(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """Run the CLI as users do, colours forced on (rich's own SGR must pass)."""
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "FORCE_COLOR": "1", "COLUMNS": "120"}
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-m", "hloscope", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="surrogateescape",
        timeout=TIMEOUT_S,
        cwd=cwd,
        env=environ,
    )


def assert_inert(text: str) -> None:
    """Only colour sequences reach the terminal; every other control shows escaped."""
    rest = SGR.sub("", text)
    found = sorted({f"U+{ord(c):04X}" for c in CONTROL.findall(rest)})
    assert not found, f"raw control characters reach the terminal: {found}\n{text[:2000]}"


def hostile_run(root: Path) -> Path:
    """tests/data/tf_dense_relu as a run folder whose op names, op types, custom-call
    target, file names and run.json carry terminal escape sequences."""
    run = root / "run"
    (run / "dump").mkdir(parents=True)
    for f in (DATA / "tf_dense_relu").glob("*.txt"):
        text = f.read_text(encoding="utf-8")
        text = text.replace('op_name="MatMul"', f'op_name="MatMul{PAYLOAD}"')
        text = text.replace('op_type="Relu"', f'op_type="Relu{PAYLOAD}"')
        text = text.replace(
            "dot(%arg0.1, %arg1.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
            f'custom-call(%arg0.1, %arg1.1), custom_call_target="cc{PAYLOAD}"',
        )
        name = f.name.replace("a_inference_dense_relu_12", "evil" + PAYLOAD)
        (run / "dump" / name).write_text(text, encoding="utf-8")
    manifest = RunManifest(
        source="dump",
        frameworks=(Framework.TENSORFLOW,),
        platform="cpu",
        device="cpu" + PAYLOAD,
        command=("hloscope", "dump", f"x{PAYLOAD}.py"),
        status="ok",
    )
    (run / "run.json").write_text(manifest.dumps(), encoding="utf-8")
    return run


def hostile_profile(root: Path) -> Path:
    """The jax_mlp profile as a Chrome trace whose kernel names carry the payload, in a
    folder whose name does too."""
    folder = root / f"prof{CLEAR}{OSC52}"
    (source,) = (DATA / "jax_mlp_profile" / "plugins").rglob("*.trace.json.gz")
    doc = json.loads(gzip.decompress(source.read_bytes()))
    for event in doc["traceEvents"]:
        if str(event.get("name", "")).startswith("ynn_fusion"):
            event["name"] += PAYLOAD
    target = folder / "plugins" / "profile" / "1" / "vm.trace.json.gz"
    target.parent.mkdir(parents=True)
    target.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return folder


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("hostile")
    return hostile_run(root), hostile_profile(root)


@pytest.mark.parametrize(
    ("args", "code", "shown"),
    [
        (["report", "{run}"], 0, True),
        (["ops", "{run}"], 0, True),
        (["diff", "{run}", "{run}"], 0, True),
        (["check", "{run}", "--max-kernels", "99"], 0, True),
        (["check", "{run}", "--max-kernels", "0"], 1, True),
        (["report", "{run}", "-M", f"none{CLEAR}"], 2, True),
        (["parse", "{file}"], 0, False),  # prints the HloModule name, which has no escapes
        (["profile", "{profile}"], 0, True),
        (["profile", "{profile}/missing"], 2, True),
    ],
)
def test_escape_sequences_are_shown_not_obeyed(
    hostile: tuple[Path, Path], args: list[str], code: int, shown: bool
) -> None:
    run, profile = hostile
    (file,) = (run / "dump").glob("*after_optimizations.txt")
    given = [a.format(run=run, file=file, profile=profile) for a in args]
    result = hloscope(*given)
    assert result.returncode == code, result.stderr
    assert_inert(result.stdout + result.stderr)
    assert "Traceback" not in result.stderr
    # the payload is there, visibly escaped, not dropped
    assert ("\\x1b[2J" in result.stdout + result.stderr) == shown


@pytest.mark.parametrize(
    "args",
    [
        ["report", "{run}", "--json"],
        ["ops", "{run}", "--json"],
        ["diff", "{run}", "{run}", "--json"],
        ["parse", "{file}", "--json"],
        ["profile", "{profile}", "--json"],
    ],
)
def test_json_output_is_escaped_and_keeps_the_exact_text(
    hostile: tuple[Path, Path], args: list[str]
) -> None:
    run, profile = hostile
    (file,) = (run / "dump").glob("*after_optimizations.txt")
    result = hloscope(*(a.format(run=run, file=file, profile=profile) for a in args))
    assert result.returncode == 0, result.stderr
    assert_inert(result.stdout)
    # the document still holds the exact name (the BEL aside, rich never sees JSON)
    assert any(PAYLOAD in s for s in strings_of(json.loads(result.stdout)))


def strings_of(doc: object) -> list[str]:
    """Every string in a JSON document, keys included."""
    out, todo = [], [doc]
    while todo:
        x = todo.pop()
        if isinstance(x, str):
            out.append(x)
        elif isinstance(x, dict):
            todo.extend([*x.keys(), *x.values()])
        elif isinstance(x, list):
            todo.extend(x)
    return out


def test_printable_escapes_every_control_and_keeps_lines() -> None:
    controls = [chr(c) for c in [*range(0x20), *range(0x7F, 0xA0)] if chr(c) not in "\t\n"]
    controls += ["\u2028", "\u2029", "\u202e", "\u2066", "\ud800"]
    shown = printable("a\tb\n" + "".join(controls))
    assert shown.startswith("a\tb\n")
    assert all(ord(c) >= 0x20 and not 0x7F <= ord(c) < 0xA0 for c in shown[4:])
    assert "\\x1b" in shown and "\\x9b" in shown and "\\u2028" in shown and "\\ud800" in shown
    assert printable("plain → text µs") == "plain → text µs"


def test_json_printable_is_the_same_json() -> None:
    doc = {"name": "a\x1b\x85\x9b\u2028\u2029\u202e\x7fz", "n": [1, "é"]}
    text = json_printable(json.dumps(doc, ensure_ascii=False))
    assert not CONTROL.search(text)
    assert json.loads(text) == doc
    # all ASCII (the text of most documents): DEL is escaped there too, nothing else
    ascii_doc = {"name": "a\x7fz\x1b", "n": [1, "\x7f"]}
    text = json_printable(json.dumps(ascii_doc, ensure_ascii=False))
    assert text.isascii() and "\x7f" not in text and json.loads(text) == ascii_doc
    assert json_printable("{}\n") == "{}\n"


# --- reading stays inside the run folder -------------------------------------------------


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        ("report", "kernels by kind: custom-call:cc\\x1b[2J\\x1b]52;c;aGVsbG8="),
        ("report", "\\u202e\\u2028 1 · kLoop 1"),
        ("report", "\\u2028.1 [module 0000]"),
        ("ops", "alone → MatMul.2 [custom-call:cc\\x1b[2J\\x1b]52;c;aGVsbG8=\\x1b[5;5H"),
    ],
)
def test_escaped_names_are_laid_out_as_shown(
    hostile: tuple[Path, Path], command: str, shown: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On an 80-column terminal rich measures, wraps and cuts the escaped text (`\\x1b`
    takes 4 cells, ESC none): laid out raw, lines came out wider than the terminal and
    were cropped, losing what followed a name (the kernel an op went to)."""
    from typer.testing import CliRunner

    from hloscope.cli import app
    from hloscope.cli import inspect as cli_inspect

    for module in (sys.modules["hloscope.cli.app"], cli_inspect):  # `cli.app` is the app
        monkeypatch.setattr(module, "_stdout_is_terminal", lambda: True)
    env = {"COLUMNS": "80", "NO_COLOR": "1", "TERM": "dumb"}
    result = CliRunner().invoke(app, [command, str(hostile[0])], env=env)
    assert result.exit_code == 0, result.output
    assert_inert(result.stdout)
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    assert shown in " ".join(result.stdout.split())


SECRET = "TOPSECRET-do-not-print"


@pytest.fixture
def leaky_run(tmp_path: Path) -> Path:
    """A run folder whose dump holds a link to a file outside it, named as a module."""
    secret = tmp_path / "secret.txt"
    secret.write_text(f"{SECRET} first line\n", encoding="utf-8")
    run = tmp_path / "run"
    shutil.copytree(DATA / "tf_dense_relu", run / "dump")
    (run / "dump" / "module_0099.leak.before_optimizations.txt").symlink_to(secret)
    (run / "dump" / "module_0098.leak2.cpu_after_optimizations.txt").symlink_to(secret)
    (run / "run.json").write_text(RunManifest(source="dump").dumps(), encoding="utf-8")
    return run


@pytest.mark.parametrize("extra", [[], ["--json"], ["--all"]])
def test_links_out_of_the_run_folder_are_not_read(leaky_run: Path, extra: list[str]) -> None:
    result = hloscope("report", str(leaky_run), *extra)
    assert result.returncode == 0, result.stderr
    assert SECRET not in result.stdout + result.stderr
    assert "leak" not in result.stdout
    # Not read, but not unseen either: one warning line each, on stderr.
    assert sorted(result.stderr.splitlines()) == [
        "hloscope: warning: dump/module_0098.leak2.cpu_after_optimizations.txt: "
        "a link out of the run folder; not read",
        "hloscope: warning: dump/module_0099.leak.before_optimizations.txt: "
        "a link out of the run folder; not read",
    ]


def test_fifos_and_broken_links_named_as_dumps_are_named_not_read(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(DATA / "tf_dense_relu", run / "dump")
    os.mkfifo(run / "dump" / "module_0097.fifo.before_optimizations.txt")  # would hang
    (run / "dump" / "module_0096.gone.before_optimizations.txt").symlink_to("nowhere")
    (run / "dump" / "module_0095.\x1b[2J.before_optimizations.txt").symlink_to("/etc/passwd")
    (run / "run.json").write_text(RunManifest(source="dump").dumps(), encoding="utf-8")
    result = hloscope("report", str(run))
    assert result.returncode == 0, result.stderr
    assert "root:" not in result.stdout + result.stderr
    assert sorted(result.stderr.splitlines()) == [
        "hloscope: warning: dump/module_0095.\\x1b[2J.before_optimizations.txt: "
        "a link out of the run folder; not read",
        "hloscope: warning: dump/module_0096.gone.before_optimizations.txt: "
        "a broken link; not read",
        "hloscope: warning: dump/module_0097.fifo.before_optimizations.txt: "
        "not a regular file (a FIFO or a device); not read",
    ]


def test_links_out_of_the_run_folder_stay_out_of_the_html(leaky_run: Path) -> None:
    page = leaky_run.parent / "page.html"
    result = hloscope("report", str(leaky_run), "--html", str(page))
    assert result.returncode == 0, result.stderr
    assert SECRET not in page.read_text(encoding="utf-8")


def test_links_inside_the_run_folder_are_read(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(DATA / "tf_dense_relu", run / "kept")
    (run / "dump").mkdir()
    for f in (run / "kept").glob("*.txt"):
        (run / "dump" / f.name).symlink_to(f)
    (run / "run.json").write_text(RunManifest(source="dump").dumps(), encoding="utf-8")
    result = hloscope("report", str(run), "--json")
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)["modules"]) == 1


def test_a_dump_folder_linked_out_of_the_run_folder_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    shutil.copytree(DATA / "tf_dense_relu", outside)
    run = tmp_path / "run"
    run.mkdir()
    (run / "dump").symlink_to(outside)
    (run / "run.json").write_text(RunManifest(source="dump").dumps(), encoding="utf-8")
    result = hloscope("report", str(run))
    assert result.returncode == 2
    assert "link out of the run folder" in result.stderr
    assert result.stderr.count("\n") == 1


def test_a_manifest_linked_out_of_the_run_folder_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "other.json"
    outside.write_text(RunManifest(source="dump", device=SECRET).dumps(), encoding="utf-8")
    shutil.copytree(DATA / "tf_dense_relu", tmp_path / "run" / "dump")
    (tmp_path / "run" / "run.json").symlink_to(outside)
    result = hloscope("report", str(tmp_path / "run"), "--json")
    assert result.returncode == 2 and "link out of the run folder" in result.stderr
    assert SECRET not in result.stdout + result.stderr


def test_a_file_that_is_not_hlo_is_not_quoted(tmp_path: Path) -> None:
    shutil.copytree(DATA / "tf_dense_relu", tmp_path / "run")
    (tmp_path / "run" / "module_0097.notes.before_optimizations.txt").write_text(
        f"{SECRET} = 1\nmore\n", encoding="utf-8"
    )
    for extra in ([], ["--json"]):
        result = hloscope("report", str(tmp_path / "run"), *extra)
        assert SECRET not in result.stdout + result.stderr
        assert "Traceback" not in result.stderr


def test_profile_links_out_and_devices_are_not_read(tmp_path: Path) -> None:
    shutil.copytree(DATA / "jax_mlp_profile", tmp_path / "run")
    profile = tmp_path / "run" / "plugins" / "profile"
    shutil.rmtree(profile)
    (profile / "1").mkdir(parents=True)
    (profile / "1" / "host.xplane.pb").symlink_to("/dev/zero")  # read until memory ran out
    result = hloscope("profile", str(tmp_path / "run"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith("hloscope: error:") and result.stderr.count("\n") == 1
    result = hloscope("report", str(tmp_path / "run"), "--html", str(tmp_path / "p.html"))
    assert result.returncode == 0, result.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_profile_does_not_hang(tmp_path: Path) -> None:
    shutil.copytree(DATA / "jax_mlp_profile", tmp_path / "run")
    (xplane,) = (tmp_path / "run" / "plugins").rglob("*.xplane.pb")
    xplane.unlink()
    os.mkfifo(xplane)  # opened for reading, it blocked `report` forever
    result = hloscope("profile", str(tmp_path / "run"))  # the trace.json beside it is read
    assert result.returncode == 0 and "Traceback" not in result.stderr
    (trace,) = (tmp_path / "run" / "plugins").rglob("*.trace.json.gz")
    trace.unlink()
    result = hloscope("profile", str(tmp_path / "run"))
    assert result.returncode == 2 and "not a regular file" in result.stderr
    result = hloscope("report", str(tmp_path / "run"), "--html", str(tmp_path / "p.html"))
    assert result.returncode == 0, result.stderr


def _side_files_run(root: Path) -> dict[str, Path]:
    """A profiled run with every file hloscope reads beside the HLO: XLA's buffer
    assignment and memory-usage reports, a priority-fusion log, JAX's compile record."""
    run = root / "run"
    shutil.copytree(DATA / "jax_mlp_profile" / "hlo", run / "dump")
    shutil.copytree(DATA / "jax_mlp_profile" / "plugins", run / "profile" / "jax" / "plugins")
    manifest = RunManifest(source="dump", profile={"dir": "profile", "framework": "jax"})
    (run / "run.json").write_text(manifest.dumps(), encoding="utf-8")
    for f in (DATA / "memory_reports").glob("module_0030.jit_mlp.cpu_after_optimizations-*"):
        shutil.copy(f, run / "dump" / f.name)
    log = run / "dump" / "module_0030.jit_mlp.priority_fusion_dump.txt"
    shutil.copy(DATA / "gpu_fusion_log" / "module_0004.jit_f.priority_fusion_dump.txt", log)
    compiles = run / "profile" / "jax" / "compiles.json"
    compiles.write_text(json.dumps({"compiles": [["jit(mlp)", 0.05]]}), encoding="utf-8")
    return {
        "buffer assignment": next((run / "dump").glob("*-buffer-assignment.txt")),
        "memory usage": next((run / "dump").glob("*-memory-usage-report.txt")),
        "fusion log": log,
        "compile record": compiles,
        "run": run,
    }


@pytest.mark.parametrize("what", ["buffer assignment", "memory usage", "fusion log", "compile record"])  # fmt: skip
@pytest.mark.parametrize("kind", ["link out", "fifo", "/dev/zero"])
def test_files_beside_the_dump_are_read_only_inside_the_run(
    tmp_path: Path, what: str, kind: str
) -> None:
    """Issue 25: these were read through a link out of the run (and shown in `report`
    and the page), a FIFO hung the reading, /dev/zero filled memory."""
    files = _side_files_run(tmp_path)
    run, target = files["run"], files[what]
    secret = tmp_path / "secret.txt"
    secret.write_text(
        f"allocation 0: size 8, parameter 0:\n value: <1 {SECRET} @0> (size=8,offset=0)\n"
        f'fusion_steps {{ producer_ineligible {{ producer_name: "x" reason: "{SECRET}" }} }}\n',
        encoding="utf-8",
    )
    target.unlink()
    if kind == "link out":
        target.symlink_to(secret)
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/zero")
    page = tmp_path / "page.html"
    for args in (["report", str(run), "--html", str(page)], ["report", str(run), "--json"], ["profile", str(run)]):  # fmt: skip
        result = hloscope(*args)
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
        assert SECRET not in result.stdout + result.stderr
    assert SECRET not in page.read_text(encoding="utf-8")


# --- devices, pipes and unwritable outputs ----------------------------------------------


@pytest.mark.parametrize("command", ["report", "ops", "parse", "check", "graph", "diff", "profile"])
@pytest.mark.parametrize("kind", ["devnull", "fifo"])
def test_devices_and_pipes_given_as_run_are_one_line(
    tmp_path: Path, command: str, kind: str
) -> None:
    if kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs on this platform")
        path = tmp_path / "fifo"
        os.mkfifo(path)
    else:
        path = Path(os.devnull)
    args = {"check": ["--max-kernels", "1"], "diff": [str(DATA / "tf_dense_relu")]}
    result = hloscope(command, str(path), *args.get(command, []))
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("hloscope: error:") and result.stderr.count("\n") == 1
    assert "not a regular file" in result.stderr


@pytest.mark.parametrize("option", ["--html", "--json"])
def test_diff_html_into_a_missing_folder_is_one_line(tmp_path: Path, option: str) -> None:
    page = tmp_path / "no" / "such" / "folder" / "diff.html"
    run = str(DATA / "tf_dense_relu")
    extra = ["--html", str(page)] if option == "--json" else []
    result = hloscope("diff", run, run, "--html", str(page), *extra)
    assert result.returncode == 2
    assert result.stderr.startswith("hloscope: error: --html") and result.stderr.count("\n") == 1


# --- output proportional to what is reported ---------------------------------------------


def test_report_json_does_not_grow_with_the_square_of_a_fusion(tmp_path: Path) -> None:
    """Every op of an N-op fusion shares it with N-1 others: 3,000 ops made 320 MB."""
    n = 1500
    ops = [f'  %add.{i} = f32[8]{{0}} add(%PREV, %P), metadata={{op_name="b/add_{i}"}}'
           for i in range(n)]  # fmt: skip

    def chain(p: str) -> list[str]:
        prev, out = p, []
        for i, line in enumerate(ops):
            out.append(line.replace("PREV", prev).replace("%P", f"%{p}"))
            prev = f"add.{i}"
        out[-1] = "  ROOT " + out[-1].lstrip()
        return out

    layout = "entry_computation_layout={(f32[8]{0})->f32[8]{0}}"
    before = [f"HloModule m, {layout}", "ENTRY %main (p: f32[8]) -> f32[8] {"]
    before += ["  %p = f32[8]{0} parameter(0)", *chain("p"), "}"]
    after = [f"HloModule m, is_scheduled=true, {layout}", "%fc (q: f32[8]) -> f32[8] {"]
    after += [
        "  %q = f32[8]{0} parameter(0)",
        *chain("q"),
        "}",
        "ENTRY %main (p: f32[8]) -> f32[8] {",
    ]
    after += [
        "  %p = f32[8]{0} parameter(0)",
        "  ROOT %f = f32[8]{0} fusion(%p), kind=kLoop, calls=%fc",
        "}",
    ]
    (tmp_path / "module_1.m.before_optimizations.txt").write_text("\n".join(before) + "\n")
    (tmp_path / "module_1.m.cpu_after_optimizations.txt").write_text("\n".join(after) + "\n")
    text = sum(f.stat().st_size for f in tmp_path.iterdir())
    result = hloscope("report", str(tmp_path), "--json")
    assert result.returncode == 0, result.stderr
    (m,) = json.loads(result.stdout)["modules"]
    shared = [p for p in m["provenance"] if p["shares_with_count"] == n - 1]
    assert len(shared) == n and all(len(p["shares_with"]) == 20 for p in shared)
    assert len(result.stdout) < 10 * text  # was about 270x at this size


def test_read_regular_allocates_what_the_file_holds_not_its_limit(tmp_path: Path) -> None:
    import tracemalloc

    from hloscope.files import read_regular

    path = tmp_path / "small.txt"
    path.write_bytes(b"x" * 4096)
    tracemalloc.start()
    try:
        assert read_regular(path, 8 * 1024**3) == b"x" * 4096
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1024**2  # `read(limit + 1)` allocated the 8 GiB limit up front
    with pytest.raises(OSError, match="more than the 4,095 allowed"):
        read_regular(path, 4095)


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="needs Linux's /proc")
def test_read_regular_reads_past_a_size_the_file_does_not_report() -> None:
    from hloscope.files import read_regular

    # procfs files say they hold 0 bytes; what grew past the stat is still read, capped
    assert b"Name:" in read_regular("/proc/self/status", 1 << 20)
    with pytest.raises(OSError, match="more than the 10 bytes allowed"):
        read_regular("/proc/self/status", 10)


def test_decompress_xz_reads_like_lzma_within_a_bound() -> None:
    import lzma

    from hloscope.files import decompress_xz

    two = lzma.compress(b"a" * 10) + lzma.compress(b"b" * 10)
    for data in (lzma.compress(b""), two, two + b"not a stream"):
        assert decompress_xz(data, 20) == lzma.decompress(data)
    with pytest.raises(ValueError, match="more than the 19 bytes"):
        decompress_xz(two, 19)
    with pytest.raises(lzma.LZMAError, match="end-of-stream"):
        decompress_xz(lzma.compress(b"x" * 1000)[:-12], 1 << 20)
    with pytest.raises(lzma.LZMAError):
        decompress_xz(b"not xz at all", 1 << 20)


def test_walk_stays_inside_and_needs_no_recursion(tmp_path: Path) -> None:
    """files.walk (issue 25): links out are listed, not followed; a link back up is
    entered once; FIFOs are left alone; nothing below MAX_DEPTH; no RecursionError at
    1,200 levels (rglob and os.walk recurse per level)."""
    from hloscope.files import MAX_DEPTH, walk

    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    (root / "a" / "f.txt").write_text("x")
    (root / "a" / "up").symlink_to(root)  # a loop
    (root / "out").symlink_to(tmp_path)  # a link out
    os.mkfifo(root / "pipe")
    deep = root / "deep"
    deep.mkdir()
    chain = [deep]
    for _ in range(1200):
        chain.append(chain[-1] / "d")
        chain[-1].mkdir()
    (chain[-1] / "hidden.txt").write_text("x")
    try:
        found = walk(root)
    finally:
        (chain[-1] / "hidden.txt").unlink()
        for folder in reversed(chain):
            folder.rmdir()
    assert found.files == [root / "a" / "f.txt"]
    assert found.links_out == [root / "out"]
    assert found.special == [root / "pipe"]
    assert found.too_deep == 1 and len(found.folders) == 1 + MAX_DEPTH  # a, and 32 levels


def test_walk_selects_files_by_name_as_it_finds_them(tmp_path: Path) -> None:
    """files.walk's `select` lists only the files it names, links inside the folder
    included, and changes nothing else it finds; `has_profile` searches with it: a
    link out of the folder named as a profile is no profile."""
    from hloscope.files import walk
    from hloscope.timing.sources import has_profile

    root = tmp_path / "root"
    (root / "p" / "q").mkdir(parents=True)
    (root / "p" / "q" / "a.xplane.pb").write_bytes(b"x")
    (root / "notes.txt").write_text("x")
    (root / "inside.xplane.pb").symlink_to(root / "notes.txt")
    (tmp_path / "far.xplane.pb").write_bytes(b"x")
    (root / "out.xplane.pb").symlink_to(tmp_path / "far.xplane.pb")
    os.mkfifo(root / "pipe.xplane.pb")
    every = walk(root)
    found = walk(root, select=lambda name: name.endswith(".xplane.pb"))
    assert every.files == [root / "inside.xplane.pb", root / "notes.txt", root / "p/q/a.xplane.pb"]
    assert found.files == [root / "inside.xplane.pb", root / "p" / "q" / "a.xplane.pb"]
    assert (found.folders, found.links_out, found.special) == (
        every.folders,
        every.links_out,
        every.special,
    )
    assert found.links_out == [root / "out.xplane.pb"]
    assert has_profile(root)
    (root / "p" / "q" / "a.xplane.pb").unlink()
    (root / "inside.xplane.pb").unlink()
    assert not has_profile(root)  # the link out, and the FIFO, are none


def test_a_run_of_which_nothing_could_be_read_is_an_error_not_an_empty_report(
    tmp_path: Path,
) -> None:
    """A malformed module file: `report` (text and JSON) and `ops` stop with XLA's kind
    of one-line error and exit 2; a folder where one module of several is damaged still
    reports, showing why that one could not be read."""
    bad = tmp_path / "bad.txt"
    bad.write_text(
        "HloModule x\n\nENTRY e {\n  ROOT p = f32[4611686018427387904] parameter(0)\n}\n"
    )
    for args in (["report"], ["report", "--json"], ["ops"]):
        done = hloscope(*args, str(bad), "--no-cache")
        assert done.returncode == 2, done.stderr
        assert done.stdout == ""
        assert done.stderr.count("\n") == 1 and "does not fit in 2^63 bytes" in done.stderr
        assert "Traceback" not in done.stderr
    folder = tmp_path / "dump"
    shutil.copytree(DATA / "jax_mlp", folder)
    damaged = next(folder.glob("module_0000.*before_optimizations.txt"))
    damaged.write_text(bad.read_text())
    next(folder.glob("module_0000.*after_optimizations.txt")).write_text(bad.read_text())
    done = hloscope("report", str(folder), "--all", "--no-cache")
    assert done.returncode == 0, done.stderr
    assert "could not read" in done.stdout and "jit_mlp" in done.stdout


def test_path_order_sorts_as_paths_compare() -> None:
    """`files.path_order` (a walk's and a dump folder's sort key) orders paths as `Path`
    compares them, where a name's characters sort before and after the separator."""
    import random

    from hloscope.files import path_order

    rng = random.Random(27)
    names = ["a", "a-b", "a.b", "a/b", "a/b/c", "a0", "A", "b", "a b", "a_b", "é", "a/-"]
    paths = [Path(rng.choice(names), *rng.sample(names, rng.randrange(3))) for _ in range(400)]
    paths += [Path("/", *p.parts) for p in paths[:100]]
    assert sorted(paths, key=path_order) == sorted(paths)
    assert sorted(map(str, paths)) != [str(p) for p in sorted(paths)]  # not their text
