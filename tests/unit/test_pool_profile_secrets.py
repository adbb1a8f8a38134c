"""A sandbox profile holding a literal secret is refused before it is recorded (decision 0060).

The profile's template ``spec`` is copied into ``SandboxPoolRequested``, so a password in an
``env`` value, a token in ``args`` or a key in an annotation went to the event log, NATS, the
history and every export. ``decide`` now refuses it, naming the field and the fix and never the
value; a reference to a Secret is recorded as it is.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from context_service.domain.cluster import BuiltinRuntime, ProfileRuntime
from context_service.domain.errors import PoolReferenceInvalidError
from context_service.domain.pool.commands import RequestPool
from context_service.domain.pool.decide import decide
from context_service.domain.pool.events import SandboxPoolRequested
from context_service.domain.pool.references import resolve
from context_service.domain.pool.secrets import is_literal, key_shape, literal_secret, names_secret
from context_service.domain.pool.state import PoolState
from tests.support.fake_cluster import FakeCluster

NOW = datetime(2026, 1, 1, tzinfo=UTC)
PLANTED = "hunter2-Qx7Lm9"
FIX_ENV = "set it with valueFrom.secretKeyRef or envFrom.secretRef"
FIX_SHAPE = ("keep it in a Secret and reference it (valueFrom.secretKeyRef, envFrom.secretRef "
             "or a secret volume)")
FIX_ARG = ("pass $(NAME) of an env var set with valueFrom.secretKeyRef, or read the secret "
           "from a secret volume")
C0 = "spec.podTemplate.spec.containers[0]"


def _spec(container: dict[str, Any] | None = None, **metadata: Any) -> dict[str, Any]:
    return {"podTemplate": {"metadata": metadata, "spec": {"containers": [
        {"name": "dev", "image": "dev:1", **(container or {})}]}}}


def _request(spec: dict[str, Any]) -> RequestPool:
    return RequestPool(name="p", replicas=1, sandbox_profile="dev", size="1Gi",
                       access_mode="ReadWriteOnce",
                       runtime=ProfileRuntime(profile="dev", template_spec=spec))


def _refusal(spec: dict[str, Any]) -> str:
    with pytest.raises(PoolReferenceInvalidError) as refused:
        decide(_request(spec), PoolState(), NOW)
    return refused.value.message


REFUSED = {
    "env name": (
        _spec({"env": [{"name": "MODE", "value": "dev"}, {"name": "DB_PASSWORD",
                                                          "value": PLANTED}]}),
        f'{C0}.env[1].value (env "DB_PASSWORD" has a literal value); {FIX_ENV}'),
    "env camel case": (
        _spec({"env": [{"name": "githubToken", "value": PLANTED}]}),
        f'{C0}.env[0].value (env "githubToken" has a literal value); {FIX_ENV}'),
    "env glued": (
        _spec({"env": [{"name": "PGPASSWORD", "value": PLANTED}]}),
        f'{C0}.env[0].value (env "PGPASSWORD" has a literal value); {FIX_ENV}'),
    "env of an init container": (
        {"podTemplate": {"spec": {"containers": [{"name": "dev", "image": "dev:1"}],
                                  "initContainers": [{"name": "init", "env": [
                                      {"name": "OPENAI_API_KEY", "value": PLANTED}]}]}}},
        "spec.podTemplate.spec.initContainers[0].env[0].value (env \"OPENAI_API_KEY\" has a "
        f"literal value); {FIX_ENV}"),
    "a number": (
        _spec({"env": [{"name": "PIN_SECRET", "value": 123456}]}),
        f'{C0}.env[0].value (env "PIN_SECRET" has a literal value); {FIX_ENV}'),
    "flag and next item": (
        _spec({"args": ["serve", "--api-token", PLANTED]}),
        f'{C0}.args[2] (argument "--api-token" has a literal value); {FIX_ARG}'),
    "flag with equals": (
        _spec({"args": [f"--password={PLANTED}"]}),
        f'{C0}.args[0] (argument "--password" has a literal value); {FIX_ARG}'),
    "assignment in a shell": (
        _spec({"command": ["/bin/sh", "-c", f"export CLIENT_SECRET={PLANTED}; exec app"]}),
        f'{C0}.command[2] (argument "CLIENT_SECRET" has a literal value); {FIX_ARG}'),
    "flag in a probe's shell": (
        _spec({"livenessProbe": {"exec": {"command": ["sh", "-c",
                                                      f"check --token {PLANTED}"]}}}),
        f'{C0}.livenessProbe.exec.command[2] (argument "--token" has a literal value); '
        f"{FIX_ARG}"),
    "annotation": (
        _spec(annotations={"example.com/owner": "team-a", "example.com/api-key": PLANTED}),
        'spec.podTemplate.metadata.annotations["example.com/api-key"] (annotation '
        '"example.com/api-key" has a literal value); keep secrets in a Secret, never in '
        "annotations"),
    "probe header": (
        _spec({"readinessProbe": {"httpGet": {"path": "/", "port": 80, "httpHeaders": [
            {"name": "X-Api-Key", "value": PLANTED}]}}}),
        f'{C0}.readinessProbe.httpGet.httpHeaders[0].value (header "X-Api-Key" has a literal '
        f"value); {FIX_SHAPE}"),
    "private key": (
        _spec({"env": [{"name": "SIGNER", "value": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl"}]}),
        f"{C0}.env[0].value (looks like a private key); {FIX_SHAPE}"),
    "aws key id": (
        _spec({"args": ["--region", "eu-west-1", "--id", "AKIAIOSFODNN7EXAMPLE"]}),
        f"{C0}.args[3] (looks like an AWS access key id); {FIX_SHAPE}"),
    "jwt": (
        _spec({"env": [{"name": "HEADER", "value": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0"
                                                   "In0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6y"}]}),
        f"{C0}.env[0].value (looks like a JSON web token); {FIX_SHAPE}"),
    "github": (
        _spec({"env": [{"name": "GH", "value": "ghp_" + "A1b2C3d4" * 5}]}),
        f"{C0}.env[0].value (looks like a GitHub token); {FIX_SHAPE}"),
    "fine-grained github": (
        _spec({"env": [{"name": "GH", "value": "github_pat_" + "11ABCDE_" * 8}]}),
        f"{C0}.env[0].value (looks like a GitHub token); {FIX_SHAPE}"),
    "sk key": (
        _spec({"env": [{"name": "LLM", "value": "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv"}]}),
        f"{C0}.env[0].value (looks like an API key); {FIX_SHAPE}"),
    "url with a password": (
        _spec({"env": [{"name": "DATABASE_URL",
                        "value": f"postgresql://app:{PLANTED}@db:5432/app"}]}),
        f"{C0}.env[0].value (looks like a URL with a password); {FIX_SHAPE}"),
    "bearer header": (
        _spec({"readinessProbe": {"httpGet": {"path": "/", "port": 80, "httpHeaders": [
            {"name": "X-Auth", "value": "Bearer abcdef0123456789abcdef"}]}}}),
        f"{C0}.readinessProbe.httpGet.httpHeaders[0].value (looks like a bearer token); "
        f"{FIX_SHAPE}"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_a_literal_secret_is_refused_naming_the_field_and_the_fix(case: str) -> None:
    spec, detail = REFUSED[case]
    message = _refusal(spec)
    assert message == f'invalid sandbox pool: sandbox profile "dev" holds a literal secret at ' \
                      f"{detail}"
    assert PLANTED not in message and "123456" not in message  # the value is never shown


ACCEPTED = {
    "secret reference": _spec({"env": [
        {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "pw"}}}],
        "envFrom": [{"secretRef": {"name": "api"}}]}),
    "names that are no secret": _spec({"env": [
        {"name": "TOKEN_TTL", "value": "3600"}, {"name": "PASSWORD_FILE", "value": "/run/pw"},
        {"name": "SECRET_NAME", "value": "db"}, {"name": "AWS_ACCESS_KEY_ID_FILE", "value": "x"},
        {"name": "PWD", "value": "workspace"}, {"name": "MONKEY", "value": "x"},
        {"name": "GOOGLE_APPLICATION_CREDENTIALS", "value": "/var/secrets/key.json"},
        {"name": "USE_TOKEN", "value": "true"}, {"name": "API_TOKEN", "value": ""}]}),
    "references in arguments": _spec({
        "command": ["/bin/sh", "-c", "exec app --token $(API_TOKEN) --password-file /run/pw"],
        "args": ["--token", "$(API_TOKEN)", "--password-stdin", "--db",
                 "postgresql://app:$(DB_PASSWORD)@db/app", "TOKEN=${TOKEN}"]}),
    "switch annotations": _spec(annotations={
        "vault.hashicorp.com/agent-inject-token": "true",
        "vault.hashicorp.com/agent-inject-secret-db": "database/creds/app"}),
    "ordinary strings": _spec({"image": "registry.example.com/sk-learn-model-server:2024-01",
                               "args": ["--listen", "http://0.0.0.0:8080/path@v1",
                                        "Bearer authentication"]}),
    "a certificate": _spec({"env": [{"name": "CA", "value": "-----BEGIN CERTIFICATE-----"}]}),
}


@pytest.mark.parametrize("case", ACCEPTED)
def test_references_and_ordinary_settings_are_recorded_as_they_are(case: str) -> None:
    spec = ACCEPTED[case]
    [event] = decide(_request(spec), PoolState(), NOW)
    assert isinstance(event, SandboxPoolRequested)
    assert isinstance(event.runtime, ProfileRuntime)
    assert event.runtime.template_spec == spec  # not redacted: the log rebuilds the pool


def test_the_built_in_runtime_and_the_route_before_resolving_are_not_checked() -> None:
    request = RequestPool(name="p", replicas=1, size="1Gi", access_mode="ReadWriteOnce",
                          runtime=BuiltinRuntime(image=f"app:{PLANTED}"))
    assert len(decide(request, PoolState(), NOW)) == 1


def test_a_profile_read_from_the_cluster_is_refused_before_it_is_recorded() -> None:
    """As the route does: the profile is resolved, then the request decided; one of the two
    refuses it (``decide`` at the latest), naming the field."""
    fake = FakeCluster()
    fake.add_template("ns", "dev", _spec({"env": [{"name": "API_KEY", "value": PLANTED}]}))
    request = RequestPool(name="p", replicas=1, sandbox_profile="dev", size="1Gi",
                          access_mode="ReadWriteOnce")
    with pytest.raises(PoolReferenceInvalidError) as refused:
        runtime, _ = resolve(fake, "ns", request, "dedicated", "busybox", "")
        decide(msgspec.structs.replace(request, runtime=runtime), PoolState(), NOW)
    assert refused.value.message == (
        'invalid sandbox pool: sandbox profile "dev" holds a literal secret at '
        f'{C0}.env[0].value (env "API_KEY" has a literal value); {FIX_ENV}')


@pytest.mark.parametrize(("name", "secret"), [
    ("DB_PASSWORD", True), ("db-passwd", True), ("apiKey", True), ("API_KEY_2", True),
    ("AWS_SECRET_ACCESS_KEY", True), ("SECRET_KEY_BASE", True), ("MYSQL_PWD", True),
    ("example.com/clientSecret", True), ("Authorization", True), ("CREDENTIALS", True),
    ("TOKEN_TTL", False), ("PASSWORD_FILE", False), ("SECRET_NAME", False), ("PWD", False),
    ("SORT_KEY", False), ("KEYBOARD", False), ("example.com/token-audience", False), ("", False),
])
def test_names_that_name_a_secret(name: str, secret: bool) -> None:
    assert names_secret(name) is secret


@pytest.mark.parametrize(("value", "literal"), [
    ("hunter2", True), ("'quoted'", True), ("", False), ("  ", False), ("$(TOKEN)", False),
    ("${TOKEN}", False), ("$TOKEN", False), ("/run/secrets/token", False), ("True", False),
])
def test_literal_values(value: str, literal: bool) -> None:
    assert is_literal(value) is literal


def test_shapes_are_found_inside_text() -> None:
    assert key_shape(f"curl -u x https://bot:{PLANTED}@git.example.com/r.git") == \
        "a URL with a password"
    assert key_shape("glpat-" + "x" * 20) == "a GitLab token"
    assert key_shape("xoxb-1234567890-abcdef") == "a Slack token"
    assert key_shape("sk_live_" + "a1" * 12) == "a Stripe key"
    assert key_shape("AIza" + "b" * 35) == "a Google API key"
    assert key_shape("bdk_0123456789abcdef_" + "s" * 20) == "an agent token"
    assert key_shape("sk-" + "a" * 40) is None  # no mixed case and digits: a name
    assert key_shape("https://host:8443/x") is None


def test_a_deep_or_large_template_is_checked_in_linear_time() -> None:
    """A template may be as large as the API server allows; nesting has no bound."""
    deep: list[Any] = []
    inner = deep
    for _ in range(100_000):
        inner.append([])
        inner = inner[0]
    inner.append("AKIAIOSFODNN7EXAMPLE")
    assert literal_secret({"x": deep}) is not None
    started = time.process_time()
    for text in ("a." * 250_000, "://" * 150_000, "--token " * 60_000 + "-x", "-" * 500_000,
                 "Bearer " + "a" * 500_000, "eyJ" + "a" * 500_000):
        assert literal_secret(_spec({"args": [text], "env": [{"name": "A", "value": text}]})) \
            is None
    assert time.process_time() - started < 5
