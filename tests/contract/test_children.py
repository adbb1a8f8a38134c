"""Child processes: they survive the thread that started them, a stop escalates to SIGKILL past
its grace (a child ignoring SIGTERM, as a kube-apiserver without etcd does), and a stale-child
check stops only a recorded child of a dead owner that still runs as itself."""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, replace
from pathlib import Path

import psutil
import pytest

from context_service.adapters.children import Child, Record, stop_stale

SLEEPER = "import signal, sys, time; {prelude}; print('ready', flush=True); time.sleep(60)"


def sleeper(tmp_path: Path, name: str = "sleeper", ignore_term: bool = False) -> Child:
    prelude = "signal.signal(signal.SIGTERM, signal.SIG_IGN)" if ignore_term else "pass"
    out = tmp_path / f"{name}.out"
    child = Child(name, [sys.executable, "-c", SLEEPER.format(prelude=prelude), str(tmp_path)],
                  tmp_path / f"{name}.child.json", marker=str(tmp_path), output=out)
    child.start()
    deadline = time.monotonic() + 10
    while b"ready" not in (out.read_bytes() if out.exists() else b""):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return child


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_child_started_from_a_short_lived_thread_outlives_the_thread(tmp_path: Path) -> None:
    started: list[Child] = []
    thread = threading.Thread(target=lambda: started.append(sleeper(tmp_path)))
    thread.start()
    thread.join()
    time.sleep(0.3)  # a death signal tied to the thread would have arrived by now
    [child] = started
    assert child.running
    child.stop(grace=5)
    assert not child.running and not child.record.exists()


def test_a_child_ignoring_sigterm_is_killed_past_its_grace(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    child = sleeper(tmp_path, "stubborn", ignore_term=True)
    pid = child.pid
    assert pid is not None
    caplog.set_level(logging.INFO, "context_service.adapters.children")
    started = time.monotonic()
    child.stop(grace=0.5)
    assert 0.5 <= time.monotonic() - started < 5
    assert not alive(pid)
    [line] = [r for r in caplog.records if r.getMessage() == "shutdown: stubborn stopped"]
    assert line.__dict__["killed"] is True


def dead_owner() -> tuple[int, float]:
    """The pid and start time of a process that has ended."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    created = psutil.Process(proc.pid).create_time()
    proc.wait()
    return proc.pid, created


def orphan(tmp_path: Path, name: str) -> tuple[subprocess.Popen[bytes], Record]:
    """A running process recorded as the child of an owner that is gone."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", str(tmp_path)])
    owner, owner_created = dead_owner()
    record = Record(name, proc.pid, psutil.Process(proc.pid).create_time(), str(tmp_path),
                    owner, owner_created, int(signal.SIGTERM))
    return proc, record


def write(path: Path, record: Record) -> Path:
    path.write_text(json.dumps(asdict(record)))
    return path


def test_a_dead_owners_child_is_stopped_and_its_record_removed(tmp_path: Path) -> None:
    proc, record = orphan(tmp_path, "stale")
    path = write(tmp_path / "stale.child.json", record)
    assert stop_stale(path, grace=5) is True
    proc.wait(5)  # reaped already by the stop (it is this test's child)
    assert not alive(proc.pid) and not path.exists()


def test_a_live_owners_child_is_left_alone(tmp_path: Path) -> None:
    proc, record = orphan(tmp_path, "shared")
    me = psutil.Process()
    path = write(tmp_path / "shared.child.json",
                 replace(record, owner=me.pid, owner_created=me.create_time()))
    try:
        assert stop_stale(path) is False
        assert proc.poll() is None and path.exists()
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("change", ["recycled pid", "other command line"])
def test_a_process_that_is_not_the_recorded_child_is_never_touched(
        tmp_path: Path, change: str) -> None:
    proc, record = orphan(tmp_path, "impostor")
    if change == "recycled pid":
        record = replace(record, created=record.created - 100)  # same pid, another process
    else:
        record = replace(record, marker=str(tmp_path / "elsewhere"))
    path = write(tmp_path / "impostor.child.json", record)
    try:
        assert stop_stale(path) is False
        assert proc.poll() is None and not path.exists()
    finally:
        proc.kill()
        proc.wait()
