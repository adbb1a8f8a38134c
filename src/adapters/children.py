"""Child processes that never outlive the service (embedded PostgreSQL, NATS, etcd, apiserver).

Each child asks Linux for a death signal (``PR_SET_PDEATHSIG``), so it is signalled when this
process dies however it dies (SIGKILL, the OOM killer), and leaves a record naming itself and
its owner; a later start stops the children a dead owner left, after checking the pid's start
time and command line, so a recycled pid is never touched.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import pwd
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

import psutil

from context_service.logs import SECRET_SETTINGS, SECRET_URL_SETTINGS

log = logging.getLogger(__name__)
T = TypeVar("T")
PR_SET_PDEATHSIG = 1


def _load_prctl() -> Callable[..., int] | None:
    """libc's prctl, looked up before any fork (a forked child of a threaded process must not
    load libraries); None where there is none (not Linux)."""
    try:
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return prctl


_PRCTL = _load_prctl()


def _die_with(parent: int, death_signal: int) -> Callable[[], None]:
    def preexec() -> None:  # in the child, between fork and exec
        if _PRCTL is not None:
            _PRCTL(PR_SET_PDEATHSIG, death_signal)
        if os.getppid() != parent:  # the parent died before the request took effect
            os._exit(1)

    return preexec


class _Spawner:
    """Forks from one thread that lives as long as the process: Linux sends the death signal
    when the *thread* that forked a child ends, so a child forked from a worker thread would
    otherwise be signalled when that thread finished."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def run(self, job: Callable[[], T]) -> T:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="child-spawner",
                                                daemon=True)
                self._thread.start()
        future: Future[T] = Future()
        self._jobs.put((job, future))
        return future.result()

    def _loop(self) -> None:
        while True:
            job, future = self._jobs.get()
            try:
                future.set_result(job())
            except BaseException as exc:
                future.set_exception(exc)


_SPAWNER = _Spawner()


