"""Shared setup of the studied-field API tests: a workspace with a contracts collection whose
records state typed fields, and a client posting to the field routes."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.agent.packs_support import Agent, create_context, publish, record
from tests.api.conftest import Api
from tests.api.namespaced import Namespaced, namespaced
from tests.api.sets_namespaced import seed_workspace as seed_namespaced
from tests.api.sets_namespaced import token as namespaced_token
from tests.api.sets_support import seed_workspace, token

LIST = "/api/agent/v1/fields/list"
QUERY = "/api/agent/v1/fields/query"
C = "contracts"
REV1, REV2 = "1" * 64, "2" * 64


def money(amount: str, currency: str) -> dict[str, str]:
    return {"amount": amount, "currency": currency}


def field(name: str, type_: str, value: Any, span: tuple[int, int] | None = None,
          ) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "type": type_, "value": value}
    if span is not None:
        out["span"] = {"start": span[0], "end": span[1]}
    return out


def contracts(total_text: str = "EUR 120,000.00") -> list[dict[str, Any]]:
    """Four documents: acme (two records; the first states the total), globex, initech, and
    a record of its own without fields."""
    acme_text = f"Acme contract. Total value {total_text} payable."
    start = acme_text.index(total_text)
    return [
        record("acme-p1", C, REV1, acme_text, file="acme-2024.pdf", fields=[
            field("total_value", "money", money("120000.00", "EUR"),
                  (start, start + len(total_text))),
            field("region", "text", "EMEA"),
            field("contract_end", "date", "2026-03-31", (0, 4))]),
        record("acme-p2", C, REV1, "Addendum.", file="acme-2024.pdf", fields=[
            field("total_value", "money", money("1.00", "EUR")),
            field("renewal", "boolean", True)]),
        record("globex-p1", C, REV1, "Globex. USD 80,000.", file="globex-2023.pdf", fields=[
            field("total_value", "money", money("80000", "USD"), (8, 18)),
            field("region", "text", "EMEA"),
            field("score", "number", 2.5)]),
        record("initech-p1", C, REV1, "Initech. EUR 5.5", file="initech.pdf", fields=[
            field("total_value", "money", money("5.5", "EUR"), (9, 16)),
            field("region", "text", "APAC"),
            field("contract_end", "date", "2025-01-01"),
            field("score", "number", 1e-7)]),
        record("loose", C, REV1, "A note without fields."),
    ]


def seed(api: Api) -> Agent:
    seed_workspace(api)
    create_context(api, C)
    publish(api, C, REV1, contracts())
    return Agent(api, token(api))


def seed_of(api: Namespaced) -> Agent:
    """``seed`` in ``api``'s workspace of its own (``api.ns``) instead of ``acme``."""
    seed_namespaced(api)
    create_context(api, C, ws=api.ns)
    publish(api, C, REV1, contracts(), ws=api.ns)
    return Agent(api, namespaced_token(api))


@pytest.fixture
def own(api: Api) -> Namespaced:
    """A workspace of the test's own (its contracts are seeded by ``agent``)."""
    return namespaced(api, "acme")


@pytest.fixture
def agent(own: Namespaced) -> Agent:
    return seed_of(own)
