"""No answer echoes a credential the caller sent: every operation of the OpenAPI document is
called, as a hostile or careless client would, with distinctive values in ``Authorization``
(a malformed, a ``Basic`` and a well-formed but unknown bearer), ``X-Gateway-Secret`` (with the
service's gateway secret set), ``Cookie`` and ``X-CSRF-Token``, with and without a body, and
no status line, header or body of any answer may carry any of them, nor the service's own
gateway secret and credential key (a ``500``'s body names a request id only).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from context_service import bootstrap
from context_service.config import Settings
from tests.api.conftest import Api
from tests.support.services import suite_settings

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
GATEWAY_SECRET = "gw-Echo5Kp9Wm2Qz7"
CREDENTIAL_KEY = "ck-Echo3Rt8Yn1Lx6Vb4"
SENT = {
    "bearer": "bdk_0123456789abcdef_EchoB3arerS3cretZq8Zq8Zq8Zq8Zq8Zq8Zq8Zq8Zq8Z",
    "basic": "RWNob0Jhc2ljU2VjcmV0OnB3ZA",
    "malformed": "EchoMalformedTok3n",
    "gateway": "gw-EchoWrongPr00f",
    "cookie": "EchoC00kieVal",
    "csrf": "EchoCsrfT0ken",
}
ADMIN = "service:context-service-admin"
AUTHORIZATIONS = (f"Bearer {SENT['bearer']}", f"Basic {SENT['basic']}",
                  f"Bearer {SENT['malformed']}", SENT["malformed"])


@pytest.fixture(scope="module")
def module_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return replace(suite_settings(tmp_path_factory.mktemp("attack-echo")),
                   gateway_secret=GATEWAY_SECRET, credential_key=CREDENTIAL_KEY)


@pytest.fixture(scope="module")
def operations(module_api: Api) -> Iterator[list[tuple[str, str]]]:
    document = module_api.get("/schema/openapi.json").json()
    found = []
    for path, item in sorted(document["paths"].items()):
        concrete = re.sub(r"\{[^}]+\}", "x1", path)
        found += [(method.upper(), concrete) for method in item
                  if method in ("get", "post", "put", "delete", "patch")]
    assert len(found) > 40
    yield found


def answers(api: Api, method: str, path: str) -> Iterator[str]:
    """A wrong gateway proof (refused at once), then the right one with the administrator as
    subject (so each route goes on to its own checks and messages)."""
    for proof, subject in ((SENT["gateway"], "user:alice"), (GATEWAY_SECRET, ADMIN)):
        for authorization in AUTHORIZATIONS:
            headers = {"Authorization": authorization, "X-Gateway-Secret": proof,
                       "X-Context-Subject": subject, "Cookie": f"cs_csrf={SENT['cookie']}",
                       "X-CSRF-Token": SENT["csrf"]}
            for body in (None, {"x": 1}, {"name": "echo-body-name"}):
                resp: Any = api.as_(None).request(method, path, body, headers=headers)
                yield f"{resp.status_code} {dict(resp.headers)} {resp.text}"


def test_no_answer_echoes_a_credential_sent_or_a_service_secret(
        module_api: Api, module_container: bootstrap.Container,
        operations: list[tuple[str, str]]) -> None:
    secrets = {**SENT, "gateway_secret": GATEWAY_SECRET, "credential_key": CREDENTIAL_KEY}
    echoed: list[tuple[str, str, str, str]] = []
    statuses: set[str] = set()
    for method, path in operations:
        for answer in answers(module_api, method, path):
            echoed += [(method, path, name, answer[:300]) for name, value in secrets.items()
                       if value in answer or value[-10:] in answer]
            statuses.add(answer[:3])
    assert echoed == []
    assert {"401", "400", "404"} <= statuses, statuses  # the routes' own checks were reached
