"""URLs as logs and messages show them: whatever credentials they carry left out."""

from __future__ import annotations


def redacted(url: str) -> str:
    """``url`` with the user, password or token of its authority shown as ``***``
    (``nats://***@host:4222``, ``https://***@gateway.example/api``); a comma-separated list of
    URLs is redacted one by one, and a URL without a scheme is read as an authority first."""

    def one(text: str) -> str:
        scheme, sep, rest = text.partition("://")
        if not sep:
            scheme, rest = "", text
        authority, slash, path = rest.partition("/")
        _, at, host = authority.rpartition("@")
        return f"{scheme}{sep}{'***@' + host if at else authority}{slash}{path}"

    return ",".join(one(text) for text in url.split(","))
