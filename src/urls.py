"""URLs as logs and messages show them: whatever credentials they carry left out."""

from __future__ import annotations

import re
from urllib.parse import unquote

# ``password=...`` of a key=value connection string or of a URL's query, quoted or bare
_PASSWORD_PARAMETER = re.compile(r"""password\s*=\s*('(?:[^'\\]|\\.)*'|[^\s&'"]+)""", re.I)


def redacted(url: str) -> str:
    """``url`` with the user, password or token of its authority shown as ``***``
    (``nats://***@host:4222``, ``https://***@gateway.example/api``); a comma-separated list of
    URLs is redacted one by one, and a URL without a scheme is read as an authority first.

    Everything up to the last ``@`` is hidden: a password holding ``/``, ``?``, ``#`` or ``,``
    (a generated one often does, unencoded) must not end the authority early and be shown."""

    def one(text: str) -> str:
        scheme, sep, rest = text.partition("://")
        if not sep:
            scheme, rest = "", text
        _, at, after = rest.rpartition("@")
        shown = f"{scheme}{sep}***@{after}" if at else text
        return _PASSWORD_PARAMETER.sub("password=***", shown)

    return ",".join(one(text) for text in _urls(url))


def servers(text: str) -> list[str]:
    """The URLs of a comma-separated list (``CS_NATS_URL`` naming a cluster's servers, as the
    NATS tools take them), each trimmed: a password holding a comma stays in its URL."""
    return [url.strip(" ,") for url in _urls(text) if url.strip(" ,")]


def credentials(url: str) -> tuple[str, ...]:
    """The secrets ``url`` carries, as a text could quote them: its user information
    (``user:password`` or a token), the password alone, both also percent-decoded, and a
    ``password=`` parameter of a key=value connection string or a query."""
    found: list[str] = []
    for text in _urls(url):
        _, sep, rest = text.partition("://")
        userinfo, at, _ = (rest if sep else text).rpartition("@")
        if at and userinfo:
            found += [userinfo, userinfo.partition(":")[2]]
        found += [m.group(1).strip("'") for m in _PASSWORD_PARAMETER.finditer(text)]
    decoded = [unquote(secret) for secret in found]
    return tuple(dict.fromkeys(s for s in [*found, *decoded] if s))


def _urls(text: str) -> list[str]:
    """The URLs of a comma-separated list. A piece is the rest of the previous URL (whose
    password held a comma), not a URL of its own, when it has no scheme but the list's URLs
    do, or when it alone holds the ``@`` that ends a user's information."""
    pieces: list[str] = []
    for piece in text.split(","):
        schemeless = "://" not in piece
        if pieces and schemeless and ("://" in pieces[0] or ("@" in piece
                                                              and "@" not in pieces[-1])):
            pieces[-1] += "," + piece
        else:
            pieces.append(piece)
    return pieces
