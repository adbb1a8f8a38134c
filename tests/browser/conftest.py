"""Browser fixtures: the real app served by uvicorn on a loopback port over a real PostgreSQL,
Debian's chromium driven by Playwright (never a downloaded browser), screenshots at 1280x800
under test-artifacts/settings/, and axe-core run in the same page.

Without chromium or axe-core (``make browser-deps`` installs both) the tests skip, and fail
under CI=true."""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import uvicorn
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from context_service import bootstrap
from context_service.config import Settings
from context_service.http.app import create_app
from context_service.http.settings import SettingsUi

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "settings"
AXE = ROOT / ".cache" / "axe-core" / "axe.min.js"
CHROMIUM = "/usr/bin/chromium"
# what works on a machine without a network or a GPU; Playwright adds --headless and a fresh
# --user-data-dir of its own
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ADMIN = "service:context-service-admin"
VIEWPORT = {"width": 1280, "height": 800}
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]
# records what the page's Content-Security-Policy blocked
CSP_PROBE = """window.__csp = [];
document.addEventListener('securitypolicyviolation',
  (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));"""


def require(present: bool, what: str) -> None:
    if present:
        return
    message = f"{what} is missing: run `make browser-deps`"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class LiveServer:
    """An app served by uvicorn in a thread of the test process."""

    def __init__(self, app: Any) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(
            app, host="127.0.0.1", port=self.port, log_level="warning", access_log=False,
            lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, name="live-server", daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the live server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *_: object) -> None:
        self.server.should_exit = True
        self.thread.join(20)


class Service:
    """A server-side client of the live service (no browser headers), acting as ``subject``."""

    def __init__(self, url: str, subject: str = ADMIN) -> None:
        self.url = url
        self.subject = subject
        self.client = httpx.Client(base_url=url, timeout=30)

    def as_(self, subject: str) -> Service:
        other = Service.__new__(Service)
        other.url, other.subject, other.client = self.url, subject, self.client
        return other

    def request(self, method: str, path: str, body: Any = None,
                headers: dict[str, str] | None = None) -> httpx.Response:
        h = {"X-Context-Subject": self.subject, **(headers or {})}
        return self.client.request(method, path, json=body, headers=h)

    def member(self, workspace: str, subject: str, role: str) -> None:
        kind, _, name = subject.partition(":")
        resp = self.request("PUT", f"/v1/namespaces/{workspace}/members",
                            {"subject": {"kind": kind, "name": name}, "role": role})
        assert resp.status_code == 200, resp.text

    def credential(self, workspace: str, name: str, **body: Any) -> dict[str, Any]:
        payload = {"name": name, "scopes": ["context:read"], "expiresInDays": 30, **body}
        resp = self.request("POST", f"/api/w/{workspace}/agent-credentials", payload)
        assert resp.status_code == 201, resp.text
        created: dict[str, Any] = resp.json()
        return created

    def agent(self, token: str) -> httpx.Response:
        """An agent's call, from a server-side client, with the token."""
        return self.client.post("/api/agent/v1/context-sets/list", content=b"{}",
                                headers={"Authorization": f"Bearer {token}"})


@pytest.fixture(scope="module")
def browser_database(pg_admin_url: str, pg_template: str) -> Iterator[str]:
    name = "b_" + uuid.uuid4().hex[:16]
    create = sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY WAL_LOG")
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(create.format(sql.Identifier(name), sql.Identifier(pg_template)))
    params = conninfo_to_dict(pg_admin_url)
    params["dbname"] = name
    yield make_conninfo(**params)  # type: ignore[arg-type]
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                     .format(sql.Identifier(name)))