@dataclass(frozen=True)
class Record:
    """What a later start needs to recognise a child: its pid and start time, a string its
    command line contains, and its owner's pid and start time."""

    name: str
    pid: int
    created: float
    marker: str
    owner: int
    owner_created: float
    stop_signal: int

    @staticmethod
    def read(path: Path) -> Record | None:
        try:
            return Record(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            return None


def _created(pid: int) -> float | None:
    try:
        created: float = psutil.Process(pid).create_time()
    except psutil.Error:
        return None
    return created


def _same(pid: int, created: float) -> psutil.Process | None:
    """The process ``pid`` if it is still the one started at ``created`` (not a recycled pid)."""
    try:
        proc = psutil.Process(pid)
        if abs(proc.create_time() - created) > 0.05 or proc.status() == psutil.STATUS_ZOMBIE:
            return None
    except psutil.Error:
        return None
    return proc


def owner_alive(record: Record) -> bool:
    return _same(record.owner, record.owner_created) is not None


def recorded_process(record: Record) -> psutil.Process | None:
    """The recorded child if it still runs as itself: same start time, and a command line
    naming the record's marker (its data directory)."""
    proc = _same(record.pid, record.created)
    if proc is None:
        return None
    try:
        cmdline = " ".join(proc.cmdline())
    except psutil.Error:
        return None
    return proc if record.marker in cmdline else None


def in_use(path: Path) -> bool:
    """The recorded child runs and its owner (this process or another) is alive."""
    record = Record.read(path)
    return (record is not None and recorded_process(record) is not None
            and owner_alive(record))


def stop_stale(path: Path, grace: float = 10.0) -> bool:
    """Stop the child recorded at ``path`` if its owner is gone; True if one was stopped.
    A child whose owner lives is left alone (another process of the data directory uses it)."""
    record = Record.read(path)
    if record is None:
        return False
    proc = recorded_process(record)
    if proc is not None and owner_alive(record):
        return False
    if proc is not None:
        log.warning("stopping a stale child a dead owner left behind",
                    extra={"child": record.name, "pid": record.pid, "owner": record.owner})
        terminate(proc, record.name, record.stop_signal, grace)
    path.unlink(missing_ok=True)
    return proc is not None


def terminate(proc: psutil.Process, name: str, stop_signal: int, grace: float) -> bool:
    """Signal ``proc``, wait up to ``grace`` seconds, then SIGKILL; True if it had to be
    killed. Works for processes that are not our children (a stale one)."""
    with contextlib.suppress(psutil.NoSuchProcess):
        proc.send_signal(stop_signal)
    _, alive = psutil.wait_procs([proc], timeout=grace)
    if not alive:
        return False
    log.warning("child ignored its stop signal; killing it",
                extra={"child": name, "pid": proc.pid, "grace": grace})
    with contextlib.suppress(psutil.NoSuchProcess):
        proc.kill()
    psutil.wait_procs([proc], timeout=10)
    return True


def without_secrets(env: Mapping[str, str]) -> dict[str, str]:
    """A child's environment: the service's own, less its secret settings. No child reads
    them, and the embedded PostgreSQL runs as a user of its own: what a child holds, its user
    can read in ``/proc/<pid>/environ``."""
    hidden = {*SECRET_SETTINGS, *SECRET_URL_SETTINGS}
    return {name: value for name, value in env.items() if name not in hidden}


def environment() -> dict[str, str]:
    """The environment every child gets, the short-lived ones too (``initdb``, the server
    user's ``useradd``, the development cluster's ``openssl`` and build script): one left
    to inherit this process's own held the secrets, and a build script passes them on to
    everything it runs. What a program reads (``PATH``, ``HOME``, the locale, a ``CS_`` setting
    of the development cluster) comes."""
    return without_secrets(os.environ)


def run_once(args: Sequence[str | Path], *, user: str | None = None,
             timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """Run a short-lived child (the embedded PostgreSQL's ``initdb``) to its end, with the
    environment every child gets and its output captured; a library that runs one itself
    passes it the whole environment, secrets and all, to a user of its own. It runs in a
    session of its own, killed whole past ``timeout``: ``initdb`` does its writing in children
    (``postgres --boot``, ``--single``), which killing it alone left running."""
    with subprocess.Popen([str(a) for a in args], stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=environment(), start_new_session=True,
                          **as_user(user)) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def as_user(user: str | None) -> dict[str, Any]:
    """``subprocess``'s arguments that run a child as ``user`` with that user's groups alone:
    ``user=`` changes the user id only, and a child of root kept the group id 0 and root's
    supplementary groups (every file open to the group ``root`` was open to it)."""
    if user is None:
        return {}
    gid = pwd.getpwnam(user).pw_gid
    return {"user": user, "group": gid, "extra_groups": os.getgrouplist(user, gid)}


class Child:
    """One child process: started in its own session (a terminal's Ctrl-C reaches only the
    service, which then stops its children in order), signalled with ``death_signal`` if this
    process dies first, stopped with ``stop_signal`` and, past the grace, SIGKILL."""

    def __init__(self, name: str, args: Sequence[str | Path], record: Path, *, marker: str,
                 stop_signal: int = signal.SIGTERM, death_signal: int = signal.SIGTERM,
                 output: Path | None = None, user: str | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        self.name = name
        self.args = [str(a) for a in args]
        self.record = record
        self.marker = marker
        self.stop_signal = stop_signal
        self.death_signal = death_signal
        self.output = output
        self.user = user
        self.env = env
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> Child:
        """Spawn the process (raises OSError when it cannot be executed) and write its record."""
        self.process = _SPAWNER.run(self._popen)
        me = os.getpid()
        created = _created(self.process.pid) or time.time()
        record = Record(self.name, self.process.pid, created, self.marker, me,
                        _created(me) or 0.0, int(self.stop_signal))
        self.record.parent.mkdir(parents=True, exist_ok=True)
        self.record.write_text(json.dumps(asdict(record)) + "\n")
        return self

    def _popen(self) -> subprocess.Popen[bytes]:
        output = self.output.open("ab") if self.output is not None else None
        try:
            return subprocess.Popen(
                self.args, stdin=subprocess.DEVNULL,
                stdout=output if output is not None else subprocess.DEVNULL,
                stderr=subprocess.STDOUT, start_new_session=True,
                env=without_secrets(os.environ if self.env is None else self.env),
                preexec_fn=_die_with(os.getpid(), self.death_signal), **as_user(self.user))
        finally:
            if output is not None:
                output.close()

    def stop(self, grace: float = 10.0) -> None:
        """Send the stop signal, wait up to ``grace`` seconds, then SIGKILL; log one line."""
        process, self.process = self.process, None
        if process is None:
            return
        started = time.monotonic()
        killed = False
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(self.stop_signal)
            try:
                process.wait(grace)
            except subprocess.TimeoutExpired:
                log.warning("child ignored its stop signal; killing it",
                            extra={"child": self.name, "pid": process.pid, "grace": grace})
                process.kill()
                process.wait()
                killed = True
        self.record.unlink(missing_ok=True)
        log.info(f"shutdown: {self.name} stopped", extra={
            "step": self.name, "pid": process.pid, "killed": killed,
            "seconds": round(time.monotonic() - started, 3)})

    def kill(self) -> None:
        """SIGKILL at once (outage tests); the record goes with it."""
        process, self.process = self.process, None
        if process is not None:
            if process.poll() is None:
                process.kill()
            process.wait()
        self.record.unlink(missing_ok=True)
