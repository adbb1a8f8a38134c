"""Secrets never reach events, logs, NATS, exports, answers or metrics.

One ``context-service serve`` for the module is started with distinctive secrets planted
everywhere (the gateway secret, the credential key, a database URL and a NATS URL with
passwords) and every logger at DEBUG, third parties included; the credential flows are driven
(create, a wrong and a right bearer, MCP, revoke, a refused gateway proof, the settings pages,
a NATS outage), then every sink is searched for each secret and for a fragment of it."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from context_service import logs
from context_service.adapters.nats.server import find_binary
from context_service.urls import credentials, redacted, servers
from tests.e2e.server import ServerProcess, free_port
from tests.support.services import Databases

GATEWAY_SECRET = "gw-Q7vX2kLm9RtZ4wPa"
CREDENTIAL_KEY = "ck-H3nB8sYd6FjU1cVe5gTq0LzK2xWp7mRo"
NATS_PASSWORD = "nats-J4fT9bNq2Wy6Ks"
DB_PASSWORD = "db-P5rE8uMz3HcG1a"
ADMIN = "service:context-service-admin"
# every logger of the served process at DEBUG, whatever the service or a library later asks
DEBUG_EVERYWHERE = """
import logging, sys
from context_service import logs
configure = logs.configure
def debug_everywhere(fmt="auto", level=logging.INFO, env=None):
    configure(fmt, logging.DEBUG, *(() if env is None else (env,)))
    for name in list(logging.root.manager.loggerDict):
        logging.getLogger(name).setLevel(logging.NOTSET)
    logging.Logger.setLevel = lambda self, level: None
