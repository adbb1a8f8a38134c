"""An HTTP client over the real application and a real PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest
from litestar.testing import TestClient

from context_service import bootstrap
from tests.support.answers import check_answer
from tests.support.services import shares_service


class Api:
    """A small client: ``as_`` sets the subject header for the next requests."""

    def __init__(self, client: TestClient[Any]) -> None:
        self.client = client
        self.subject: str | None = None

    def as_(self, subject: str | None) -> Api:
        other = Api(self.client)
        other.subject = subject
        return other

    def request(self, method: str, path: str, body: Any = None, raw: bytes | None = None,
                headers: dict[str, str] | None = None) -> Any:
        h = dict(headers or {})
        if self.subject is not None:
            h["X-Context-Subject"] = self.subject
        if raw is not None:
            response = self.client.request(method, path, content=raw, headers=h)
        elif body is not None:
            response = self.client.request(method, path, json=body, headers=h)
        else:
            response = self.client.request(method, path, headers=h)
        app = getattr(self.client, "app", None)  # a served process is checked by schemathesis
        if app is not None:
            check_answer(app, method, path, response.status_code,
                         response.headers.get("content-type", ""), response.content)
        return response

    def get(self, path: str, **kw: Any) -> Any:
        return self.request("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> Any:
        return self.request("POST", path, body, **kw)

    def put(self, path: str, body: Any = None, **kw: Any) -> Any:
        return self.request("PUT", path, body, **kw)

    def delete(self, path: str, body: Any = None, **kw: Any) -> Any:
        return self.request("DELETE", path, body, **kw)


@pytest.fixture
def api(request: pytest.FixtureRequest, container: bootstrap.Container) -> Iterator[Api]:
    if shares_service(request):
        yield request.getfixturevalue("module_api")
        return
    with TestClient(app=bootstrap.app(container)) as client:
        yield Api(client)


@pytest.fixture(scope="module")
def module_api(module_container: bootstrap.Container) -> Iterator[Api]:
    """The application of a ``shared_service`` module, over ``module_container``."""
    with TestClient(app=bootstrap.app(module_container)) as client:
        yield Api(client)


def context_body(name: str = "research-memory", namespace: str = "team1", type_: str = "memory",
                 size: str = "5Gi", access_mode: str = "ReadWriteMany",
                 storage_class: str | None = "ibm-scale-csi") -> dict[str, Any]:
    storage: dict[str, Any] = {"backend": "pvc", "size": size, "accessMode": access_mode}
    if storage_class is not None:
        storage["storageClass"] = storage_class
    return {"name": name, "namespace": namespace, "type": type_, "storage": storage}


def each(cases: Iterable[Any], probe: Callable[[Any], object]) -> None:
    """Run ``probe`` for every case and report every failing case at once."""
    failures = []
    for case in cases:
        try:
            probe(case)
        except AssertionError as exc:
            failures.append(f"{case!r}: {exc}")
    assert not failures, "\n".join(failures)


def expect(resp: Any, status: int, body: dict[str, str]) -> None:
    assert resp.status_code == status, resp.text
    assert resp.json() == body
