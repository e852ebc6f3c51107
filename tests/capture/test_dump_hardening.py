"""`hloscope dump` against signals, full disks, read-only folders and races (issue 14).

The scripts are plain Python (no framework): what is tested is hloscope's handling of
the child, its pipes, its logs and run.json. Every child process has a timeout, so a
hang fails the test instead of the suite.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hloscope.capture import child as capture_child
from hloscope.capture import run as capture_run
from hloscope.capture.run import plan_dump, run_dump
from hloscope.errors import HloscopeError, UsageError

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 60


def start_dump(tmp_path: Path, script: str, *args: str) -> subprocess.Popen[str]:
    """`python -m hloscope dump script.py ARGS` in tmp_path, pipes for its output."""
    (tmp_path / "script.py").write_text(script, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.Popen(
        [sys.executable, "-m", "hloscope", "dump", "script.py", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=env,
    )


def wait_for(path: Path, proc: subprocess.Popen[str]) -> str:
    deadline = time.monotonic() + TIMEOUT_S
    while not path.exists() or not path.read_text():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)
    return path.read_text()


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


SLEEPER = (
    "import os, pathlib, time\n"
    "pathlib.Path('child.pid').write_text(str(os.getpid()))\n"
    "time.sleep(120)\n"
)


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGHUP, 129), (signal.SIGTERM, 143)])
def test_a_signal_stops_the_child_and_is_recorded(tmp_path: Path, sig: int, code: int) -> None:
    """SIGHUP (a closed terminal or SSH session) used to end hloscope alone, leaving the
    script running and run.json 'running'."""
    proc = start_dump(tmp_path, SLEEPER, "-o", "run")
    pid = int(wait_for(tmp_path / "child.pid", proc))
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == code, stderr
    assert gone(pid), "the script outlived hloscope"
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["status"] == "interrupted" and manifest["interrupted"] is True
    assert manifest["stopped_by"] == signal.Signals(sig).name
    assert not (tmp_path / "run" / "run.json.tmp").exists()


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_ctrl_c_is_recorded(tmp_path: Path) -> None:
    proc = start_dump(tmp_path, SLEEPER, "-o", "run")
    pid = int(wait_for(tmp_path / "child.pid", proc))
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == 130, stderr
    assert gone(pid)
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["stopped_by"] == "SIGINT" and manifest["status"] == "interrupted"


def test_the_child_does_not_outlive_an_error_of_hloscope(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever ends the wait (here an error inside it), the child is stopped."""
    (tmp_path / "s.py").write_text(SLEEPER, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    plan = plan_dump(tmp_path / "s.py", out=tmp_path / "run", environ={})
    real_wait = subprocess.Popen.wait
    child: list[subprocess.Popen[bytes]] = []

    def failing_wait(self: subprocess.Popen[bytes], timeout: float | None = None) -> int:
        if timeout is None and not child:
            child.append(self)
            wait_for(tmp_path / "child.pid", self)  # type: ignore[arg-type]
            raise OSError(errno.EIO, "simulated")
        return real_wait(self, timeout)

    monkeypatch.setattr(subprocess.Popen, "wait", failing_wait)
    with pytest.raises(OSError, match="simulated"):
        run_dump(plan, out=lambda b: None, err=lambda b: None)
    assert child and child[0].poll() is not None, "the script outlived hloscope"


def test_pumps_keep_draining_when_the_log_cannot_be_written() -> None:
    """A full disk used to kill the pump thread; the child then blocked on its pipe."""

    class FullDisk:
        name = "stdout.log"

        def write(self, data: bytes) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    read_fd, write_fd = os.pipe()
    payload = b"x" * (4 << 20)  # far more than a pipe buffer holds
    received: list[bytes] = []
    errors: list[str] = []
    writer = threading.Thread(target=lambda: (os.write(write_fd, payload), os.close(write_fd)))
    writer.start()
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        pump = capture_child.start_pump(pipe, FullDisk(), received.append, errors)  # type: ignore[arg-type]
        writer.join(timeout=TIMEOUT_S)
        pump.join(timeout=TIMEOUT_S)
    assert not writer.is_alive() and not pump.is_alive()
    assert b"".join(received) == payload  # the terminal still got everything
    assert errors == ["stdout.log: cannot write (No space left on device)"]


@pytest.fixture
def tiny_disk(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A 64 KiB tmpfs (root only); skipped where it cannot be mounted."""
    disk = tmp_path / "disk"
    disk.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tiny tmpfs here: {done.stderr.decode().strip()}")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_full_disk_ends_dump_with_one_line_and_a_record(tmp_path: Path, tiny_disk: Path) -> None:
    proc = start_dump(
        tmp_path, "import sys\nfor i in range(4000): print('x' * 200)\n", "-o", str(tiny_disk / "r")
    )
    _, stderr = proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == 1, stderr
    assert "Traceback" not in stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("hloscope: error: stdout.log: cannot write (No space left on device)")
    manifest = json.loads((tiny_disk / "r" / "run.json").read_text())
    assert manifest["status"] == "failed"
    assert "No space left on device" in manifest["stopped_by"]
    assert not (tiny_disk / "r" / "run.json.tmp").exists()


def test_force_on_a_read_only_run_folder_is_one_line(tmp_path: Path, tiny_disk: Path) -> None:
    run = tiny_disk / "run"
    (run / "dump").mkdir(parents=True)
    (run / "run.json").write_text("{}\n")
    (run / "mine.txt").write_text("the user's own file\n")
    remount = ["mount", "-o", "remount,ro", str(tiny_disk)]
    if subprocess.run(remount, capture_output=True).returncode != 0:
        pytest.skip("cannot remount the tmpfs read-only")
    proc = start_dump(tmp_path, "print('hi')\n", "-o", str(run), "--force")
    _, stderr = proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == 2, stderr
    assert stderr.strip().splitlines() == [
        f"hloscope: error: {run}: cannot replace the earlier run there (Read-only file "
        "system); pass -o DIR for another folder"
    ]
    assert (run / "mine.txt").read_text() == "the user's own file\n"


def test_force_that_cannot_remove_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "s.py").write_text("pass\n")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.json").write_text("{}\n")
    plan = plan_dump(tmp_path / "s.py", out=tmp_path / "run", force=True, environ={})

    def denied(plan: object) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "run"))

    monkeypatch.setattr(capture_run, "_prepare_run_dir", denied)
    with pytest.raises(UsageError, match="cannot replace the earlier run there"):
        run_dump(plan)


def test_missing_module_leaves_no_runs_folder(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-m", "hloscope", "dump", "-m", "no_such_module_here"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=TIMEOUT_S,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_plan_that_fails_after_claiming_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.py").write_text("print('no framework here')\n")
    with pytest.raises(UsageError, match="--framework"):
        plan_dump("model.py", environ={}, profile=True, framework="mxnet")
    assert not (tmp_path / "hloscope-runs").exists()


def test_dumps_started_in_the_same_second_get_their_own_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two dumps without --out in the same second chose the same folder 1 time in 5."""
    import datetime as dt

    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.py").write_text("pass\n")
    now = dt.datetime(2026, 12, 3, 9, 0, 0)
    barrier = threading.Barrier(8)
    chosen: list[Path] = []

    def plan() -> None:
        barrier.wait()
        chosen.append(plan_dump("model.py", environ={}, now=now).run_dir)

    threads = [threading.Thread(target=plan) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=TIMEOUT_S)
    assert len(chosen) == 8 and len(set(chosen)) == 8
    assert all(p.is_dir() for p in chosen)
    names = sorted(p.name for p in chosen)
    assert names[0] == "model-20261203-090000" and "model-20261203-090000-8" in names


def test_manifest_on_a_full_disk_leaves_no_tmp(tmp_path: Path, tiny_disk: Path) -> None:
    from hloscope.manifest import RunManifest

    fd = os.open(tiny_disk / "filler", os.O_WRONLY | os.O_CREAT)
    try:  # fill the disk to the last byte
        while os.write(fd, b"x" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    with pytest.raises(HloscopeError, match=r"run\.json: cannot write"):
        capture_run._write_manifest(tiny_disk, RunManifest(command=("x" * 10000,)))
    assert not (tiny_disk / "run.json.tmp").exists()


def test_a_signal_during_the_last_wait_does_not_leave_the_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child deaf to SIGINT and SIGTERM is killed; one more Ctrl-C while hloscope waits
    for the SIGKILL to land does not cut that wait short (the child would be a zombie)."""
    script = "import signal, time\nfor s in (signal.SIGINT, signal.SIGTERM):\n"
    script += "    signal.signal(s, signal.SIG_IGN)\nprint('ready', flush=True)\ntime.sleep(60)\n"
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, **capture_child.own_process_group()
    )
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    monkeypatch.setattr(capture_child, "_INTERRUPT_GRACE_S", 0.2)
    monkeypatch.setattr(capture_child, "_TERMINATE_GRACE_S", 0.2)
    real_wait = subprocess.Popen.wait
    cut = []

    def interrupted_wait(self: subprocess.Popen[bytes], timeout: float | None = None) -> int:
        if timeout is None and not cut:
            cut.append(True)
            raise KeyboardInterrupt  # what the signal handler raises mid-wait
        return real_wait(self, timeout)

    monkeypatch.setattr(subprocess.Popen, "wait", interrupted_wait)
    assert capture_child.stop_child(proc) == -signal.SIGKILL
    assert cut and proc.poll() == -signal.SIGKILL