logs.configure = debug_everywhere
from context_service.cli import main
sys.exit(main())
"""


def fragments(secret: str) -> list[str]:
    """The secret and the pieces of it a partial leak would show (its first and last 10)."""
    return [secret, secret[:10], secret[-10:]] if len(secret) > 10 else [secret]


def leaks(text: str, secrets: dict[str, str]) -> list[str]:
    return [f"{name} ({piece!r})" for name, secret in secrets.items()
            for piece in fragments(secret) if piece in text]


# --- one place: URLs and log lines ---------------------------------------------------------------

@pytest.mark.parametrize("password", ["pa/ss-Xy9", "pa?ss-Xy9", "pa#ss-Xy9", "pa,ss-Xy9",
                                      "pa@ss-Xy9"])
def test_a_url_password_holding_a_separator_is_hidden(password: str) -> None:
    for url in (f"nats://relay:{password}@127.0.0.1:4222", f"https://al:{password}@gw.example/api",
                f"al:{password}@127.0.0.1:5432"):
        shown = redacted(url)
        assert "ss-Xy9" not in shown and "pa" not in shown.replace("/api", ""), shown
        assert shown.endswith(("127.0.0.1:4222", "gw.example/api", "127.0.0.1:5432")), shown
        assert password in credentials(url)


def test_a_list_of_servers_keeps_a_password_holding_a_comma_in_its_url() -> None:
    assert servers("nats://u:pa,ss@a:1, nats://v:p2@b:2,") == [
        "nats://u:pa,ss@a:1", "nats://v:p2@b:2"]
    assert servers("nats://a:1") == ["nats://a:1"]


def test_a_url_without_credentials_is_shown_as_it_is() -> None:
    for url in ("nats://127.0.0.1:4222", "http://gw.example/api/v1?x=1", "h1:4222,h2:4222",
                "nats://a:1,nats://b:2"):
        assert redacted(url) == url
        assert credentials(url) == ()
    assert redacted("nats://u:p1@a:1,nats://v:p2@b:2") == "nats://***@a:1,nats://***@b:2"
    assert redacted("host=db user=cs password=s3cr3t-pw") == "host=db user=cs password=***"
    assert "s3cr3t-pw" in credentials("host=db user=cs password='s3cr3t-pw'")


@pytest.fixture
def captured_log(capsys: pytest.CaptureFixture[str]) -> Iterator[pytest.CaptureFixture[str]]:
    """The root logger configured as the service does (onto the captured stderr); restored
    after."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level, sys.excepthook, threading.excepthook)
    try:
        yield capsys
    finally:
        root.handlers[:], level, sys.excepthook, threading.excepthook = saved
        root.setLevel(level)


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_no_log_line_carries_a_planted_secret_or_a_credential_shape(
        captured_log: pytest.CaptureFixture[str], fmt: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    token = "bdk_0123456789abcdef_" + "Zq8" * 14 + "W"
    for name, value in {"CS_GATEWAY_SECRET": GATEWAY_SECRET, "CS_CREDENTIAL_KEY": CREDENTIAL_KEY,
                        "CS_NATS_URL": f"nats://relay:{NATS_PASSWORD}@nats:4222",
                        "CS_DATABASE_URL": f"postgresql://cs:{DB_PASSWORD}@db:5432/cs",
                        "CS_AGENT_QUERY_URL": "host=db user=q password=qy-Lw2Ne7Rb"}.items():
        monkeypatch.setenv(name, value)  # the settings the process was started with
    logs.configure(fmt, logging.DEBUG)
    log = logging.getLogger("a.library")
    log.debug("request headers %s", {"authorization": f"Bearer {token}",
                                     "cookie": "cs_csrf=abc.def",
                                     "x-gateway-secret": GATEWAY_SECRET})
    log.debug("raw %r", [(b"authorization", b"Bearer not-a-token-Fv3s"), (b"cookie", b"sid=Kp0w")])
    log.info("connecting", extra={"url": f"nats://relay:{NATS_PASSWORD}@nats:4222",
                                  "dsn": "host=db password=qy-Lw2Ne7Rb", "token": token})
    try:
        raise ValueError(f'invalid percent-encoded token: "{DB_PASSWORD}" key {CREDENTIAL_KEY}')
    except ValueError:
        log.exception("failed")
    written = captured_log.readouterr().err
    secrets = {"token": token.rpartition("_")[2], "gateway": GATEWAY_SECRET,
               "key": CREDENTIAL_KEY, "nats": NATS_PASSWORD, "db": DB_PASSWORD,
               "query": "qy-Lw2Ne7Rb", "bearer": "not-a-token-Fv3s", "csrf": "abc.def",
               "cookie": "Kp0w"}
    assert leaks(written, secrets) == [], written
    assert "bdk_0123456789abcdef_***" in written  # which credential it was stays readable
    assert "nats://***@nats:4222" in written and "invalid percent-encoded token" in written


# --- start-up failures: what the process prints ------------------------------------------------

@pytest.fixture(scope="module")
def served_database(pg_admin_url: str, pg_template: str,
                    test_databases: Databases) -> Iterator[str]:
    """A database of the module's own, named with a password (the suite's server ignores it:
    what matters is where the URL's text goes)."""
    name = test_databases.clone(pg_template)
    yield make_conninfo(pg_admin_url, dbname=name, password=DB_PASSWORD)
    test_databases.drop(name)


def test_a_malformed_query_login_url_never_shows_its_password(served_database: str) -> None:
    """A ``%`` the operator did not encode in ``CS_AGENT_QUERY_URL``'s password: the driver's
    error quotes the password, and the uncaught traceback printed it."""
    path = Path(tempfile.mkdtemp(prefix="cs-leak-start-"))
    proc = ServerProcess(path, env={"CS_AGENT_QUERY_URL":
                                    "postgresql://cs_agent_query:qy%zzMv4Tn8Ws@127.0.0.1/x"})
    proc.env["CS_DATABASE_URL"] = served_database
    try:
        proc.launch()
        assert proc.proc is not None
        assert proc.proc.wait(120) != 0
        output = proc.log_text()
        told = ("invalid percent-encoded token",  # the driver's words, redacted
                "CS_AGENT_QUERY_URL is not a PostgreSQL connection string")  # or checked first
        assert any(cause in output for cause in told), output
        assert leaks(output, {"query": "qy%zzMv4Tn8Ws", "db": DB_PASSWORD}) == [], output
    finally:
        proc.cleanup()
        shutil.rmtree(path, ignore_errors=True)


# --- one served process, every flow, every sink --------------------------------------------------

@dataclass
class Sinks:
    server: ServerProcess
    database: str
    nats_url: str
    secrets: dict[str, str] = field(default_factory=dict)
    answers: list[str] = field(default_factory=list)  # status, headers and body of each
    pages: list[str] = field(default_factory=list)  # settings pages: they carry their CSRF token
    csrf: str = ""


class AuthNats:
    """A nats-server with JetStream that admits only ``relay`` with ``NATS_PASSWORD``."""

    def __init__(self, store: Path) -> None:
        binary = find_binary()
        if binary is None:
            pytest.skip("nats-server binary not found")
        port = free_port()
        self.args = [str(binary), "-js", "-sd", str(store), "-a", "127.0.0.1",
                     "-p", str(port), "--user", "relay", "--pass", NATS_PASSWORD]
        self.url = f"nats://relay:{NATS_PASSWORD}@127.0.0.1:{port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(self.args, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)


def stream_messages(url: str) -> str:
    """Every message of every JetStream stream on the server, one a line."""
    async def read() -> list[str]:
        import nats

        client = await nats.connect(url)
        try:
            js, out = client.jetstream(), []
            for stream in await js.streams_info():
                sub = await js.pull_subscribe(">", stream=stream.config.name)
                while True:
                    try:
                        batch = await sub.fetch(100, timeout=1)
                    except TimeoutError:  # nats' own, or asyncio's when its deadline ran out
                        break
                    out += [m.data.decode() for m in batch]
            return out
        finally:
            await client.close()

    return "\n".join(asyncio.run(read()))


@pytest.fixture(scope="module")
def sinks(served_database: str) -> Iterator[Sinks]:
    path = Path(tempfile.mkdtemp(prefix="cs-leak-"))
    nats_server = AuthNats(path / "nats")
    nats_server.start()
    proc = ServerProcess(path / "data", executable=(sys.executable, "-c", DEBUG_EVERYWHERE),
                         env={"CS_NATS_URL": nats_server.url, "CS_WORKERS": "projections,relay",
                              "CS_GATEWAY_SECRET": GATEWAY_SECRET,
                              "CS_CREDENTIAL_KEY": CREDENTIAL_KEY,
                              "CS_SETTINGS_DEV_SUBJECT": "true"})
    proc.env["CS_DATABASE_URL"] = served_database
    (path / "data").mkdir()
    try:
        proc.start(120)
        found = Sinks(proc, served_database, nats_server.url)
        drive(found, nats_server)
        yield found
    finally:
        proc.cleanup()
        nats_server.stop()
        shutil.rmtree(path, ignore_errors=True)


def drive(sinks: Sinks, nats_server: AuthNats) -> None:
    proof = {"X-Gateway-Secret": GATEWAY_SECRET}
    admin = {"X-Context-Subject": ADMIN, **proof}
    alice = {"X-Context-Subject": "user:alice", **proof}
    mcp = {"Accept": "application/json, text/event-stream"}
    with httpx.Client(base_url=sinks.server.url, timeout=60) as http:
        def keep(answer: httpx.Response) -> httpx.Response:
            sinks.answers.append(f"{answer.status_code} {answer.headers} {answer.text}")
            return answer

        keep(http.put("/v1/namespaces/acme/members", headers=admin,
                      json={"subject": {"kind": "user", "name": "alice"}, "role": "owner"}))
        created = http.post("/api/w/acme/agent-credentials", headers=alice,
                            json={"name": "leaky", "scopes": ["context:read"], "expiresInDays": 1})
        assert created.status_code == 201, created.text
        token, credential = created.json()["token"], created.json()["id"]
        secret = token.rpartition("_")[2]
        wrong = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
        sinks.secrets.update(token=secret, wrong_token=wrong.rpartition("_")[2],
                             secret_hash=hmac.new(CREDENTIAL_KEY.encode(), token.encode(),
                                                  hashlib.sha256).hexdigest(),
                             other_bearer="Mv7Lq2Zr-not-a-token")
        for bearer in (token, wrong, "Mv7Lq2Zr-not-a-token"):
            auth = {"Authorization": f"Bearer {bearer}"}
            keep(http.post("/api/agent/v1/context-sets/list", json={}, headers=auth))
            keep(http.post("/api/agent/v1/context-sets/list", content=b"{", headers=auth))
            keep(http.post("/mcp", headers={**auth, **mcp}, json={
                "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "list_context_sets", "arguments": {}}}))
        keep(http.get(f"/api/w/acme/agent-credentials/{credential}", headers=alice))
        keep(http.get("/api/w/acme/agent-credentials", headers=alice))
        keep(http.get("/v1/workspaces", headers={"X-Context-Subject": "user:alice",
                                                 "X-Gateway-Secret": GATEWAY_SECRET[:-1]}))
        page = http.get("/settings/w/acme/agent-access", headers=alice)
        assert page.status_code == 200, page.text
        sinks.csrf = page.cookies.get("cs_csrf") or ""
        assert sinks.csrf
        sinks.pages.append(f"{page.headers} {page.text}")
        keep(http.delete(f"/api/w/acme/agent-credentials/{credential}", headers={
            **alice, "Origin": sinks.server.url, "Cookie": f"cs_csrf={sinks.csrf}",
            "X-CSRF-Token": sinks.csrf + "x"}))  # a browser's write with a wrong CSRF token
        keep(http.delete(f"/api/w/acme/agent-credentials/{credential}", headers=alice))
        keep(http.post("/api/agent/v1/context-sets/list", json={},
                       headers={"Authorization": f"Bearer {token}"}))  # revoked
        nats_server.stop()  # the relay loses NATS, retries, and reconnects with its password
        keep(http.put("/v1/namespaces/acme/members", headers=admin,
                      json={"subject": {"kind": "user", "name": "bob"}, "role": "viewer"}))
        nats_server.start()
        sinks.server.wait_until(lambda: '"bob"' in stream_messages(sinks.nats_url), 60,
                                "did not publish after NATS came back")
        keep(http.get("/metrics"))
        keep(http.get("/healthz"))
    sinks.secrets.update(gateway=GATEWAY_SECRET, credential_key=CREDENTIAL_KEY,
                         nats_password=NATS_PASSWORD, db_password=DB_PASSWORD,
                         query_login=query_login_password(sinks.database))
    if sinks.csrf:
        sinks.secrets["csrf"] = sinks.csrf


def query_login_password(database: str) -> str:
    with psycopg.connect(database) as conn:
        row = conn.execute("SELECT value FROM service_secrets"
                           " WHERE name = 'agent_query_password'").fetchone()
    assert row is not None
    return bytes(row[0]).decode()


def test_no_secret_reaches_the_log(sinks: Sinks) -> None:
    written = sinks.server.log_text()
    assert '"level": "debug"' in written  # every logger did speak
    assert leaks(written, sinks.secrets) == []


def test_no_secret_reaches_an_answer(sinks: Sinks) -> None:
    assert len(sinks.answers) > 10
    secrets = {k: v for k, v in sinks.secrets.items() if k != "csrf"}  # its own page carries it
    assert [(a[:200], leaks(a, secrets)) for a in sinks.answers if leaks(a, secrets)] == []
    assert leaks("\n".join(sinks.answers), {"csrf": sinks.csrf}) == []
    assert leaks("\n".join(sinks.pages), secrets) == []


def test_no_secret_reaches_nats(sinks: Sinks) -> None:
    published = stream_messages(sinks.nats_url)
    assert "AgentCredentialCreated" in published and "AgentCredentialRevoked" in published
    assert leaks(published, sinks.secrets) == []


def test_no_secret_reaches_the_history_export(sinks: Sinks, tmp_path: Path) -> None:
    exported = tmp_path / "history.jsonl"
    done = subprocess.run([sys.executable, "-m", "context_service.cli", "history", "export",
                           "--output", str(exported)], env=sinks.server.env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    text = exported.read_text()
    assert "AgentCredentialCreated" in text
    assert leaks(text + done.stdout + done.stderr, sinks.secrets) == []


def test_the_event_log_keeps_no_plaintext(sinks: Sinks) -> None:
    """The log itself keeps the credential's keyed hash (it never leaves the service), but no
    token, password or key."""
    with psycopg.connect(sinks.database) as conn:
        rows = conn.execute("SELECT convert_from(state, 'UTF8') FROM stored_events").fetchall()
    text = "\n".join(str(row[0]) for row in rows)
    assert "AgentCredentialCreated" in text
    kept = {k: v for k, v in sinks.secrets.items() if k != "secret_hash"}
    assert leaks(text, kept) == []