@pytest.fixture(scope="module")
def live_container(browser_database: str,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[bootstrap.Container]:
    settings = Settings(data_dir=tmp_path_factory.mktemp("browser"), kube_mode="off",
                        sandbox_image="busybox:1.36", workers=("projections", "query-index"))
    built = bootstrap.build(settings, url=browser_database, pool_size=4)
    built.start_workers()
    yield built
    built.close()


@pytest.fixture(scope="module")
def server(live_container: bootstrap.Container) -> Iterator[LiveServer]:
    with LiveServer(bootstrap.app(live_container)) as live:
        yield live


@pytest.fixture
def dev_server(live_container: bootstrap.Container) -> Iterator[LiveServer]:
    """The same service with development mode on: the pages send the subject typed in."""
    services = bootstrap.services(live_container)
    services.settings_ui = SettingsUi(services.settings_ui.workspaces, dev_subject=True)
    with LiveServer(create_app(services)) as live:
        yield live


@pytest.fixture
def service(server: LiveServer) -> Iterator[Service]:
    found = Service(server.url)
    yield found
    found.client.close()


@pytest.fixture
def workspace(request: pytest.FixtureRequest) -> str:
    """A workspace of this test alone."""
    return "ws-" + uuid.uuid4().hex[:8]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    require(Path(CHROMIUM).exists() and shutil.which("chromium") is not None,
            "Debian's chromium (/usr/bin/chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS,
                                              headless=True)
        yield launched
        launched.close()


OpenPage = Callable[..., Any]


@pytest.fixture
def open_page(browser: Any, server: LiveServer) -> Iterator[OpenPage]:
    """``open_page(subject)``: a page in a new browser context whose requests carry
    ``X-Context-Subject: subject``, as the gateway adds it (None: no header, as without one)."""
    contexts: list[Any] = []
    errors: dict[int, list[str]] = {}

    def opened(subject: str | None, url: str | None = None) -> Any:
        headers = {"X-Context-Subject": subject} if subject else {}
        context = browser.new_context(viewport=VIEWPORT, base_url=url or server.url,
                                      extra_http_headers=headers,
                                      permissions=["clipboard-read", "clipboard-write"])
        context.set_default_timeout(10_000)
        context.add_init_script(CSP_PROBE)
        contexts.append(context)
        page = context.new_page()
        found = errors[id(page)] = []  # uncaught exceptions in the page's scripts
        page.on("pageerror", lambda exc: found.append(str(exc)))
        return page

    yield opened
    for context in contexts:
        for page in context.pages:
            assert page.evaluate("window.__csp") == [], "the page's CSP blocked something"
            assert errors.get(id(page), []) == [], errors[id(page)]
        context.close()


def screenshot(page: Any, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path


def accessibility(page: Any, include: str | None = None) -> None:
    """axe-core's WCAG 2.1 A/AA and best-practice rules (labels, contrast, landmarks, focus
    and ARIA use) on the page as it is now: no violation."""
    require(AXE.exists(), f"axe-core ({AXE.relative_to(ROOT)})")
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE.read_text() + "\n;true")
    violations = page.evaluate(
        """async ([include, tags]) => {
            const result = await axe.run(include ? document.querySelector(include) : document,
                                         {runOnly: {type: 'tag', values: tags}});
            return result.violations.map((v) => `${v.id} (${v.impact}): ${v.help} at `
                + v.nodes.map((n) => n.target.join(' ')).join(', '));
        }""", [include, AXE_TAGS])
    assert violations == [], "\n".join(violations)


def focus_id(page: Any) -> str:
    """What the keyboard focus is on: the element's id, else a short description."""
    found: str = page.evaluate("""() => {
        const el = document.activeElement;
        if (!el) return '';
        if (el.id) return '#' + el.id;
        const name = el.getAttribute('aria-label') || el.getAttribute('value')
            || el.textContent.trim().slice(0, 30);
        return el.tagName.toLowerCase() + '[' + name + ']'; }""")
    return found


def tab_to(page: Any, target: str, limit: int = 40) -> list[str]:
    """Press Tab until ``target`` (as ``focus_id`` names it) has the focus; the path taken."""
    path = []
    for _ in range(limit):
        page.keyboard.press("Tab")
        path.append(focus_id(page))
        if path[-1] == target:
            return path
    raise AssertionError(f"{target} never took the focus: {path}")
