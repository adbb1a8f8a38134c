"""Literal secrets in a sandbox profile, refused before the profile is recorded (decision 0060).

A profile's SandboxTemplate ``spec`` is copied into ``SandboxPoolRequested``: whatever it holds
reaches the event log, NATS, the history and every export, and the log cannot be rewritten
without changing the pool it rebuilds. So a profile is refused when it holds what is clearly a
literal secret; a secret belongs in a Kubernetes Secret, referenced (``valueFrom.secretKeyRef``,
``envFrom.secretRef``, a secret volume), and the reference is all that is recorded.

What counts, checked in document order, the first finding wins:

- an ``env`` entry whose name names a secret (``DB_PASSWORD``, ``GITHUB_TOKEN``, ``API_KEY``, ...)
  with a literal ``value``;
- an annotation whose key names a secret, with a literal value;
- in a ``command`` or ``args`` list (of a container, a probe or a hook), ``NAME=value``,
  ``--name=value`` or ``--name value`` where ``name`` names a secret and ``value`` is literal;
- anywhere, a string with the shape of a key: a PEM private key, an AWS access key id, a JWT,
  GitHub, GitLab, Slack, Stripe, Google and ``sk-`` API keys, this service's agent tokens, and a
  URL with a password.

A value is not literal when it is empty, a reference (``$(VAR)``, ``${VAR}``, ``$VAR``), an
absolute file path (a mounted secret's file) or a switch (``true``, ``false``, ...). A name names
a secret by its last word (``TOKEN_TTL`` and ``PASSWORD_FILE`` do not); a whole number under a
name ending in ``TOKENS`` is a count of a model's tokens (``MAX_TOKENS``, ``--max-tokens 512``),
and a negated flag (``--no-password``) is a switch that takes no value. Every pattern is linear
in its input: a template can be as large as the API server allows.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from context_service.domain.echoed import LONGEST, cut
from context_service.domain.values import quote

SECRET_WORDS = frozenset({
    "PASSWORD", "PASSWORDS", "PASSWD", "PASSPHRASE", "PASS", "SECRET", "SECRETS", "TOKEN", "TOKENS",
    "CREDENTIAL", "CREDENTIALS", "APIKEY", "PRIVATEKEY", "SECRETKEY", "ACCESSKEY",
    "AUTHORIZATION"})
# a last word ending so names a secret too (PGPASSWORD, GITHUBTOKEN, APIKEY written as one)
SECRET_ENDINGS = ("PASSWORD", "PASSWD", "PASSPHRASE", "SECRET", "TOKEN", "APIKEY", "PRIVATEKEY",
                  "SECRETKEY")
# a last word that is a secret only after another word (PWD alone is the working directory)
SECRET_PAIRS = frozenset({
    ("API", "KEY"), ("PRIVATE", "KEY"), ("SECRET", "KEY"), ("ACCESS", "KEY"),
    ("SIGNING", "KEY"), ("ENCRYPTION", "KEY"), ("MASTER", "KEY"), ("AUTH", "KEY"),
    ("SESSION", "KEY"), ("LICENSE", "KEY"), ("CLIENT", "KEY"), ("SSH", "KEY"), ("DB", "PWD"),
    ("MYSQL", "PWD"), ("USER", "PWD"), ("ADMIN", "PWD"), ("KEY", "BASE")})
SWITCHES = frozenset({"true", "false", "yes", "no", "on", "off", "enabled", "disabled",
                      "0", "1"})
LONGEST_SHOWN = 64  # a name quoted in a message beyond this is cut

# camel case words too (apiKey, APIKey); an upper-case run gives back at most one letter
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]++|[0-9]++")
# shell words: a command's string is split at blanks and operators (``$(VAR)`` stays whole)
_SHELL_SPLIT = re.compile(r"[\s;&|<>`]++")
# A JSON web token's part is a base64url run, and "eyJ" can start anywhere in one after a "-"
# ("eyJ-eyJ-eyJ-..."): tried at each, the run was read to its end each time, quadratic in the
# string. Every start in a run reaches the same end, so only the run's first start is tried:
# an attempt begins where a run begins and commits (atomic group) to its first "eyJ".
_JWT_PART = "[A-Za-z0-9_-]"
_JWT = re.compile(rf"(?<!{_JWT_PART})(?>{_JWT_PART}*?\beyJ){_JWT_PART}{{8,}}+"
                  rf"\.eyJ{_JWT_PART}{{8,}}+\.{_JWT_PART}{{8,}}+")
# (shape, what it looks like); every pattern starts with a fixed text and its runs are
# possessive or bounded, and no two attempts read the same run, so a search costs time linear
# in the string
_SHAPES = (
    (re.compile(r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"), "a private key"),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Za-z])"), "an AWS access key id"),
    (_JWT, "a JSON web token"),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}+"), "a GitHub token"),
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{40,}+"), "a GitHub token"),
    (re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}+"), "a GitLab token"),
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}+"), "a Slack token"),
    (re.compile(r"\b[rs]k_live_[A-Za-z0-9]{16,}+"), "a Stripe key"),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), "a Google API key"),
    (re.compile(r"\bbdk_[0-9a-f]{16}_[A-Za-z0-9_-]{8,}+"), "an agent token"),
    (re.compile(r"://[^/\s:@]*+:(?!\$)[^/\s@]++@"), "a URL with a password"),
    # a literal bearer credential (a probe's Authorization header, a curl in a command);
    # "Bearer $(TOKEN)" is a reference
    (re.compile(r"\b[Bb]earer\s++(?=[A-Za-z0-9._~+/-]*?[0-9])[A-Za-z0-9._~+/-]{16,}+"),
     "a bearer token"),
)
# ``sk-`` keys (OpenAI, Anthropic): a long run of mixed case and digits, which no Kubernetes
# name (lowercase) has
_SK = re.compile(r"\bsk-[A-Za-z0-9_-]{20,}+")
_FIX_ENV = "set it with valueFrom.secretKeyRef or envFrom.secretRef"
_FIX_ARG = ("pass $(NAME) of an env var set with valueFrom.secretKeyRef, or read the secret "
            "from a secret volume")
_FIX_NOTE = "keep secrets in a Secret, never in annotations"
_FIX_SHAPE = ("keep it in a Secret and reference it (valueFrom.secretKeyRef, envFrom.secretRef "
              "or a secret volume)")

Node = tuple["Node | None", str]  # (parent, path segment): a path is built only when reported


def literal_secret(spec: dict[str, Any]) -> str | None:
    """Why the copied template ``spec`` holds a literal secret, as a message detail
    (``holds a literal secret at <path> (<what>); <fix>``), or None. Never shows the value."""
    for node, key, value in _walk(spec):
        found = _finding(key, value)
        if found is not None:
            where, what, fix = found
            path = cut(_path(node) + where, LONGEST)  # a template nests without bound (0059)
            return f"holds a literal secret at {path} ({what}); {fix}"
    return None


def names_secret(name: str) -> bool:
    """Whether a variable, flag or annotation name names a secret, by its last word
    (``DB_PASSWORD``, ``githubToken``, ``--api-key``, ``example.com/client-secret``)."""
    words = [w.upper() for w in _WORDS.findall(name.rpartition("/")[2])]
    while words and words[-1].isdigit():
        words.pop()
    if not words:
        return False
    if words[-1] in SECRET_WORDS or words[-1].endswith(SECRET_ENDINGS):
        return True
    return len(words) > 1 and (words[-2], words[-1]) in SECRET_PAIRS


def is_count(name: str, value: str) -> bool:
    """A whole number named by its last word ``TOKENS``: how many tokens a model reads or
    writes (``MAX_TOKENS``, ``MAX_NEW_TOKENS``, ``--max-tokens``), which an agent's sandbox is
    configured with, not a list of tokens."""
    words = _WORDS.findall(name.rpartition("/")[2])
    return bool(words) and words[-1].upper() == "TOKENS" and value.strip().isdigit()


def _literal_secret(name: str, value: str) -> bool:
    return names_secret(name) and is_literal(value) and not is_count(name, value)


def is_literal(value: str) -> bool:
    """A value written out, not a reference to one kept elsewhere."""
    value = value.strip().strip("'\"")
    return bool(value) and not value.startswith(("$", "/")) and value.lower() not in SWITCHES


def key_shape(text: str) -> str | None:
    """What ``text`` looks like when it holds a key or a credential, else None."""
    for pattern, what in _SHAPES:
        if pattern.search(text):
            return what
    for found in _SK.finditer(text):
        run = found.group()[3:]
        if (any(c.isupper() for c in run) and any(c.islower() for c in run)
                and any(c.isdigit() for c in run)):
            return "an API key"
    return None


def _walk(spec: dict[str, Any]) -> Iterator[tuple[Node, str, Any]]:
    """(node, name of the field holding it, value) for every value, in document order; with a
    stack: nesting has no bound."""
    stack: list[tuple[Node, str, Any]] = [((None, "spec"), "spec", spec)]
    while stack:
        node, key, value = stack.pop()
        yield node, key, value
        if isinstance(value, dict):
            stack += reversed([((node, _member(k)), k, v) for k, v in value.items()
                               if isinstance(k, str)])
        elif isinstance(value, list):
            stack += reversed([((node, f"[{i}]"), key, v) for i, v in enumerate(value)])


def _finding(key: str, value: Any) -> tuple[str, str, str] | None:
    """(path below the value, what, fix) when this one value is a literal secret."""
    if isinstance(value, str):
        what = key_shape(value)
        return ("", f"looks like {what}", _FIX_SHAPE) if what is not None else None
    if key in ("env", "httpHeaders") and isinstance(value, dict):
        name, literal = value.get("name"), value.get("value")
        if isinstance(literal, int | float) and not isinstance(literal, bool):
            literal = str(literal)
        if isinstance(name, str) and isinstance(literal, str) and _literal_secret(name, literal):
            if key == "env":
                return ".value", f"env {_shown(name)} has a literal value", _FIX_ENV
            return ".value", f"header {_shown(name)} has a literal value", _FIX_SHAPE
        return None
    if key == "annotations" and isinstance(value, dict):
        for name, note in value.items():
            if isinstance(name, str) and isinstance(note, str) and _literal_secret(name, note):
                return (_member(name), f"annotation {_shown(name)} has a literal value",
                        _FIX_NOTE)
        return None
    if key in ("command", "args") and isinstance(value, list):
        return _argument(value)
    return None


def _argument(items: list[Any]) -> tuple[str, str, str] | None:
    """``NAME=value``, ``--name=value`` or ``--name value`` with a literal value, in a command
    list; a flag's value may be the list's next item or the next word of the same item."""
    words = [(i, w) for i, item in enumerate(items) if isinstance(item, str)
             for w in _SHELL_SPLIT.split(item) if w]
    for at, (i, word) in enumerate(words):
        name, sign, value = word.partition("=")
        if sign:
            if _literal_secret(name.lstrip("-"), value):
                return f"[{i}]", f"argument {_shown(name)} has a literal value", _FIX_ARG
        elif word.startswith("-") and not _negated(word) and names_secret(word.lstrip("-")) \
                and at + 1 < len(words):
            following = words[at + 1][1]
            if not following.startswith("-") and _literal_secret(word.lstrip("-"), following):
                return (f"[{words[at + 1][0]}]", f"argument {_shown(word)} has a literal value",
                        _FIX_ARG)
    return None


def _negated(flag: str) -> bool:
    """``--no-password``, ``--no_token``: a switch that turns a thing off takes no value (the
    next word is the command's next argument)."""
    return flag.lstrip("-").lower().startswith(("no-", "no_"))


def _member(key: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return f".{key}"
    return f"[{_shown(key)}]"


def _shown(name: str) -> str:
    return quote(name if len(name) <= LONGEST_SHOWN else name[:LONGEST_SHOWN] + "...")


def _path(node: Node | None) -> str:
    parts: list[str] = []
    while node is not None:
        node, segment = node
        parts.append(segment)
    return "".join(reversed(parts))
