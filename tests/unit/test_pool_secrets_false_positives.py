"""Literal secrets in a sandbox profile (decision 0060) at the edges of what names a secret.

An agent's sandbox is configured with counts of model tokens (``MAX_TOKENS``, ``--max-tokens
512``): a count is no secret, and refusing it refuses an ordinary profile. ``--no-password``
(pg_dump, psql) is a switch: the word after it is the command's next argument, not a value.
And ``_PASS`` is as common an ending of a password's name as ``_PASSWORD`` (``DB_PASS``,
the RabbitMQ image's ``RABBITMQ_DEFAULT_PASS``): such a password, written out, is refused.
"""

from __future__ import annotations

from typing import Any

import pytest

from context_service.domain.pool.secrets import literal_secret, names_secret

PLANTED = "hunter2-Qx7Lm9"


def _spec(**container: Any) -> dict[str, Any]:
    return {"podTemplate": {"spec": {"containers": [
        {"name": "agent", "image": "agent:1", **container}]}}}


@pytest.mark.parametrize("env", [
    [{"name": "MAX_TOKENS", "value": "4096"}],
    [{"name": "MAX_NEW_TOKENS", "value": 512}],
    [{"name": "NUM_TOKENS", "value": "2048"}],
    [{"name": "CONTEXT_TOKENS", "value": "128000"}],
])
def test_a_count_of_tokens_in_env_is_no_secret(env: list[dict[str, Any]]) -> None:
    assert literal_secret(_spec(env=env)) is None


@pytest.mark.parametrize("args", [
    ["--max-tokens", "512"],
    ["--max-tokens=512"],
    ["sh", "-c", "llm --max-new-tokens 256 --model small"],
])
def test_a_count_of_tokens_in_args_is_no_secret(args: list[str]) -> None:
    assert literal_secret(_spec(args=args)) is None


@pytest.mark.parametrize("command", [
    ["pg_dump", "--no-password", "appdb"],
    ["sh", "-c", "psql --no-password appdb < /work/seed.sql"],
])
def test_a_negated_switch_takes_no_value(command: list[str]) -> None:
    assert literal_secret(_spec(command=command)) is None


@pytest.mark.parametrize("name", ["DB_PASS", "RABBITMQ_DEFAULT_PASS", "smtpPass"])
def test_a_password_named_pass_is_refused_without_its_value_shown(name: str) -> None:
    assert names_secret(name)
    found = literal_secret(_spec(env=[{"name": name, "value": PLANTED}]))
    assert found is not None and "env[0].value" in found
    assert PLANTED not in found


@pytest.mark.parametrize("name", ["BYPASS", "COMPASS", "FIRST_PASS_MODE", "PASSTHROUGH"])
def test_words_that_only_contain_pass_name_no_secret(name: str) -> None:
    assert not names_secret(name)


def test_the_secrets_these_rules_keep_are_still_refused() -> None:
    for env in ({"name": "GITHUB_TOKEN", "value": PLANTED},
                {"name": "API_TOKENS", "value": PLANTED},
                {"name": "DB_PASSWORD", "value": PLANTED}):
        found = literal_secret(_spec(env=[env]))
        assert found is not None and PLANTED not in found, env
    found = literal_secret(_spec(args=["--password", PLANTED]))
    assert found is not None and "args[1]" in found and PLANTED not in found
