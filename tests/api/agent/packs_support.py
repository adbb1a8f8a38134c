"""Shared setup of the pack and replay API tests: settings without the rate limit, a client
calling the agent API with one bearer credential, a workspace with knowledge contexts whose
query indexes are published through the public routes, and a retrieval with a hook."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from context_service.config import Settings
from context_service.domain.pack.model import Corpus, Retrieval, Scored
from context_service.http.agent.pack_services import PackServices
from tests.api.conftest import Api

PACKS = "/api/agent/v1/context-packs"
STREAM = PACKS + "/stream"
REPLAYS = "/api/agent/v1/replays"
WS = "acme"
CONTEXTS = "/v1/contexts"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """The suite's settings without the per-credential rate limit (tested by its own suite)."""
    return Settings(data_dir=tmp_path, sandbox_image="busybox:1.36", kube_mode="off",
                    workers=("projections", "query-index"), agent_rate_per_second=0)


@pytest.fixture(scope="module")
def module_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """``settings`` for a module sharing one service (``pytest.mark.shared_service``)."""
    return Settings(data_dir=tmp_path_factory.mktemp("packs"), sandbox_image="busybox:1.36",
                    kube_mode="off", workers=("projections", "query-index"),
                    agent_rate_per_second=0)


class Agent:
    """Calls the agent API with one bearer credential."""

    def __init__(self, api: Api, value: str) -> None:
        self.api = api.as_(None)
        self.token = value

    def post(self, path: str, body: Any = None, raw: bytes | None = None,
             headers: dict[str, str] | None = None) -> Any:
        resp = self.api.post(path, body, raw=raw, headers={
            "Authorization": f"Bearer {self.token}", **(headers or {})})
        assert resp.status_code < 500, resp.text
        assert resp.headers["Cache-Control"] == "no-store"
        return resp

    def pack(self, body: Any, path: str = PACKS) -> Any:
        resp = self.post(path, body)
        assert resp.status_code == 200, resp.text
        return resp


def violations(resp: Any) -> list[dict[str, str]]:
    assert resp.status_code == 400, resp.text
    body = resp.json()
    assert body["code"] == "VALIDATION_ERROR" and body["message"] == "request validation failed"
    found: list[dict[str, str]] = body["details"]
    return found


def create_context(api: Api, name: str, type_: str = "knowledge", owner: str = "user:alice",
                   ws: str = WS) -> None:
    resp = api.as_(owner).post(CONTEXTS, {
        "name": name, "namespace": ws, "type": type_,
        "storage": {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteMany"}})
    assert resp.status_code == 201, resp.text


def record(id_: str, name: str, revision: str, text: str, type_: str = "knowledge",
           **extra: Any) -> dict[str, Any]:
    """A QueryRecord of context ``name``; ``extra`` adds the optional fields as sent."""
    out: dict[str, Any] = {"id": id_, "context": name, "type": type_, "revision": revision,
                           "text": text, "source": {"context": "", "type": "", "revision": ""}}
    out.update(extra)
    return out


def publish(api: Api, name: str, revision: str, records: list[dict[str, Any]],
            owner: str = "user:alice", ws: str = WS, new_revision: bool = True) -> None:
    """Publish ``revision`` of context ``name`` (unless it is current) and its index."""
    base = f"/v1/namespaces/{ws}/contexts/{name}"
    if new_revision:
        resp = api.as_(owner).post(f"{base}/revisions", {
            "id": revision, "createdAt": "2026-05-01T10:00:00Z", "operation": "sync"})
        assert resp.status_code == 201, resp.text
    resp = api.as_(owner).put(f"{base}/query-index", {"revision": revision,
                                                      "records": records})
    assert resp.status_code == 204, resp.text


def grant(api: Api, name: str, subject: str, *permissions: str, owner: str = "user:alice",
          ws: str = WS) -> None:
    kind, _, sname = subject.partition(":")
    resp = api.as_(owner).put(f"/v1/namespaces/{ws}/contexts/{name}/grants", {
        "subject": {"kind": kind, "name": sname}, "permissions": list(permissions)})
    assert resp.status_code == 200, resp.text


def revoke(api: Api, name: str, subject: str, owner: str = "user:alice",
           ws: str = WS) -> None:
    kind, _, sname = subject.partition(":")
    resp = api.as_(owner).delete(f"/v1/namespaces/{ws}/contexts/{name}/grants",
                                 {"kind": kind, "name": sname})
    assert resp.status_code == 200, resp.text


def pack_services(api: Api) -> PackServices:
    found = api.client.app.state.services.packs
    assert isinstance(found, PackServices)
    return found


class HookedRetrieval:
    """Retrieval with a hook run before each lexical or hybrid list (e.g. access changing
    between the scope and the release)."""

    def __init__(self, inner: Retrieval, before: Any) -> None:
        self.inner = inner
        self.before = before

    def lexical(self, query: str, corpus: Corpus,
                eligible: frozenset[str] | None) -> list[Scored]:
        self.before()
        return self.inner.lexical(query, corpus, eligible)

    def vector(self, query: str, corpus: Corpus,
               eligible: frozenset[str] | None) -> list[Scored]:
        return self.inner.vector(query, corpus, eligible)

    def hybrid(self, query: str, corpus: Corpus, eligible: frozenset[str] | None,
               requirement: bool) -> list[Scored]:
        self.before()
        return self.inner.hybrid(query, corpus, eligible, requirement)

