"""The caller's identity from ``X-Context-Subject`` (spec 1.1.5), trusted only with the gateway's
proof (``X-Gateway-Secret``) when ``CS_GATEWAY_SECRET`` is set: any pod that reaches the API
could otherwise claim any subject (docs/deploy.md)."""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from context_service.domain.errors import RequestInvalidError
from context_service.domain.events import ANONYMOUS, SUBJECT_KINDS, Subject
from context_service.http.errors import HttpError

HEADER = "x-context-subject"
PROOF_HEADER = "x-gateway-secret"
MALFORMED = "X-Context-Subject must be kind:name with kind user, agent, workload or service"
UNPROVEN = ("X-Context-Subject is accepted only from the gateway: "
            "X-Gateway-Secret is missing or wrong")


def proven(proof: str | None, secret: str) -> bool:
    """The request carries the gateway's secret (compared in constant time)."""
    return proof is not None and hmac.compare_digest(proof.encode(), secret.encode())


def parse_subject(raw: str | None, require: bool, proof: str | None = None,
                  secret: str = "") -> Subject:
    """The subject of the header value ``raw``; with ``secret`` set, a header sent without the
    matching ``proof`` is refused (401) rather than read as anonymous."""
    if secret and raw is not None and not proven(proof, secret):
        raise HttpError(401, "unauthenticated", UNPROVEN)
    value = (raw or "").strip()
    if not value:
        if require:
            raise HttpError(401, "unauthenticated", "X-Context-Subject is required")
        return ANONYMOUS
    kind, sep, name = value.partition(":")
    if not sep or not kind.strip() or not name.strip() or kind not in SUBJECT_KINDS:
        raise RequestInvalidError(MALFORMED)
    return Subject(kind, name)


def request_subject(headers: Mapping[str, str], require: bool, secret: str) -> Subject:
    """The subject of a request's headers under the service's settings (``secret``: the
    gateway's, empty: no proof is asked)."""
    return parse_subject(headers.get(HEADER), require, headers.get(PROOF_HEADER), secret)
